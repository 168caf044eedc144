"""Correct: one (8, 512) block per grid point, added 128 lanes at a time in a
`lax.fori_loop` inside the kernel."""
import jax
from jax.experimental import pallas as pl


def kernel(x_ref, y_ref, o_ref):
    def body(c, carry):
        sl = pl.ds(pl.multiple_of(c * 128, 128), 128)
        o_ref[:, sl] = x_ref[:, sl] + y_ref[:, sl]
        return carry
    jax.lax.fori_loop(0, o_ref.shape[1] // 128, body, 0)


def add(x, y):
    m, n = x.shape
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(m // 8, n // 128), in_specs=[spec, spec], out_specs=spec,
                          interpret=True)(x, y)
