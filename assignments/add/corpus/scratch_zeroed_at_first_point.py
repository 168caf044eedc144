"""Bug (uninitialized-memory): a scratch "bias", meant to be zero, is zeroed only
at the very first grid point (every program id 0). In row-major order on one core
every later step sees it zeroed, so the generic interpreter passes; TPU interpret
mode runs the parallel axes in another order, and the grid points that run before
the first one read the scratch unwritten. The order check sees the same unwritten
read: one bug, charged once."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def kernel(x_ref, y_ref, o_ref, bias):
    first = (pl.program_id(0) == 0) & (pl.program_id(1) == 0) & (pl.program_id(2) == 0)

    @pl.when(first)
    def _():
        bias[...] = jnp.zeros_like(bias)

    o_ref[...] = x_ref[...] + y_ref[...] + bias[...]


def add(x, y):
    m, n = x.shape
    spec = pl.BlockSpec((8, 128), lambda k, i, j: (i, j))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(1, m // 8, n // 128), in_specs=[spec, spec], out_specs=spec,
                          scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32)],
                          compiler_params=pltpu.CompilerParams(
                              dimension_semantics=("parallel", "parallel", "arbitrary")),
                          interpret=True)(x, y)
