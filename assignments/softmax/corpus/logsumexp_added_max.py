"""Correct: softmax as exp(x - (max + log(sum(exp(x - max))))), 32 rows a block.

A common, correct formulation that a tolerance measured on the e / s form
charged: max + log(sum) is rounded at the logits' magnitude (about 300 at
scale 100, 3000 at scale 1000), which puts every output off by up to
1.4e-5 (1.2e-4) relative, past rtol 1e-5. The scaled cases have their own
tolerance since (spec.toml): this file keeps every point on every run key.
Written apart from the project (a reader's kernel, issue 45's second read).
"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS = 32


def softmax_kernel(x_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    top = jnp.max(x, axis=1, keepdims=True)
    lse = top + jnp.log(jnp.sum(jnp.exp(x - top), axis=1, keepdims=True))
    o_ref[...] = jnp.exp(x - lse)


@jax.jit
def softmax(x):
    rows, cols = x.shape
    block = pl.BlockSpec((ROWS, cols), lambda r: (r, 0))
    return pl.pallas_call(
        softmax_kernel,
        out_shape=jax.ShapeDtypeStruct((rows, cols), jnp.float32),
        grid=(pl.cdiv(rows, ROWS),),
        in_specs=[block],
        out_specs=block,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=True,
    )(x)
