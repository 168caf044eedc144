"""Correct: a 1-D grid over every (8, 128) block, mapped back to 2-D blocks with
`//` and `%` in the index map (a flattened grid). The TPU lowering takes the
integer division; nothing here is a compiler rule to break."""
import jax
from jax.experimental import pallas as pl


def kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x, y):
    m, n = x.shape
    cols = n // 128
    spec = pl.BlockSpec((8, 128), lambda g: (g // cols, g % cols))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=((m // 8) * cols,), in_specs=[spec, spec], out_specs=spec,
                          interpret=True)(x, y)
