"""Correct: a 2-D grid whose block rows are swizzled, ((i + j) % rows, j): every
output block is still written exactly once, in another order than row-major."""
import jax
from jax.experimental import pallas as pl


def kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x, y):
    m, n = x.shape
    rows = m // 8
    spec = pl.BlockSpec((8, 128), lambda i, j: ((i + j) % rows, j))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(rows, n // 128), in_specs=[spec, spec], out_specs=spec,
                          interpret=True)(x, y)
