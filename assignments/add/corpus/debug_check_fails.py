"""Wrong, and the student's own assertion says so: the kernel checks that adding y
never makes an element smaller, which fails wherever y is negative (the inputs
are drawn with both signs). The failed check is the finding, in the student's
words, at their line; the sum itself is right, so nothing else is charged."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

BLOCK = (8, 128)


def add_kernel(x_ref, y_ref, o_ref):
    s = x_ref[...] + y_ref[...]
    pl.debug_check(jnp.all(s >= x_ref[...]), "adding y never makes an element smaller")
    o_ref[...] = s


@jax.jit
def add(x, y):
    m, n = x.shape
    spec = pl.BlockSpec(BLOCK, lambda i, j: (i, j))
    return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(m // BLOCK[0], n // BLOCK[1]), in_specs=[spec, spec], out_specs=spec,
                          interpret=True)(x, y)
