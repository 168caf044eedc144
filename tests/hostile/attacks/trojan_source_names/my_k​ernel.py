"""The honest part every attack carries: a correct `add` kernel (staged beside
each attack as a helper module, so an attack earns exactly what this earns)."""
import jax
from jax.experimental import pallas as pl

BLOCK = (8, 128)


def _add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def honest_add(x, y):
    spec = pl.BlockSpec(BLOCK, lambda i, j: (i, j))
    return pl.pallas_call(
        _add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(x.shape[0] // BLOCK[0], x.shape[1] // BLOCK[1]),
        in_specs=[spec, spec], out_specs=spec)(x, y)
