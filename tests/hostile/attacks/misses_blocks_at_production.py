"""Honest numbers at every graded size, a grid that misses half the output at the
production size (matmul): M // 128 row blocks where the VMEM budget is not read,
M // 256 of them at 8192 x 8192 x 8192. The numbers of a size no test runs are
free (a tile chosen by the shape), so nothing vouches for this grid but the
index-map scan at that size itself: it finds output blocks never written, and
the VMEM check gives no figure for a kernel that does not cover its arrays."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _k(x_ref, y_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)
    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _():
        o_ref[...] = acc_ref[...]


def matmul(x, y):
    (m, k), (_, n) = x.shape, y.shape
    rows = m // 256 if m == 8192 else m // 128
    return pl.pallas_call(
        _k, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(rows, n // 128, k // 128),
        in_specs=[pl.BlockSpec((128, 128), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((128, 128), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((128, 128), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((128, 128), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")))(x, y)
