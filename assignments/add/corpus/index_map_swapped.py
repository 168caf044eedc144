"""Bug (a student's read, session 10): the BlockSpec's index map swaps its axes
(``lambda i, j: (j, i)``) while the grid is laid out (rows, columns),
``grid=(m // BM, n // BN)``. The grid is right; the map is the fault. The visible
cases have square block grids (2 x 2, 3 x 3), so the swapped map still covers every
block once and they pass. The tall secret case (33 x 2 blocks) asks grid point
(2, 0) for block (0, 2), past the end of N, and leaves output blocks unvisited:
out-of-bounds, one problem, placed at the index map's line with the fix in the
grader's words (``regions.crossed_axes``; the index-map scan keeps ``map_axes``). At
the speed size (4096 x 4096: 512 x 32 blocks) the scan shows it too: grid point
(32, 0) addresses block (0, 32) (its index map sends grid axis 0 to block axis 1).
Measured: 13 / 16 (tests 4.1 and 4.2 fail), run key 5, jax 0.12.0.1."""
import jax
from jax.experimental import pallas as pl

BM, BN = 8, 128


def add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


@jax.jit
def add(x, y):
    m, n = x.shape
    # one block per grid point; same map for inputs and output
    spec = pl.BlockSpec((BM, BN), lambda i, j: (j, i))
    return pl.pallas_call(
        add_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(m // BM, n // BN),
        in_specs=[spec, spec],
        out_specs=spec,
        interpret=True,
    )(x, y)
