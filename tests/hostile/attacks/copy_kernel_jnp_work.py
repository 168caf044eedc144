"""The answer computed in jax.numpy, a kernel that only copies it through: the
probes pass on the copy kernel, but they examined a copy, so while the work is
done outside the kernel they earn nothing (and say why)."""
import jax
from jax.experimental import pallas as pl


def _copy(s_ref, o_ref):
    o_ref[...] = s_ref[...]


def add(x, y):
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(x.shape[0] // 8, x.shape[1] // 128), in_specs=[spec], out_specs=spec)(x + y)
