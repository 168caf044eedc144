"""Bug, in 0.12's idiom (`pl.kernel` over a two-core TensorCoreMesh): each
core's share of chunks is rounded up (ceil(nchunks / 2)) but its start is
rounded down, so with an odd chunk count (f32-192x256: 3 chunks) the middle
chunk is written by both cores to the same output rows, unordered: a
write-write race on HBM. Both write the same values, so every run is right;
TPU interpret mode's race detector (two cores, from the mesh) reports it.
The same bug as dma_core_ranges_overlap.py, written with pl.kernel."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CHUNK = 64


def dma_scale(x, alpha):
    m, n = x.shape
    nchunks = m // CHUNK
    share = (nchunks + 1) // 2                       # rounded up ...

    @functools.partial(pl.kernel, out_type=jax.ShapeDtypeStruct((m, n), jnp.float32),
                       mesh=pltpu.create_tensorcore_mesh("core", num_cores=2),
                       scratch_types=[pltpu.VMEM((CHUNK, n), jnp.float32)])
    def kernel(x_hbm, o_hbm, buf):
        first = jax.lax.axis_index("core") * (nchunks // 2)   # ... but the start rounded down
        for j in range(share):
            c = first + j
            pltpu.sync_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK)], buf)
            buf[...] = alpha * buf[...]
            pltpu.sync_copy(buf, o_hbm.at[pl.ds(c * CHUNK, CHUNK)])

    return kernel(x)
