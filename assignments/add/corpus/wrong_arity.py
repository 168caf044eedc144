"""Bug: add takes three required arguments."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def add(x, y, z):
    return x + y + z
