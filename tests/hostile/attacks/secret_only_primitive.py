"""An honest kernel at the visible size, and at the secret case's size (M > 16) a
kernel body calling a foreign function (jax.ffi.ffi_call of a target only the
submission names), which the grader never rebuilds: not a primitive of JAX's
array modules, and a call into native code by a name the document would choose.
(It used jnp.fft until the grader rebuilt every array primitive by name.) The
grader must not crash, and a refusal at a secret case must not quote the
refused primitive's or the target's name (the tracer chose them)."""
import jax
from jax.experimental import pallas as pl


def _k(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def _k_foreign(x_ref, y_ref, o_ref):
    s = x_ref[...] + y_ref[...]
    o_ref[...] = jax.ffi.ffi_call("secret_native_sum", jax.ShapeDtypeStruct(s.shape, s.dtype))(s)


def add(x, y):
    body = _k_foreign if x.shape[0] > 16 else _k
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(x.shape[0] // 8, x.shape[1] // 128), in_specs=[spec, spec], out_specs=spec)(x, y)
