"""Bug (issue 45's seventh read, written apart from the project): only y's index
map has its grid axes swapped, ``(j, i)``. Where the block grid is square the kernel
reads the wrong blocks of y (a wrong result); where it is not, it asks for blocks
past the end. One bug: the wrong results are tied to the out-of-bounds access
(``judge.causes.one_map``), and the fix says the block index comes back in another
axis order, at that index map."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BM, BN = 8, 128


def add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x, y):
    M, N = x.shape
    grid = (M // BM, N // BN)
    return pl.pallas_call(
        add_kernel,
        grid=grid,
        in_specs=[
            pl.BlockSpec((BM, BN), lambda i, j: (i, j)),
            pl.BlockSpec((BM, BN), lambda i, j: (j, i)),
        ],
        out_specs=pl.BlockSpec((BM, BN), lambda i, j: (i, j)),
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")),
        interpret=True,
    )(x, y)
