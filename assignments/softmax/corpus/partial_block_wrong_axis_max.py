"""Bug (wrong-result): in the partial last row block only, the max is taken over
axis 0 (down the block's rows, padding included) instead of along each row. The
NaN the interpreters' padding fill carries into the valid rows is no overflow:
wrong whatever the padding holds (its fill reruns say so), a logic error on
every rung, not numerics on some."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BM = 8


@jax.jit
def softmax(x):
    m, n = x.shape

    def softmax_kernel(x_ref, o_ref):
        x = x_ref[...]
        partial = (pl.program_id(0) == pl.num_programs(0) - 1) & (m % BM != 0)
        mx = jnp.where(partial, jnp.max(x, axis=0, keepdims=True), jnp.max(x, axis=-1, keepdims=True))
        e = jnp.exp(x - mx)
        s = jnp.sum(e, axis=-1, keepdims=True)
        o_ref[...] = (e / s).astype(o_ref.dtype)

    spec = pl.BlockSpec((BM, n), lambda i: (i, 0))
    return pl.pallas_call(
        softmax_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(pl.cdiv(m, BM),),
        in_specs=[spec],
        out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=True,
    )(x)
