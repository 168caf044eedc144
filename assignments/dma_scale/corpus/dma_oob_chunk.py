"""Bug: always prefetches chunk c+1 (no `c + 1 < nchunks` guard), so the last
iteration of the fori_loop copies rows M .. M+63, one chunk past the end of x;
the extra copy is waited on (with an in-bounds descriptor of the same size) so
starts and waits balance, and its data is never read.
Measured (jax 0.10.2, every case):
- generic interpreter (interpret=True): no error, correct output.
- TPU interpret mode ('nan' or 'zero', 'on_wait' or 'eager'): IndexError
  "Out-of-bounds read of (0 0 hbm 100): reading [(slice(192, 256, 1),
  slice(0, 256, 1))] but buffer has shape (192, 256)" (f32-192x256); raised
  at the wait under 'on_wait', at the start under 'eager'.
With a static Python loop instead of fori_loop the same bug is caught while
tracing, on every rung: ValueError "Out of bound slice: start=192, dim=192"."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CHUNK = 64


def kernel(x_hbm, o_ref, buf, sem, *, alpha):
    nchunks = x_hbm.shape[0] // CHUNK

    def copy(c, slot):
        return pltpu.make_async_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK)], buf.at[slot], sem.at[slot])

    copy(0, 0).start()

    def body(c, carry):
        slot = c % 2
        copy(c + 1, 1 - slot).start()     # missing `c + 1 < nchunks`: at the last c, rows M .. M+63
        copy(c, slot).wait()
        o_ref[pl.ds(c * CHUNK, CHUNK), :] = alpha * buf[slot]
        return carry

    jax.lax.fori_loop(0, nchunks, body, 0)
    # Balances the extra start: a wait needs only the slot's semaphore and the
    # copy's size, so an in-bounds descriptor of the same shape serves.
    copy(nchunks - 1, nchunks % 2).wait()


def dma_scale(x, alpha):
    m, n = x.shape
    return pl.pallas_call(
        functools.partial(kernel, alpha=alpha),
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((m, n), lambda: (0, 0)),
        scratch_shapes=[pltpu.VMEM((2, CHUNK, n), jnp.float32), pltpu.SemaphoreType.DMA((2,))],
        interpret=True)(x)
