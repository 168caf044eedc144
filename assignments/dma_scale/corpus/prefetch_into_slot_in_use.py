"""Bug (issue 45's fourth read): the prefetch of chunk c + 1 copies into the slot
chunk c is read from (``buf.at[cur]`` for ``buf.at[nxt]``), signalling the other
slot's semaphore. TPU interpret mode's race detector sees the copy's write race the
read that stores the output (data-race); the fill reruns see output that depends on
memory never written (the other slot is never filled): one bug, one problem
(``judge.causes.one_race``), placed at the copy's start with "prefetch into the
other slot"."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CHUNK = 64


def dma_scale_kernel(x_hbm, o_ref, buf, sem, *, alpha):
    steps = x_hbm.shape[0] // CHUNK

    def copy(c, slot, signal):
        return pltpu.make_async_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK)], buf.at[slot], sem.at[signal])

    copy(0, 0, 0).start()
    for c in range(steps):
        cur, nxt = c % 2, (c + 1) % 2
        if c + 1 < steps:
            copy(c + 1, cur, nxt).start()
        copy(c, cur, cur).wait()
        o_ref[pl.ds(c * CHUNK, CHUNK), :] = alpha * buf[cur]


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
