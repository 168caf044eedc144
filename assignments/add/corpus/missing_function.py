"""Bug: the function is called add_arrays, not add."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def add_arrays(x, y):
    return x + y
