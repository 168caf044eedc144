"""Starter for the `dma_scale` assignment.

Write `dma_scale(x, alpha)`: x is float32 (M, N) with M a multiple of 64
(64 <= M <= 1024) and N a multiple of 128 (N <= 1024); alpha is a Python float.
Return alpha * x as float32, computed by a `pallas_call` in which x stays in
HBM (`pl.BlockSpec(memory_space=pl.ANY)`) and reaches VMEM only through
`pltpu.make_async_copy`, in chunks of 64 rows, double-buffered. Keep
`interpret=True` while you work on a CPU; the grader runs your kernel on every
interpreter itself, whatever you pass.
"""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CHUNK = 64


def dma_scale_kernel(x_hbm, o_ref, buf, sem, *, alpha):
    # TODO: start the copy of chunk 0 into slot 0; for each chunk c, start the
    # copy of chunk c + 1 into the other slot, wait for chunk c, then write
    # alpha * buf[slot] to the rows of chunk c in o_ref.
    raise NotImplementedError


def dma_scale(x, alpha):
    # TODO: a pallas_call with in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
    # an output block, scratch_shapes=[pltpu.VMEM((2, CHUNK, N), jnp.float32),
    # pltpu.SemaphoreType.DMA((2,))], and alpha bound with functools.partial.
    raise NotImplementedError
