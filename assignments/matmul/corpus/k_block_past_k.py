"""Bug (padding-dependence): K blocks of 256 while K is a multiple of 128 only:
at K = 384 (and 640) the last K block of x and of y is half padding, and the
kernel sums it into every output. The accumulator is zeroed and every output
block is written, so this is no unwritten memory: the padding of an input's
partial block reaches every valid result (the fix: mask the padded part of the
last K block, or pick a K block that divides K). K = 512 passes."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BM, BN, BK = 128, 128, 256


def kernel(x_ref, y_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(2) == 0)
    def _zero():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _store():
        o_ref[...] = acc_ref[...]


def matmul(x, y):
    m, k = x.shape
    n = y.shape[1]
    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // BM, n // BN, pl.cdiv(k, BK)),
        in_specs=[pl.BlockSpec((BM, BK), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((BK, BN), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((BM, BN), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((BM, BN), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(x, y)
