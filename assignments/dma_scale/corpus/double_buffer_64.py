"""Correct: the solution's technique without jax.jit: x in HBM (pl.ANY), 64-row
chunks double-buffered in a (2, 64, N) VMEM scratch with a DMA semaphore per
slot, the copy of chunk c+1 started before chunk c is waited on and scaled;
static Python loop over chunks; alpha captured by a closure."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CHUNK = 64


def dma_scale(x, alpha):
    m, n = x.shape
    nchunks = m // CHUNK

    def kernel(x_hbm, o_ref, buf, sem):
        def copy(c, slot):
            return pltpu.make_async_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK), :], buf.at[slot],
                                         sem.at[slot])

        copy(0, 0).start()
        for c in range(nchunks):
            if c + 1 < nchunks:
                copy(c + 1, (c + 1) % 2).start()
            copy(c, c % 2).wait()
            o_ref[c * CHUNK:(c + 1) * CHUNK, :] = buf[c % 2] * alpha

    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((m, n), lambda: (0, 0)),
        scratch_shapes=[pltpu.VMEM((2, CHUNK, n), jnp.float32), pltpu.SemaphoreType.DMA((2,))],
        interpret=True)(x)
