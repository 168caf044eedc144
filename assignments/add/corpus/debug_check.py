"""Correct, with the student's own assertion in the kernel: pl.debug_check that
each grid point's block lies inside the grid (a check that passes costs nothing;
the grader runs it on both interpreters, where Pallas's own switch does not)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

BLOCK = (8, 128)


def add_kernel(x_ref, y_ref, o_ref):
    i, j = pl.program_id(0), pl.program_id(1)
    pl.debug_check(jnp.logical_and(i < pl.num_programs(0), j < pl.num_programs(1)),
                   "the block is inside the grid")
    o_ref[...] = x_ref[...] + y_ref[...]


@jax.jit
def add(x, y):
    m, n = x.shape
    spec = pl.BlockSpec(BLOCK, lambda i, j: (i, j))
    return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(m // BLOCK[0], n // BLOCK[1]), in_specs=[spec, spec], out_specs=spec,
                          interpret=True)(x, y)
