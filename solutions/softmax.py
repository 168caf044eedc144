"""Instructor solution for `softmax`: blocks of (8, N) rows (the full row width
in every block), a 1-D "parallel" grid of cdiv(M, 8) blocks, and a numerically
stable row softmax (subtract the row max before exp). Every reduction is over
axis -1, so each row depends only on itself: the padding rows of the partial
last block (whatever they hold) never reach a valid row, and their results are
dropped when the block is written back."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BM = 8


def _softmax_kernel(x_ref, o_ref):
    x = x_ref[...]
    m = jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(x - m)
    s = jnp.sum(e, axis=-1, keepdims=True)
    o_ref[...] = (e / s).astype(o_ref.dtype)


@jax.jit
def softmax(x):
    m, n = x.shape
    spec = pl.BlockSpec((BM, n), lambda i: (i, 0))
    return pl.pallas_call(
        _softmax_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(pl.cdiv(m, BM),),
        in_specs=[spec],
        out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x)
