# BEGIN SOLUTION
"""Instructor solution for `add`: one (8, 128) block per grid point."""
# STUB: """Starter for the `add` assignment.
# STUB:
# STUB: Write `add(x, y)`: x and y are float32 arrays of shape (M, N) with M % 8 == 0
# STUB: and N % 128 == 0. Return x + y, computed by a `pallas_call` over a grid of
# STUB: blocks. Keep `interpret=True` while you work on a CPU; the grader runs your
# STUB: kernel on every interpreter itself, whatever you pass.
# STUB: """
# END SOLUTION
import jax
from jax.experimental import pallas as pl

# BEGIN SOLUTION
BLOCK = (8, 128)
# END SOLUTION


def add_kernel(x_ref, y_ref, o_ref):
    # BEGIN SOLUTION
    o_ref[...] = x_ref[...] + y_ref[...]
    # STUB: # TODO: write this block of the output.
    # STUB: raise NotImplementedError
    # END SOLUTION


# BEGIN SOLUTION
@jax.jit
# END SOLUTION
def add(x, y):
    # BEGIN SOLUTION
    m, n = x.shape
    spec = pl.BlockSpec(BLOCK, lambda i, j: (i, j))
    return pl.pallas_call(
        add_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(m // BLOCK[0], n // BLOCK[1]),
        in_specs=[spec, spec],
        out_specs=spec,
        interpret=True,  # on a CPU; the grader picks the interpreter itself
    )(x, y)
    # STUB: # TODO: choose a block shape, a grid and BlockSpecs.
    # STUB: raise NotImplementedError
    # END SOLUTION
