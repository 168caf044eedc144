"""Bug (issue 45's seventh read, written apart from the project): the output is
stored under ``pl.when(k == nk)``, which is never true (k runs 0..nk-1), so no step
stores it. The grader walks the kernel's integer arithmetic over the grid
(``pallas_surface.program.unroll.never_run``), finds that no grid point enters that
branch, and places the fix at the ``pl.when`` line."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BM, BN, BK = 128, 128, 128


def matmul_kernel(x_ref, y_ref, o_ref, acc_ref):
    k = pl.program_id(2)
    nk = pl.num_programs(2)

    @pl.when(k == 0)
    def _():
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == nk)
    def _():
        o_ref[...] = acc_ref[...]


def matmul(x, y):
    M, K = x.shape
    K2, N = y.shape
    assert K == K2
    return pl.pallas_call(
        matmul_kernel,
        grid=(M // BM, N // BN, K // BK),
        in_specs=[
            pl.BlockSpec((BM, BK), lambda i, j, k: (i, k)),
            pl.BlockSpec((BK, BN), lambda i, j, k: (k, j)),
        ],
        out_specs=pl.BlockSpec((BM, BN), lambda i, j, k: (i, j)),
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
        scratch_shapes=[pltpu.VMEM((BM, BN), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
        interpret=True,
    )(x, y)
