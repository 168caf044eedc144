"""Bug: the kernel adds into its output block (o_ref[...] += ...) without
setting it first, so every output is the memory's earlier value plus x + y.

On the generic interpreter that value is NaN; the fill reruns show it moves
with the fill. A large fill absorbs the addition (1e12 + 3.0 is 1e12 in
float32) and looks "never stored"; the fills small enough to move show a value
computed from the fill, so the fix is to set the output first, not to widen a
store. Written apart from the project (issue 45's second read).
"""
import jax
from jax.experimental import pallas as pl

BLOCK = (8, 128)


def add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] += x_ref[...]
    o_ref[...] += y_ref[...]


@jax.jit
def add(x, y):
    m, n = x.shape
    spec = pl.BlockSpec(BLOCK, lambda i, j: (i, j))
    return pl.pallas_call(
        add_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(m, BLOCK[0]), pl.cdiv(n, BLOCK[1])),
        in_specs=[spec, spec],
        out_specs=spec,
        interpret=True,
    )(x, y)
