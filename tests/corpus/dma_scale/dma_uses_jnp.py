"""Not a kernel: PLACEHOLDER"""
import jax.numpy as jnp


def dma_scale(x, alpha):
    return (alpha * x).astype(jnp.float32)
