"""Correct: a fori_loop outside the kernel calls a one-row-block kernel for each
row block, slicing the inputs and placing each result at the loop counter's
rows (lax.dynamic_slice / dynamic_update_slice at positions computed from the
counter and the shape, never from the data): glue the grader allows."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

ROWS = 8


def _kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def _row_block(x, y):
    spec = pl.BlockSpec((ROWS, 128), lambda j: (0, j))
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(x.shape[1] // 128,),
                          in_specs=[spec, spec], out_specs=spec)(x, y)


def add(x, y):
    m, n = x.shape

    def body(i, out):
        start = i * ROWS
        xs = jax.lax.dynamic_slice(x, (start, 0), (ROWS, n))
        ys = jax.lax.dynamic_slice(y, (start, 0), (ROWS, n))
        return jax.lax.dynamic_update_slice(out, _row_block(xs, ys), (start, 0))
    return jax.lax.fori_loop(0, m // ROWS, body, jnp.zeros_like(x))
