"""Bug: imports a module that does not exist."""
import jax
import pallas_helpers_that_do_not_exist  # noqa: F401


def add(x, y):
    return x + y
