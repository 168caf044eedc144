"""Clean, in 0.12's idiom: `pl.kernel` over a one-core `pltpu.TensorCoreMesh`
(no grid, no block specs: every operand is a whole ref in HBM). x's 64-row
chunks are double-buffered into VMEM with `pltpu.make_async_copy`, scaled in
place, and written back to the output (also in HBM) with `pltpu.sync_copy`.
pl.kernel traces to an `mpmd_map` equation on both jax 0.10.2 and 0.12; the
grader rebuilds it as the pallas_call JAX lowers it to on CPU.
Measured (0.12.0.1 and 0.10.2): right on every rung, no finding."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CHUNK = 64


def dma_scale(x, alpha):
    m, n = x.shape
    nchunks = m // CHUNK

    @functools.partial(pl.kernel, out_type=jax.ShapeDtypeStruct((m, n), jnp.float32),
                       mesh=pltpu.create_tensorcore_mesh("core", num_cores=1),
                       scratch_types=[pltpu.VMEM((2, CHUNK, n), jnp.float32), pltpu.SemaphoreType.DMA((2,))])
    def kernel(x_hbm, o_hbm, buf, sem):
        def copy(c, slot):
            return pltpu.make_async_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK)], buf.at[slot], sem.at[slot])

        copy(0, 0).start()
        for c in range(nchunks):
            slot = c % 2
            if c + 1 < nchunks:
                copy(c + 1, 1 - slot).start()
            copy(c, slot).wait()
            buf[slot] = alpha * buf[slot]
            pltpu.sync_copy(buf.at[slot], o_hbm.at[pl.ds(c * CHUNK, CHUNK)])

    return kernel(x)
