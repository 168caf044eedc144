"""Bug: a grid over 64-row chunks where step i starts the copy of chunk i+1
and waits on chunk i's (started by step i-1) -- a cross-step prefetch, correct
only when the steps run in order on one core, yet the axis is marked
"parallel". With dimension_semantics=("arbitrary",) it is correct."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CHUNK = 64


def dma_scale(x, alpha):
    m, n = x.shape
    nchunks = m // CHUNK

    def kernel(x_hbm, o_ref, buf, sem):
        i = pl.program_id(0)

        def copy(c, slot):
            return pltpu.make_async_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK), :], buf.at[slot], sem.at[slot])

        @pl.when(i == 0)
        def _():
            copy(0, 0).start()

        @pl.when(i + 1 < nchunks)
        def _():
            copy(i + 1, (i + 1) % 2).start()

        copy(i, i % 2).wait()
        o_ref[...] = buf[i % 2] * alpha

    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(nchunks,),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((CHUNK, n), lambda i: (i, 0)),
        scratch_shapes=[pltpu.VMEM((2, CHUNK, n), jnp.float32), pltpu.SemaphoreType.DMA((2,))],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=True)(x)
