"""Right on every graded case; at the speed size (M > 2048) the kernel first waits on
a DMA it never started. Both interpreters never run that size. On a real TPU v5e such
a wait hangs for good (the process must be killed). The TPU stage must give this
submission its hang and time the rest of the class."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BLOCK = (8, 128)


def add(x, y):
    m, n = x.shape
    stuck = m > 2048

    def add_kernel(x_ref, y_ref, x_hbm, o_ref, buf, sem):
        if stuck:
            pltpu.make_async_copy(x_hbm.at[pl.ds(0, 8), pl.ds(0, 128)], buf, sem.at[0]).wait()
        o_ref[...] = x_ref[...] + y_ref[...]

    spec = pl.BlockSpec(BLOCK, lambda i, j: (i, j))
    return pl.pallas_call(
        add_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(m // BLOCK[0], n // BLOCK[1]),
        in_specs=[spec, spec, pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=spec,
        scratch_shapes=[pltpu.VMEM(BLOCK, jnp.float32), pltpu.SemaphoreType.DMA((1,))],
        interpret=True,
    )(x, y, x)
