"""Bug (issue 45's ninth read, written apart from the project): a fori_loop over
8-row slices stores at ``pl.ds(i, SUB)``, not ``pl.ds(i * SUB, SUB)``, so the slices
overlap and most rows are never stored. The kernel has no scratch, so the fix is not
an accumulator's reset: its stores and reads miss their rows (``stores-miss``), at the
one store."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BM = 32      # rows per block
SUB = 8      # rows handled per loop step inside the block


def softmax_kernel(x_ref, o_ref):
    def body(i, carry):
        x = x_ref[pl.ds(i * SUB, SUB), :]
        m = jnp.max(x, axis=-1, keepdims=True)
        e = jnp.exp(x - m)
        s = jnp.sum(e, axis=-1, keepdims=True)
        o_ref[pl.ds(i, SUB), :] = e / s
        return carry

    jax.lax.fori_loop(0, BM // SUB, body, 0)


def softmax(x):
    M, N = x.shape
    return pl.pallas_call(
        softmax_kernel,
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
        grid=(pl.cdiv(M, BM),),
        in_specs=[pl.BlockSpec((BM, N), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((BM, N), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=True,
    )(x)
