"""Bug (written apart from the project, issue 45's second read): blocks of 8 x 128
for rows of 256, one grid axis over rows: the second half of every row is never
written (uninitialized-memory), and the first half is normalised over 128 lanes
only. One problem; its fix is the block's width at the BlockSpec's line
(``judge.reads``: block-narrow), not only "cover every output block"."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BM = 8
LANES = 128


def softmax_kernel(x_ref, o_ref):
    x = x_ref[...]
    m = jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(x - m)
    s = jnp.sum(e, axis=-1, keepdims=True)
    o_ref[...] = (e / s).astype(o_ref.dtype)


@jax.jit
def softmax(x):
    m, n = x.shape
    spec = pl.BlockSpec((BM, LANES), lambda i: (i, 0))
    return pl.pallas_call(
        softmax_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(pl.cdiv(m, BM),),
        in_specs=[spec],
        out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=True,
    )(x)
