"""Starter for the `matmul` assignment.

Write `matmul(x, y)`: x is (M, K), y is (K, N), both float32 or both bfloat16;
M, K and N are multiples of 128. Return the float32 (M, N) product, computed by
a tiled `pallas_call` with a K reduction axis and an accumulator. Keep
`interpret=True` while you work on a CPU; the grader runs your kernel on every
interpreter itself, whatever you pass.
"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def matmul_kernel(x_ref, y_ref, o_ref, acc_ref):
    # TODO: zero the accumulator on the first K step, accumulate the product of
    # this pair of tiles in float32, write the output on the last K step.
    raise NotImplementedError


def matmul(x, y):
    # TODO: a grid over (M // bm, N // bn, K // bk), BlockSpecs, a float32
    # scratch accumulator, dimension_semantics.
    raise NotImplementedError
