"""Bug (issue 45's eighth read, written apart from the project): the prefetch copies
chunk c, not c + 1, into the other slot, so the output's chunks are x's 0, 0, 1. The
nudged rerun shows x[0, 0] landing 64 rows after where it belongs as well as where it
belongs (``compare.mixed_axes``' moved_to): an offset, and the fix says so (it used
to send the student looking for a reduction in a kernel that has none)."""
import functools
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CHUNK = 64


def dma_kernel(x_hbm, o_ref, buf, sem, *, alpha, n_chunks):
    def copy(c, slot):
        return pltpu.make_async_copy(
            x_hbm.at[pl.ds(c * CHUNK, CHUNK), :], buf.at[slot], sem.at[slot])

    copy(0, 0).start()

    def body(c, carry):
        slot = c % 2
        nxt = 1 - slot

        @pl.when(c + 1 < n_chunks)
        def _prefetch():
            copy(c, nxt).start()

        copy(c, slot).wait()
        o_ref[pl.ds(c * CHUNK, CHUNK), :] = alpha * buf[slot]
        return carry

    jax.lax.fori_loop(0, n_chunks, body, 0)


def dma_scale(x, alpha):
    M, N = x.shape
    n_chunks = M // CHUNK
    kernel = functools.partial(dma_kernel, alpha=float(alpha), n_chunks=n_chunks)
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((M, N), lambda: (0, 0)),
        scratch_shapes=[
            pltpu.VMEM((2, CHUNK, N), jnp.float32),
            pltpu.SemaphoreType.DMA((2,)),
        ],
        interpret=True,
    )(x)
