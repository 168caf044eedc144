"""Two-faced at the probe case: an honest Pallas kernel only at the probe case's
shape (16, 256), where the probes look, and x + y in jax.numpy at every other
size, where the points are. Every static check now runs on every traced size,
so the structure check finds the work outside the kernel at the other size."""
import jax
from jax.experimental import pallas as pl


def _k(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x, y):
    if x.shape != (16, 256):
        return x + y
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(_k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(2, 2),
                          in_specs=[spec, spec], out_specs=spec)(x, y)
