"""An honest kernel at the visible size, and at the secret case's size (M > 16) a
kernel body using jnp.fft, which the grader cannot rebuild (not on its
allow-list). The grader must not crash, and a refusal at a secret case must not
quote the refused primitive's name (the tracer chose it)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _k(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def _k_fft(x_ref, y_ref, o_ref):
    o_ref[...] = jnp.real(jnp.fft.ifft(jnp.fft.fft(x_ref[...] + y_ref[...]))).astype(o_ref.dtype)


def add(x, y):
    body = _k_fft if x.shape[0] > 16 else _k
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(x.shape[0] // 8, x.shape[1] // 128), in_specs=[spec, spec], out_specs=spec)(x, y)
