"""Bug (wrong-result): a column mask written col < N - 1 (off by one) sets the
last column to -inf, so it gets probability 0 on every rung. The -jnp.inf is a
typed literal in jax 0.12 (a float subclass): the grader must carry it from the
tracer to the grader's child like any float."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BM = 8


def softmax_kernel(x_ref, o_ref):
    x = x_ref[...]
    col = jax.lax.broadcasted_iota(jnp.int32, x.shape, 1)
    x = jnp.where(col < x.shape[1] - 1, x, -jnp.inf)
    m = jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(x - m)
    s = jnp.sum(e, axis=-1, keepdims=True)
    o_ref[...] = (e / s).astype(o_ref.dtype)


@jax.jit
def softmax(x):
    m, n = x.shape
    spec = pl.BlockSpec((BM, n), lambda i: (i, 0))
    return pl.pallas_call(
        softmax_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(pl.cdiv(m, BM),),
        in_specs=[spec],
        out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=True,  # on a CPU; the grader picks the interpreter itself
    )(x)
