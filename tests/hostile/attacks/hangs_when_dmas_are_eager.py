"""Hangs only where a probe looks: x is copied from HBM with a manual DMA, and
the kernel reads the buffer before waiting on the copy. When DMAs complete at
their wait (the tests' mode) it sees its own sentinel and goes on; when they
complete at their start (the DMA probe's eager run) it sees the data and spins
forever, so that run never finishes ("could not finish: costs nothing", once).
A probe run that hangs where the test finished is charged as what it exposes: a
buffer read before its DMA is waited on."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

SENTINEL = -7.25


def _k(x_hbm, y_ref, o_ref, buf, sem):
    i, j = pl.program_id(0), pl.program_id(1)
    buf[...] = jnp.full(buf.shape, SENTINEL, buf.dtype)
    copy = pltpu.make_async_copy(x_hbm.at[pl.ds(i * 8, 8), pl.ds(j * 128, 128)], buf, sem)
    copy.start()
    landed = buf[0, 0] != SENTINEL
    spun = jax.lax.while_loop(lambda c: c[0], lambda c: (c[0], c[1] + 1.0), (landed, 0.0))[1]
    copy.wait()
    o_ref[...] = buf[...] + y_ref[...] + spun


def add(x, y):
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(_k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(x.shape[0] // 8, x.shape[1] // 128),
                          in_specs=[pl.BlockSpec(memory_space=pl.ANY), spec], out_specs=spec,
                          scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA])(x, y)
