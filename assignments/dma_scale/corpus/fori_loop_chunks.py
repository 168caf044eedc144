"""Correct, another loop structure: 64-row chunks, double-buffered, but the
chunk loop is a lax.fori_loop inside the kernel with a traced slot (c % 2),
pl.when guarding the prefetch of chunk c+1, and the output written with
pl.ds; jitted with alpha static (functools.partial binds it)."""
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

        @pl.when(c + 1 < nchunks)
        def _prefetch():
            copy(c + 1, 1 - slot).start()

        copy(c, slot).wait()
        rows = pl.ds(pl.multiple_of(c * CHUNK, CHUNK), CHUNK)
        o_ref[rows, :] = alpha * buf[slot]
        return carry

    jax.lax.fori_loop(0, nchunks, body, 0)


@functools.partial(jax.jit, static_argnames="alpha")
def dma_scale(x, alpha):
    m, n = x.shape
    return pl.pallas_call(
        functools.partial(kernel, alpha=alpha),
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(1,),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((m, n), lambda i: (0, 0)),
        scratch_shapes=[pltpu.VMEM((2, CHUNK, n), jnp.float32), pltpu.SemaphoreType.DMA((2,))],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("arbitrary",)),
        interpret=True)(x)
