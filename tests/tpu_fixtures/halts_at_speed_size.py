"""Right on every graded case; at the speed size (M > 2048) x's index map points one
block row down, so the last grid row reads past x's end. Both interpreters never run
that size. On a real TPU v5e an out-of-bounds block index halts the core
(RuntimeUnexpectedCoreHalt, "BoundsCheck ... dma.hbm_to_vmem"). The TPU stage must
give this submission its halt and time the rest of the class."""
import jax
from jax.experimental import pallas as pl

BLOCK = (8, 128)


def add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x, y):
    m, n = x.shape
    shift = 1 if m > 2048 else 0
    return pl.pallas_call(
        add_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(m // BLOCK[0], n // BLOCK[1]),
        in_specs=[pl.BlockSpec(BLOCK, lambda i, j: (i + shift, j)), pl.BlockSpec(BLOCK, lambda i, j: (i, j))],
        out_specs=pl.BlockSpec(BLOCK, lambda i, j: (i, j)),
        interpret=True,
    )(x, y)
