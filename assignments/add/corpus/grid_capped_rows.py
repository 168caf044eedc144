"""Bug: the grid's row count is capped at 32 blocks (a limit copied from a smaller
problem), so on an array of more than 256 rows the last rows of output blocks are
never written. Only the tall secret case has that many rows."""
import jax
from jax.experimental import pallas as pl


def kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x, y):
    m, n = x.shape
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(min(m // 8, 32), n // 128), in_specs=[spec, spec], out_specs=spec,
                          interpret=True)(x, y)
