"""Bug (wrong-result): the max that stabilises the exponent is taken with
x.max(axis=0), down the block's rows, while the sum runs along each row
(axis -1). Every row is divided by its own sum, so each output row sums to 1,
but it holds exp(x - column max) / sum: wrong on every case and rung. The fix
belongs at the max's line: changing one input element moves outputs in other
rows of its block, which a row-wise softmax never does."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROWS = 16


def softmax_kernel(x_ref, o_ref):
    x = x_ref[...]
    mx = x.max(axis=0, keepdims=True)          # stabilise before exp
    ex = jnp.exp(x - mx)
    o_ref[...] = ex / ex.sum(axis=-1, keepdims=True)


@jax.jit
def softmax(x):
    m, n = x.shape
    spec = pl.BlockSpec((ROWS, n), lambda i: (i, 0))
    return pl.pallas_call(
        softmax_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(pl.cdiv(m, ROWS),),
        in_specs=[spec],
        out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=True,
    )(x)
