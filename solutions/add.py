"""Instructor solution for `add`: one (8, 128) block per grid point."""
import jax
from jax.experimental import pallas as pl

BLOCK = (8, 128)


def _add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


@jax.jit
def add(x, y):
    m, n = x.shape
    spec = pl.BlockSpec(BLOCK, lambda i, j: (i, j))
    return pl.pallas_call(
        _add_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(m // BLOCK[0], n // BLOCK[1]),
        in_specs=[spec, spec],
        out_specs=spec,
    )(x, y)
