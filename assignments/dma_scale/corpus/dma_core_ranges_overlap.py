"""Bug: the rows are split between the two cores of a parallel grid axis, but
each core's share of chunks is rounded up (ceil(nchunks / 2)) and its start is
rounded down, so with an odd chunk count the middle chunk is processed by both
cores: both DMA the same output rows to HBM, unordered (a write-write race).
Both write the same values, so every interpreter run is right:
Measured (jax 0.10.2, f32-192x256, 3 chunks): generic, TPU interpret mode (on_wait,
eager, random_seed=1 on 2 cores) all right; detect_races with 2 cores reports
"RACE DETECTED  write of hbm[64:128] ... write of hbm[64:128]" (1 core: none, the
grid points run in order). With an even chunk count (f32-256x128) the shares meet
exactly and nothing races.
On a chip the two cores' writes to the shared rows race: the answer happens to
be right only because both compute the same values, and the DMA bandwidth for
that chunk is spent twice."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CHUNK = 64


def kernel(x_hbm, o_hbm, buf, obuf, sem, osem, *, alpha):
    nchunks = x_hbm.shape[0] // CHUNK
    share = (nchunks + 1) // 2                      # rounded up ...
    first = pl.program_id(0) * (nchunks // 2)       # ... but the start rounded down

    def copy_in(c, slot):
        return pltpu.make_async_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK)], buf.at[slot], sem.at[slot])

    def copy_out(c):
        return pltpu.make_async_copy(obuf, o_hbm.at[pl.ds(c * CHUNK, CHUNK)], osem.at[0])

    copy_in(first, 0).start()

    def body(i, carry):
        c, slot = first + i, i % 2

        @pl.when(i + 1 < share)
        def _():
            copy_in(c + 1, 1 - slot).start()

        copy_in(c, slot).wait()
        obuf[...] = alpha * buf[slot]
        copy_out(c).start()
        copy_out(c).wait()
        return carry

    jax.lax.fori_loop(0, share, body, 0)


def dma_scale(x, alpha):
    m, n = x.shape
    return pl.pallas_call(
        functools.partial(kernel, alpha=alpha),
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(2,),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec(memory_space=pl.ANY),
        scratch_shapes=[pltpu.VMEM((2, CHUNK, n), jnp.float32), pltpu.VMEM((CHUNK, n), jnp.float32),
                        pltpu.SemaphoreType.DMA((2,)), pltpu.SemaphoreType.DMA((1,))],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=True)(x)
