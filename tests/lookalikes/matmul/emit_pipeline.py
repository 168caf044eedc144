"""Design: x and y stay in HBM (pl.ANY); a grid over output tiles, and an
inner pltpu.emit_pipeline over K that accumulates into a VMEM scratch."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BM, BN, BK = 128, 128, 128


def outer(x_hbm, y_hbm, o_ref, acc_ref):
    i, j = pl.program_id(0), pl.program_id(1)
    acc_ref[...] = jnp.zeros_like(acc_ref)

    def inner(x_ref, y_ref):
        acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    pltpu.emit_pipeline(
        inner, grid=(x_hbm.shape[1] // BK,),
        in_specs=[pl.BlockSpec((BM, BK), lambda k: (i, k)), pl.BlockSpec((BK, BN), lambda k: (k, j))],
    )(x_hbm, y_hbm)
    o_ref[...] = acc_ref[...]


def matmul(x, y):
    m = x.shape[0]
    n = y.shape[1]
    return pl.pallas_call(
        outer, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // BM, n // BN),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY), pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((BM, BN), lambda i, j: (i, j)),
        scratch_shapes=[pltpu.VMEM((BM, BN), jnp.float32)])(x, y)
