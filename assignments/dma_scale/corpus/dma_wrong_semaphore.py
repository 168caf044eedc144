"""Bug: double-buffered like the solution, but each wait is built on the other
slot's semaphore (`sem.at[1 - slot]`) while the copy into `buf.at[slot]` was
started on `sem.at[slot]`: the wait for chunk c is satisfied, if at all, by the
prefetch of chunk c+1. Written apart from the project (issue 45's k09).
Measured (jax 0.12.0.1, run key 5):
- generic interpreter (interpret=True): correct -- it copies at the start and
  never blocks on a wait.
- TPU interpret mode, 'on_wait', f32-192x256 (3 chunks): hangs (the last wait,
  on sem[1], has no copy left to satisfy it).
- TPU interpret mode, f32-256x128 (4 chunks): right with 'eager', wrong with
  'on_wait' (a slot is read before its own copy completes).
The traced kernel shows it without a run: the wait at the `.wait()` line waits
on sem[1] for the copy into buf[0], which was started on sem[0]."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CHUNK = 64


def dma_scale_kernel(x_hbm, o_ref, buf, sem, *, alpha):
    nchunks = x_hbm.shape[0] // CHUNK

    def copy(c, slot):
        return pltpu.make_async_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK)], buf.at[slot], sem.at[slot])

    copy(0, 0).start()
    for c in range(nchunks):          # static: M // 64 <= 16 chunks
        slot = c % 2
        if c + 1 < nchunks:
            copy(c + 1, 1 - slot).start()   # prefetch the next chunk into the other slot
        pltpu.make_async_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK)], buf.at[slot], sem.at[1 - slot]).wait()
        o_ref[pl.ds(c * CHUNK, CHUNK), :] = (alpha * buf[slot]).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnums=1)
def dma_scale(x, alpha):
    m, n = x.shape
    return pl.pallas_call(
        functools.partial(dma_scale_kernel, alpha=float(alpha)),
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((m, n), lambda: (0, 0)),
        scratch_shapes=[pltpu.VMEM((2, CHUNK, n), jnp.float32), pltpu.SemaphoreType.DMA((2,))],
        interpret=True,
    )(x)
