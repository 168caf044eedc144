"""Correct: an inner pipeline over K with pltpu.emit_pipeline inside a kernel
whose grid covers (M, N) blocks; x and y stay in HBM (pl.ANY)."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BM, BN, BK = 128, 128, 128


def outer_kernel(x_hbm, y_hbm, o_ref, acc_ref):
    i, j = pl.program_id(0), pl.program_id(1)
    acc_ref[...] = jnp.zeros_like(acc_ref)
    k_steps = x_hbm.shape[1] // BK

    def inner(x_ref, y_ref):
        acc_ref[...] += jnp.dot(x_ref[...].astype(jnp.float32), y_ref[...].astype(jnp.float32),
                                preferred_element_type=jnp.float32)

    pltpu.emit_pipeline(
        inner, grid=(k_steps,),
        in_specs=[pl.BlockSpec((BM, BK), lambda k: (i, k)), pl.BlockSpec((BK, BN), lambda k: (k, j))],
    )(x_hbm, y_hbm)
    o_ref[...] = acc_ref[...]


def matmul(x, y):
    m, _ = x.shape
    _, n = y.shape
    return pl.pallas_call(
        outer_kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // BM, n // BN),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY), pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((BM, BN), lambda i, j: (i, j)),
        scratch_shapes=[pltpu.VMEM((BM, BN), jnp.float32)],
        interpret=True)(x, y)
