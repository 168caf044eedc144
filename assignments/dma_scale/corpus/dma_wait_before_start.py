"""Bug: waits on each chunk's copy before starting it (wait, then start, then
read), so every wait comes before any copy has signalled its semaphore.
Measured (jax 0.10.2, f32-192x256, each run under `timeout 60`):
- generic interpreter (interpret=True): correct -- its wait does not block and
  the copy happens at .start(), before the read.
- TPU interpret mode ('nan', 'zero', 'eager'): hangs -- the first wait never
  returns; killed by the 60 s timeout every time.
On a chip the kernel would hang too."""
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

    for c in range(nchunks):
        slot = c % 2
        copy(c, slot).wait()          # nothing has been started on this semaphore yet
        copy(c, slot).start()
        o_ref[pl.ds(c * CHUNK, CHUNK), :] = alpha * buf[slot]


def dma_scale(x, alpha):
    m, n = x.shape
    return pl.pallas_call(
        functools.partial(kernel, alpha=alpha),
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((m, n), lambda: (0, 0)),
        scratch_shapes=[pltpu.VMEM((2, CHUNK, n), jnp.float32), pltpu.SemaphoreType.DMA((2,))],
        interpret=True)(x)
