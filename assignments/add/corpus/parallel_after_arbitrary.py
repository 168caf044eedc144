"""Bug (submission-error on TPU interpret mode): the dimension semantics mark a
later grid axis "parallel" after an "arbitrary" one. TPU interpret mode refuses
that ("Dimensions with parallel semantics must form a prefix of the grid"), so
its tests and the checks that run there fail; the generic interpreter ignores
dimension semantics and passes. The problem list charges all of it to that one
error. (The scratch zeroed at the first grid point only is a second bug the
refusal hides.)"""
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
                              dimension_semantics=("arbitrary", "parallel", "arbitrary")),
                          interpret=True)(x, y)
