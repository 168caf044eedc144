"""Bug: double-buffered like the solution, but both slots signal one DMA
semaphore, so a wait on chunk c can be satisfied by chunk c+1's copy."""
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
            return pltpu.make_async_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK), :], buf.at[slot], sem.at[0])

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
        scratch_shapes=[pltpu.VMEM((2, CHUNK, n), jnp.float32), pltpu.SemaphoreType.DMA((1,))],
        interpret=True)(x)
