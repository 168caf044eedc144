"""One K step where only the estimate looks (matmul's speed size is its production
size, 8192 x 8192 x 8192): the grid's K axis has K // 128 steps at every graded
size and 1 there, so every output block is still written once (the scan's
output coverage holds), the blocks fit VMEM, and the body's numbers follow the
grid (``pl.num_programs(2) - 1``); the estimate would count 1/64 of the work.
The scan at that size finds the input blocks the grid never reads, which the
graded kernel reads in full at every graded size: no estimate, and nothing else
changes (the VMEM budget of this program is its own)."""
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
    steps = 1 if k == 8192 else k // 128
    return pl.pallas_call(
        _k, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(m // 128, n // 128, steps),
        in_specs=[pl.BlockSpec((128, 128), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((128, 128), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((128, 128), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((128, 128), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")))(x, y)
