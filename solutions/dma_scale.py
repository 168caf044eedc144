# BEGIN SOLUTION
"""Instructor solution for `dma_scale`: x stays in HBM (memory_space=pl.ANY) and
is brought into VMEM by manual DMAs of 64-row chunks, double-buffered: two VMEM
scratch slots and one DMA semaphore per slot. The copy of chunk c+1 is started
before chunk c is waited on and computed, so the next transfer overlaps the
current compute. A single grid point (grid=()); the output is one ordinary
(M, N) VMEM block, written chunk by chunk. alpha is a static Python float bound
with functools.partial."""
# STUB: """Starter for the `dma_scale` assignment.
# STUB:
# STUB: Write `dma_scale(x, alpha)`: x is float32 (M, N) with M a multiple of 64
# STUB: (64 <= M <= 1024) and N a multiple of 128 (N <= 1024); alpha is a Python float.
# STUB: Return alpha * x as float32, computed by a `pallas_call` in which x stays in
# STUB: HBM (`pl.BlockSpec(memory_space=pl.ANY)`) and reaches VMEM only through
# STUB: `pltpu.make_async_copy`, in chunks of 64 rows, double-buffered. Keep
# STUB: `interpret=True` while you work on a CPU; the grader runs your kernel on every
# STUB: interpreter itself, whatever you pass.
# STUB: """
# END SOLUTION
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CHUNK = 64


def dma_scale_kernel(x_hbm, o_ref, buf, sem, *, alpha):
    # BEGIN SOLUTION
    nchunks = x_hbm.shape[0] // CHUNK

    def copy(c, slot):
        return pltpu.make_async_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK)], buf.at[slot], sem.at[slot])

    copy(0, 0).start()
    for c in range(nchunks):          # static: M // 64 <= 16 chunks
        slot = c % 2
        if c + 1 < nchunks:
            copy(c + 1, 1 - slot).start()   # prefetch the next chunk into the other slot
        copy(c, slot).wait()                # chunk c has landed in `slot`
        o_ref[pl.ds(c * CHUNK, CHUNK), :] = (alpha * buf[slot]).astype(o_ref.dtype)
    # STUB: # TODO: start the copy of chunk 0 into slot 0; for each chunk c, start the
    # STUB: # copy of chunk c + 1 into the other slot, wait for chunk c, then write
    # STUB: # alpha * buf[slot] to the rows of chunk c in o_ref.
    # STUB: raise NotImplementedError
    # END SOLUTION


# BEGIN SOLUTION
@functools.partial(jax.jit, static_argnums=1)
# END SOLUTION
def dma_scale(x, alpha):
    # BEGIN SOLUTION
    m, n = x.shape
    return pl.pallas_call(
        functools.partial(dma_scale_kernel, alpha=float(alpha)),
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((m, n), lambda: (0, 0)),
        scratch_shapes=[pltpu.VMEM((2, CHUNK, n), jnp.float32), pltpu.SemaphoreType.DMA((2,))],
        interpret=True,  # on a CPU; the grader picks the interpreter itself
    )(x)
    # STUB: # TODO: a pallas_call with in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
    # STUB: # an output block, scratch_shapes=[pltpu.VMEM((2, CHUNK, N), jnp.float32),
    # STUB: # pltpu.SemaphoreType.DMA((2,))], and alpha bound with functools.partial.
    # STUB: raise NotImplementedError
    # END SOLUTION
