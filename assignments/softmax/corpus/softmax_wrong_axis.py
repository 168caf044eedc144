"""Bug: normalizes over axis 0 (down the 8 rows of each block) instead of axis
-1. Measured (jax 0.10.2): wrong outputs on every case and every rung (max
error 0.8-1.0). In a partial last block the axis-0 reductions also take in the
padding rows: NaN padding (generic interpreter, TPU interpret mode with
uninitialized_memory='nan') turns the whole last block NaN; with 'zero'
padding there is no NaN, just wrong values. The grader judges the finite
outputs (off by up to ~100% of the output's magnitude), so every case is
wrong-result, like wide-64x1024, the one case without a partial block."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def kernel(x_ref, o_ref):
    x = x_ref[...]
    e = jnp.exp(x - jnp.max(x, axis=0, keepdims=True))
    o_ref[...] = e / jnp.sum(e, axis=0, keepdims=True)


def softmax(x):
    m, n = x.shape
    spec = pl.BlockSpec((8, n), lambda i: (i, 0))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
                          grid=(pl.cdiv(m, 8),), in_specs=[spec], out_specs=spec,
                          interpret=True)(x)
