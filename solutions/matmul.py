# BEGIN SOLUTION
"""Instructor solution for `matmul`: (128, 128) tiles, K as the innermost,
sequential ("arbitrary") grid axis, a float32 VMEM scratch accumulator zeroed
at k == 0 and written out at the last k."""
# STUB: """Starter for the `matmul` assignment.
# STUB:
# STUB: Write `matmul(x, y)`: x is (M, K), y is (K, N), both float32 or both bfloat16;
# STUB: M, K and N are multiples of 128. Return the float32 (M, N) product, computed by
# STUB: a tiled `pallas_call` with a K reduction axis and an accumulator. Keep
# STUB: `interpret=True` while you work on a CPU; the grader runs your kernel on every
# STUB: interpreter itself, whatever you pass.
# STUB: """
# END SOLUTION
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

# BEGIN SOLUTION
BM = BN = BK = 128
# END SOLUTION


def matmul_kernel(x_ref, y_ref, o_ref, acc_ref):
    # BEGIN SOLUTION
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _zero():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _store():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)
    # STUB: # TODO: zero the accumulator on the first K step, accumulate the product of
    # STUB: # this pair of tiles in float32, write the output on the last K step.
    # STUB: raise NotImplementedError
    # END SOLUTION


# BEGIN SOLUTION
@jax.jit
# END SOLUTION
def matmul(x, y):
    # BEGIN SOLUTION
    m, k = x.shape
    _, n = y.shape
    return pl.pallas_call(
        matmul_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // BM, n // BN, k // BK),
        in_specs=[pl.BlockSpec((BM, BK), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((BK, BN), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((BM, BN), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((BM, BN), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
        interpret=True,  # on a CPU; the grader picks the interpreter itself
    )(x, y)
    # STUB: # TODO: a grid over (M // bm, N // bn, K // bk), BlockSpecs, a float32
    # STUB: # scratch accumulator, dimension_semantics.
    # STUB: raise NotImplementedError
    # END SOLUTION
