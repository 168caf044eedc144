"""Bug (a student's read, written apart from the project): the grid's axes are swapped
(``grid=(n // BC, m // BR)`` for blocks indexed (i, j) over rows, columns). Square
visible cases pass; the tall secret case has blocks past the end and output blocks
the grid never visits: one grid that does not fit its arrays -> out-of-bounds, one
problem at the grid= line (the unvisited blocks are a note under it)."""
import jax
from jax.experimental import pallas as pl

BR, BC = 8, 128


def add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


@jax.jit
def add(x, y):
    m, n = x.shape
    spec = pl.BlockSpec((BR, BC), lambda i, j: (i, j))
    return pl.pallas_call(
        add_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(n // BC, m // BR),
        in_specs=[spec, spec],
        out_specs=spec,
        interpret=True,
    )(x, y)
