"""lax.platform_dependent inside the kernel body: the CPU's branch adds (what the
interpreters ran), the default, which Mosaic compiles for a TPU, subtracts. The
grader rebuilds the one program a TPU compiles (in a kernel, Mosaic's branch)
and grades it on every rung: x - y, wrong everywhere."""
import jax
from jax.experimental import pallas as pl


def _k(x_ref, y_ref, o_ref):
    o_ref[...] = jax.lax.platform_dependent(x_ref[...], y_ref[...], cpu=lambda a, b: a + b,
                                            default=lambda a, b: a - b)


def add(x, y):
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(_k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(x.shape[0] // 8, x.shape[1] // 128), in_specs=[spec, spec], out_specs=spec)(x, y)
