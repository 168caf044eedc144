"""Correct: the instructor solution with input_output_aliases={0: 0} (the output
overwrites x in place). With partial row blocks TPU interpret mode cannot run an
aliased call (it hands back the padded input); the grader drops the alias on that
rung only, and the kernel, which writes its whole output, keeps full marks."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BM = 8


def kernel(x_ref, o_ref):
    x = x_ref[...]
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    o_ref[...] = e / jnp.sum(e, axis=-1, keepdims=True)


@jax.jit
def softmax(x):
    m, n = x.shape
    spec = pl.BlockSpec((BM, n), lambda i: (i, 0))
    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(pl.cdiv(m, BM),), in_specs=[spec], out_specs=spec,
        input_output_aliases={0: 0},
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=True)(x)
