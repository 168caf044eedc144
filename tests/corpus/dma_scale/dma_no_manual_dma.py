"""Technique violation: PLACEHOLDER"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def dma_scale(x, alpha):
    m, n = x.shape

    def kernel(x_ref, o_ref):
        o_ref[...] = alpha * x_ref[...]

    spec = pl.BlockSpec((64, n), lambda i: (i, 0))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
                          grid=(m // 64,), in_specs=[spec], out_specs=spec, interpret=True)(x)
