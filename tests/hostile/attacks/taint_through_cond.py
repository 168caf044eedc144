"""Work outside the kernel hidden in a lax.cond branch: the branch computes
x + y on the inputs it closes over (the predicate is always true), and the
kernel only copies the result."""
import jax
from jax.experimental import pallas as pl


def _copy(s_ref, o_ref):
    o_ref[...] = s_ref[...]


def add(x, y):
    s = jax.lax.cond(x.shape[0] > 0, lambda: x + y, lambda: x)
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(x.shape[0] // 8, x.shape[1] // 128), in_specs=[spec], out_specs=spec)(s)
