"""Spells a secret case's shape through its failure: at a secret size, tracing
raises an exception of a class made on the spot, named after the shape, from a
function also named after it (so the traceback's frame says it too). A secret
case's failure shows an exception type only from a fixed list of builtin and
JAX exceptions, and no frames."""
import jax
from jax.experimental import pallas as pl


def _k(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x, y):
    m, n = x.shape
    if m > 16:
        name = f"Shape_{m}_{n}"
        error = type(name, (Exception,), {})
        scope = {"error": error}
        exec(f"def leak_{m}_{n}():\n    raise error('M={m} N={n}')", scope)
        scope[f"leak_{m}_{n}"]()
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(_k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(m // 8, n // 128),
                          in_specs=[spec, spec], out_specs=spec)(x, y)
