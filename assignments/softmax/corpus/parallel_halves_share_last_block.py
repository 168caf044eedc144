"""Correct (clean): the row blocks are split into two halves along a "parallel"
grid axis (one per TensorCore on a two-core chip), each half walking its blocks
along an "arbitrary" axis; the last half's index is clamped to the last block.
When there is only one row block (M <= 16: a secret case), both halves compute
that block and write the same values to it. The index-map scan sees one output
block written from both sides of a parallel axis, but no rung shows a
difference (the values written are the same) and the chip computes it right: a
static finding that no rung can confirm is a note, not a charge."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BM = 16


def kernel(x_ref, o_ref):
    x = x_ref[...]
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    o_ref[...] = e / jnp.sum(e, axis=-1, keepdims=True)


def softmax(x):
    m, n = x.shape
    blocks = pl.cdiv(m, BM)
    half = pl.cdiv(blocks, 2)
    spec = pl.BlockSpec((BM, n), lambda h, i: (jnp.minimum(h * half + i, blocks - 1), 0))
    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(2, half), in_specs=[spec], out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
        interpret=True)(x)
