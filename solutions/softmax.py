# BEGIN SOLUTION
"""Instructor solution for `softmax`: blocks of (8, N) rows (the full row width
in every block), a 1-D "parallel" grid of cdiv(M, 8) blocks, and a numerically
stable row softmax (subtract the row max before exp). Every reduction is over
axis -1, so each row depends only on itself: the padding rows of the partial
last block (whatever they hold) never reach a valid row, and their results are
dropped when the block is written back."""
# STUB: """Starter for the `softmax` assignment.
# STUB:
# STUB: Write `softmax(x)`: x is float32 (M, N) with N a multiple of 128
# STUB: (128 <= N <= 2048) and M any positive integer. Return the float32 (M, N)
# STUB: softmax over the last axis, computed by a `pallas_call` over blocks of whole
# STUB: rows. M need not be a multiple of your row block, so the last block may be
# STUB: partial: its padding rows hold garbage, and no valid row may depend on them.
# STUB: Keep `interpret=True` while you work on a CPU; the grader runs your kernel on
# STUB: every interpreter itself, whatever you pass.
# STUB: """
# END SOLUTION
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

# BEGIN SOLUTION
BM = 8
# END SOLUTION


def softmax_kernel(x_ref, o_ref):
    # BEGIN SOLUTION
    x = x_ref[...]
    m = jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(x - m)
    s = jnp.sum(e, axis=-1, keepdims=True)
    o_ref[...] = (e / s).astype(o_ref.dtype)
    # STUB: # TODO: a numerically stable softmax of each row of the block: subtract the
    # STUB: # row's max before exp, divide by the row's sum. Reduce over axis -1 only.
    # STUB: raise NotImplementedError
    # END SOLUTION


# BEGIN SOLUTION
@jax.jit
# END SOLUTION
def softmax(x):
    # BEGIN SOLUTION
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
    # STUB: # TODO: a grid over pl.cdiv(M, bm) blocks of (bm, N) rows, BlockSpecs,
    # STUB: # dimension_semantics.
    # STUB: raise NotImplementedError
    # END SOLUTION
