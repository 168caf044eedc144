"""Correct (clean): the dimension semantics mark a grid axis "parallel" after an
"arbitrary" one. The TPU compiler accepts that, and a TPU v5e runs it right
(measured, libtpu 0.0.42.1); TPU interpret mode refuses it ("Dimensions with
parallel semantics must form a prefix of the grid"). What only an interpreter
refuses costs nothing: the grader runs that rung with the later axes as
"arbitrary" (in order, as a one-core TPU runs the grid), and the feedback says
so. (Before, this kernel also kept a scratch zeroed at the first grid point
only, a bug latent on one core; it is gone: this file is the clean case.)"""
import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x, y):
    m, n = x.shape
    spec = pl.BlockSpec((8, 128), lambda k, i, j: (i, j))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(1, m // 8, n // 128), in_specs=[spec, spec], out_specs=spec,
                          compiler_params=pltpu.CompilerParams(
                              dimension_semantics=("arbitrary", "parallel", "arbitrary")),
                          interpret=True)(x, y)
