"""Bug, in 0.12's idiom (`pl.kernel` over a one-core TensorCoreMesh): starts
every chunk's copy into VMEM (double-buffered) but never waits on any, so it
scales a slot whose copy may not have landed, then writes it out with
`pltpu.sync_copy`. TPU interpret mode performs a copy only when it is waited
on (dma_execution_mode='on_wait'), so the output is alpha * the scratch's
uninitialized contents; the generic interpreter copies at once and is right.
The same bug as dma_missing_wait.py, written with pl.kernel."""
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
            # missing: copy(c, slot).wait()
            buf[slot] = alpha * buf[slot]
            pltpu.sync_copy(buf.at[slot], o_hbm.at[pl.ds(c * CHUNK, CHUNK)])

    return kernel(x)
