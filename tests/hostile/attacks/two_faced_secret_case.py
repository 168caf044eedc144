"""Two-faced at a secret case: honest at every visible size, x + y in
jax.numpy at the secret case's (only the tracer learns its shape). The
structure check runs on the secret case's program too."""
import jax
from jax.experimental import pallas as pl


def _k(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x, y):
    if x.shape[0] > 16:
        return x + y
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(_k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(x.shape[0] // 8, x.shape[1] // 128), in_specs=[spec, spec], out_specs=spec)(x, y)
