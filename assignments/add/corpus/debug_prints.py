"""Correct: prints with jax.debug.print around the kernel and pl.debug_print
inside it. Host callbacks are refused, but these two are rebuilt from their
format strings, so the student's prints still appear (for visible cases only)."""
import jax
from jax.experimental import pallas as pl


def kernel(x_ref, y_ref, o_ref):
    pl.debug_print("KERNEL-BLOCK {}", pl.program_id(0))
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x, y):
    jax.debug.print("ROWS {r} COLS {c}", r=x.shape[0], c=x.shape[1])
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(x.shape[0] // 8, x.shape[1] // 128),
                          in_specs=[spec, spec], out_specs=spec)(x, y)
