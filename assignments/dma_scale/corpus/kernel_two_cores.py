"""Clean, in 0.12's idiom: `pl.kernel` over a two-core `pltpu.TensorCoreMesh`.
Core k (`lax.axis_index("core")`) takes chunks k, k + 2, k + 4, ... (an odd
chunk count leaves core 1 one chunk short: `pl.when` skips it); each chunk is
brought in and written back with `pltpu.sync_copy` (a copy and its wait).
The two cores never touch the same rows.
Measured (0.12.0.1 and 0.10.2): right on every rung (the generic interpreter
runs the cores one after another, the core index as the grid index), no race
with two simulated cores, no finding."""
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
                       mesh=pltpu.create_tensorcore_mesh("core", num_cores=2),
                       scratch_types=[pltpu.VMEM((CHUNK, n), jnp.float32)])
    def kernel(x_hbm, o_hbm, buf):
        core = jax.lax.axis_index("core")
        for j in range((nchunks + 1) // 2):
            c = core + 2 * j

            @pl.when(c < nchunks)
            def _():
                pltpu.sync_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK)], buf)
                buf[...] = alpha * buf[...]
                pltpu.sync_copy(buf, o_hbm.at[pl.ds(c * CHUNK, CHUNK)])

    return kernel(x)
