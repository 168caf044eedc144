"""lax.platform_dependent: on a CPU (where the interpreters run) the honest
kernel; on a TPU (what the compile check lowers) a kernel computing x - y.
Every rung must judge the branch a TPU would run: the TPU one, here wrong."""
import jax
from jax.experimental import pallas as pl


def _add(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def _sub(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] - y_ref[...]


def _call(body, x, y):
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(x.shape[0] // 8, x.shape[1] // 128), in_specs=[spec, spec], out_specs=spec)(x, y)


def add(x, y):
    return jax.lax.platform_dependent(x, y, cpu=lambda a, b: _call(_add, a, b),
                                      tpu=lambda a, b: _call(_sub, a, b))
