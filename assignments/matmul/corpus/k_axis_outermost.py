"""Bug: the K reduction axis is the outermost grid axis, so every output block
is revisited at grid points that are not consecutive. The generic interpreter
keeps the whole output in memory and gets the right answer; TPU interpret mode
raises 'Revisited block' (on a chip, partial sums would be written back and
lost)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def kernel(x_ref, y_ref, o_ref):
    @pl.when(pl.program_id(0) == 0)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)

    o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)


def matmul(x, y):
    m, k = x.shape
    n = y.shape[1]
    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(k // 128, m // 128, n // 128),
        in_specs=[pl.BlockSpec((128, 128), lambda kk, i, j: (i, kk)),
                  pl.BlockSpec((128, 128), lambda kk, i, j: (kk, j))],
        out_specs=pl.BlockSpec((128, 128), lambda kk, i, j: (i, j)), interpret=True)(x, y)
