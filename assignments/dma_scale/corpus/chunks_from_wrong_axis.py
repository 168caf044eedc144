"""Bug: the chunk count is taken from the wrong axis (`x_hbm.shape[1] // CHUNK`,
the columns, where the chunks run down the rows), so the static Python loop
copies as many 64-row chunks as the array has 64-column groups.
Measured (jax 0.12.0.1 and 0.10.2, run key 5):
- f32-192x256 (4 chunks for 3): the prefetch of chunk 3 slices rows 192..255 of a
  192-row array, refused while tracing on every rung: ValueError "Out of bound
  slice: start=192, dim=192" (out-of-bounds).
- f32-256x128 (2 chunks for 4): rows 128..255 of the output are never stored
  (uninitialized-memory: they hold the fill).
One problem (``judge.causes.one_length``): the rows never stored start at 128, the
size of dimension 1, and the overrun is where dimension 1 is the larger; explained
at the ``n_chunks`` line with "take it from dimension 0"."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CHUNK = 64


def dma_scale_kernel(x_hbm, o_ref, buf, sem, *, alpha):
    n_chunks = x_hbm.shape[1] // CHUNK

    def fetch(c, slot):
        return pltpu.make_async_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK)],
                                     buf.at[slot], sem.at[slot])

    fetch(0, 0).start()
    for c in range(n_chunks):
        slot = c % 2
        if c + 1 < n_chunks:
            fetch(c + 1, (c + 1) % 2).start()
        fetch(c, slot).wait()
        o_ref[pl.ds(c * CHUNK, CHUNK), :] = alpha * buf[slot]


@functools.partial(jax.jit, static_argnums=1)
def dma_scale(x, alpha):
    m, n = x.shape
    return pl.pallas_call(
        functools.partial(dma_scale_kernel, alpha=float(alpha)),
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((m, n), lambda: (0, 0)),
        scratch_shapes=[pltpu.VMEM((2, CHUNK, n), jnp.float32),
                        pltpu.SemaphoreType.DMA((2,))],
        interpret=True,
    )(x)
