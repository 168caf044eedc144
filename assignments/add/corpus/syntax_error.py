"""Bug: a syntax error on line 6."""
import jax
from jax.experimental import pallas as pl


def add(x, y)
    return x + y
