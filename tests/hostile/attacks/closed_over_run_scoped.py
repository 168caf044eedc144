"""A top-level pl.run_scoped body computes x + y on the values it closes over
(no operand carries them in), and the kernel only copies the result."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _copy(s_ref, o_ref):
    o_ref[...] = s_ref[...]


def add(x, y):
    m, n = x.shape

    def scoped(ref):
        ref[...] = x + y
        return ref[...]
    s = pl.run_scoped(scoped, pltpu.VMEM((m, n), x.dtype))
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(m // 8, n // 128),
                          in_specs=[spec], out_specs=spec)(s)
