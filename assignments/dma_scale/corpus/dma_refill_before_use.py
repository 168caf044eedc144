"""Bug: a single VMEM buffer (slot 0) for every chunk: after waiting for chunk c
it starts the copy of chunk c+1 into the same buffer and only then reads chunk
c from it (the slot is refilled while it is still to be used).
Measured (jax 0.10.2, every case):
- generic interpreter (interpret=True): wrong -- the copy happens at .start(),
  so every chunk but the last is computed from the next chunk's rows (e.g. 128
  of 192 rows wrong on f32-192x256).
- TPU interpret mode, dma_execution_mode='on_wait' (the default, with
  uninitialized_memory 'nan' or 'zero'): correct -- chunk c+1 lands only at
  the next wait, after chunk c was read, so the default TPU rung passes.
- TPU interpret mode, dma_execution_mode='eager' ('nan' or 'zero'): wrong,
  exactly as the generic interpreter.
On a chip the result depends on DMA timing (a race)."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CHUNK = 64


def kernel(x_hbm, o_ref, buf, sem, *, alpha):
    nchunks = x_hbm.shape[0] // CHUNK

    def copy(c):
        return pltpu.make_async_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK)], buf.at[0], sem.at[0])

    copy(0).start()
    for c in range(nchunks):
        copy(c).wait()
        if c + 1 < nchunks:
            copy(c + 1).start()       # overwrites buf[0] while chunk c is still to be read
        o_ref[pl.ds(c * CHUNK, CHUNK), :] = alpha * buf[0]


def dma_scale(x, alpha):
    m, n = x.shape
    return pl.pallas_call(
        functools.partial(kernel, alpha=alpha),
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((m, n), lambda: (0, 0)),
        scratch_shapes=[pltpu.VMEM((2, CHUNK, n), jnp.float32), pltpu.SemaphoreType.DMA((2,))],
        interpret=True)(x)
