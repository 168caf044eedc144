"""lax.platform_dependent inside an index map: on a CPU (the interpreters and the
static scan of the index maps) block (i, j); for Mosaic, on a TPU, block
(i, j + 1), one past the last column block at j = the last. The grader grades
the map a TPU compiles on every rung and in every static analysis."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _k(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def _shifted(i, j):
    return jax.lax.platform_dependent(i, j, cpu=lambda a, b: (a, b), default=lambda a, b: (a, b + 1))


def add(x, y):
    spec = pl.BlockSpec((8, 128), _shifted)
    out = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(_k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(x.shape[0] // 8, x.shape[1] // 128), in_specs=[spec, spec],
                          out_specs=out)(x.astype(jnp.float32), y)
