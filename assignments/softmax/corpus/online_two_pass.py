"""Correct, another style: 32-row blocks over a pl.cdiv grid, and a two-pass
online softmax inside the kernel. Pass 1 walks the row in 128-lane chunks
keeping a running max and a rescaled running sum per row (fori_loop); pass 2
writes exp(x - max) / sum chunk by chunk. Everything is per row (axis -1)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BM, LANES = 32, 128


def kernel(x_ref, o_ref):
    nchunks = x_ref.shape[1] // LANES

    def stats(c, carry):
        m, s = carry
        xc = x_ref[:, pl.ds(pl.multiple_of(c * LANES, LANES), LANES)]
        m_new = jnp.maximum(m, xc.max(axis=-1, keepdims=True))
        s = s * jnp.exp(m - m_new) + jnp.exp(xc - m_new).sum(axis=-1, keepdims=True)
        return m_new, s

    m0 = jnp.full((x_ref.shape[0], 1), -jnp.inf, jnp.float32)
    s0 = jnp.zeros((x_ref.shape[0], 1), jnp.float32)
    m, s = jax.lax.fori_loop(0, nchunks, stats, (m0, s0))

    def write(c, _):
        sl = pl.ds(pl.multiple_of(c * LANES, LANES), LANES)
        o_ref[:, sl] = jnp.exp(x_ref[:, sl] - m) / s
        return 0

    jax.lax.fori_loop(0, nchunks, write, 0)


def softmax(x):
    m, n = x.shape
    spec = pl.BlockSpec((BM, n), lambda i: (i, 0))
    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(pl.cdiv(m, BM),), in_specs=[spec], out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=True)(x)
