"""Bug: subtracts the max of the whole block. PLACEHOLDER"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def kernel(x_ref, o_ref):
    x = x_ref[...]
    e = jnp.exp(x - jnp.max(x))
    o_ref[...] = e / jnp.sum(e, axis=-1, keepdims=True)


def softmax(x):
    m, n = x.shape
    spec = pl.BlockSpec((8, n), lambda i: (i, 0))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
                          grid=(pl.cdiv(m, 8),), in_specs=[spec], out_specs=spec,
                          interpret=True)(x)
