"""The real kernel of the forgery attacks: a clean pallas_call that computes
x - y (staged beside each attack). A forgery that works would earn full marks
with it; contained, it earns what x - y deserves."""
import jax
from jax.experimental import pallas as pl

BLOCK = (8, 128)


def _sub_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] - y_ref[...]


def wrong_add(x, y):
    spec = pl.BlockSpec(BLOCK, lambda i, j: (i, j))
    return pl.pallas_call(
        _sub_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(x.shape[0] // BLOCK[0], x.shape[1] // BLOCK[1]),
        in_specs=[spec, spec], out_specs=spec)(x, y)
