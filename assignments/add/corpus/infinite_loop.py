"""Bug: the function never returns."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def add(x, y):
    while True:
        pass
