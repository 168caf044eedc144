"""Bug: starts every chunk's copy (double-buffered, like the solution) but never
waits on any of them, so it reads a slot whose copy may not have landed.
Measured (jax 0.10.2, every case):
- generic interpreter (interpret=True): correct -- it performs a copy as soon
  as it is started and does not check semaphores at kernel exit.
- TPU interpret mode, dma_execution_mode='on_wait' (the default): a copy is
  performed only when it is waited on, so none ever is: the output is alpha *
  the scratch's initial contents -- all NaN with uninitialized_memory='nan'
  (the grader's rung), all 0 with uninitialized_memory='zero'.
- TPU interpret mode, dma_execution_mode='eager': correct numbers; the
  interpreter only prints "Semaphore ... has non-zero count ... at kernel
  exit" and raises nothing.
On a chip it races the DMA engine."""
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
    for c in range(nchunks):
        slot = c % 2
        if c + 1 < nchunks:
            copy(c + 1, 1 - slot).start()
        # missing: copy(c, slot).wait()
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
