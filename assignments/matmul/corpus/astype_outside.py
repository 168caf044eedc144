"""Correct: the inputs are cast to float32 (astype) before the pallas_call, and
the kernel multiplies float32 tiles; a dtype cast outside the kernel is glue the
grader allows (it moves each value into another type, it computes nothing)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

B = 128


def _kernel(x_ref, y_ref, o_ref, acc_ref):
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _zero():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _store():
        o_ref[...] = acc_ref[...]


def matmul(x, y):
    m, k = x.shape
    _, n = y.shape
    x, y = x.astype(jnp.float32), y.astype(jnp.float32)
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(m // B, n // B, k // B),
        in_specs=[pl.BlockSpec((B, B), lambda i, j, kk: (i, kk)), pl.BlockSpec((B, B), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((B, B), lambda i, j, kk: (i, j)), scratch_shapes=[pltpu.VMEM((B, B), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")))(x, y)
