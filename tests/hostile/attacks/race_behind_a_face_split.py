"""A real race, behind a split of faces (dma_scale): each core's share of row
chunks is rounded up and its start rounded down, so with an odd chunk count both
cores copy the middle chunk to the same output rows, unordered (see the corpus's
dma_core_ranges_overlap.py). The chunk loop is unrolled where the chunk count is
odd and a fori_loop where it is even, so the sizes build two kernels: the race
detector once saw the race and the report said only inconsistent-kernel, and the
races check passed. Every graded size is now checked on its own: the race is
found where it is."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CHUNK = 64


def kernel(x_hbm, o_hbm, buf, *, alpha, unroll):
    nchunks = x_hbm.shape[0] // CHUNK
    share = (nchunks + 1) // 2                      # rounded up ...
    first = pl.program_id(0) * (nchunks // 2)       # ... but the start rounded down

    def body(i, carry):
        c = first + i
        pltpu.sync_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK)], buf)
        buf[...] = alpha * buf[...]
        pltpu.sync_copy(buf, o_hbm.at[pl.ds(c * CHUNK, CHUNK)])
        return carry

    if unroll:
        for i in range(share):
            body(i, 0)
    else:
        jax.lax.fori_loop(0, share, body, 0)


def dma_scale(x, alpha):
    m, n = x.shape
    return pl.pallas_call(
        functools.partial(kernel, alpha=alpha, unroll=(m // CHUNK) % 2 == 1),
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(2,),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec(memory_space=pl.ANY),
        scratch_shapes=[pltpu.VMEM((CHUNK, n), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)))(x)
