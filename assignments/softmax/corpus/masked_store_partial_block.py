"""Bug (uninitialized-memory): the store is masked with pltpu.store to the
valid rows, but the bound is off by one (row < M - 1): the array's last row,
which lies in the partial last block whenever M % 8 != 0, is never written."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BM = 8


def softmax(x):
    m, n = x.shape

    def kernel(x_ref, o_ref):
        x = x_ref[...]
        e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
        rows = pl.program_id(0) * BM + jax.lax.broadcasted_iota(jnp.int32, (BM, n), 0)
        pltpu.store(o_ref, e / jnp.sum(e, axis=-1, keepdims=True), mask=rows < m - 1)

    spec = pl.BlockSpec((BM, n), lambda i: (i, 0))
    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(pl.cdiv(m, BM),), in_specs=[spec], out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=True)(x)
