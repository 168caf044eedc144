"""Bug (dma-protocol): the prefetch of chunk c + 1 is started into slot c % 2,
the slot chunk c is still being read from, while the next step waits for chunk
c + 1 in slot (c + 1) % 2, where it was never started. TPU interpret mode hangs
on that wait when copies complete at their wait; the generic interpreter copies
at once, so the prefetch overwrites the chunk about to be read and every output
is wrong. The indices are Python ints (an unrolled loop), so the traced program
shows the copy started into buf[0] and waited for in buf[1]: the fix is placed
at the copy's start."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CHUNK = 64


def scale_kernel(alpha, x_hbm, o_ref, buf, sem):
    steps = x_hbm.shape[0] // CHUNK

    def copy(chunk, slot):
        return pltpu.make_async_copy(x_hbm.at[pl.ds(chunk * CHUNK, CHUNK)], buf.at[slot], sem.at[slot])

    copy(0, 0).start()
    for c in range(steps):
        slot = c % 2
        if c + 1 < steps:
            copy(c + 1, slot).start()
        copy(c, slot).wait()
        o_ref[pl.ds(c * CHUNK, CHUNK), :] = alpha * buf[slot]


@functools.partial(jax.jit, static_argnums=(1,))
def dma_scale(x, alpha):
    m, n = x.shape
    return pl.pallas_call(
        functools.partial(scale_kernel, float(alpha)),
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((m, n), lambda: (0, 0)),
        scratch_shapes=[pltpu.VMEM((2, CHUNK, n), jnp.float32), pltpu.SemaphoreType.DMA((2,))],
        interpret=True,
    )(x)
