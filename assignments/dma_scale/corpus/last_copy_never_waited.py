"""Bug (issue 45's sixth read, written apart from the project): the wait is indented
under ``if c + 1 < n_chunks:`` with the prefetch, so the last chunk's copy is started
and never waited on, and its slot is read anyway. The generic interpreter copies at
the start (right); TPU interpret mode is right with 'eager' and wrong with 'on_wait'
(dma-protocol, mode-dependent). The loop is static, so the traced kernel shows every
copy with numbers: the copy of x_hbm[128:192] into bufs[0] (at 192 rows) has no
wait, and the fix names it at its start (``dmas.unwaited``)."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CH = 64


def scale_kernel(x_hbm, out_ref, bufs, sems, *, alpha):
    n_chunks = x_hbm.shape[0] // CH

    def dma(chunk, slot):
        src = x_hbm.at[pl.ds(chunk * CH, CH), :]
        return pltpu.make_async_copy(src, bufs.at[slot], sems.at[slot])

    dma(0, 0).start()
    for c in range(n_chunks):
        cur = c % 2
        nxt = 1 - cur
        if c + 1 < n_chunks:
            dma(c + 1, nxt).start()
            dma(c, cur).wait()
        out_ref[pl.ds(c * CH, CH), :] = bufs[cur] * alpha


@functools.partial(jax.jit, static_argnames=("alpha",))
def dma_scale(x, alpha):
    M, N = x.shape
    return pl.pallas_call(
        functools.partial(scale_kernel, alpha=alpha),
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((M, N), lambda: (0, 0)),
        scratch_shapes=[pltpu.VMEM((2, CH, N), jnp.float32),
                        pltpu.SemaphoreType.DMA((2,))],
        interpret=True,
    )(x)
