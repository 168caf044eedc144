"""Accumulates into the output it never initialised, and first maps the values
the poisoning probe used to fill memory with (NaN, 0 and +-1e30, once fixed and
public) to zero, so every fill looked like a zeroed output. The fills are now
drawn per grading from the secret run key: this kernel cannot know them."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _k(x_ref, y_ref, o_ref):
    o = o_ref[...]
    known = jnp.isnan(o) | (o == 0) | (jnp.abs(o) == 1e30)
    o_ref[...] = jnp.where(known, 0.0, o) + x_ref[...] + y_ref[...]


def add(x, y):
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(_k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(x.shape[0] // 8, x.shape[1] // 128), in_specs=[spec, spec], out_specs=spec)(x, y)
