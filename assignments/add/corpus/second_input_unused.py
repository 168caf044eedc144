"""Bug (issue 45's sixth read, written apart from the project): a typo stores
``a + a_ref[...]``, x + x; y is read into ``b`` and never used. Every output is
wrong; the traced kernel shows that nothing the kernel writes depends on b_ref
(``identity.dataflow``: the read is dropped while tracing), so the fix names b_ref
and the store that computes without it."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TM, TN = 8, 128


def _add_tile(a_ref, b_ref, out_ref):
    a = a_ref[...]
    b = b_ref[...]
    out_ref[...] = a + a_ref[...]


def add(x, y):
    rows, cols = x.shape
    tile = pl.BlockSpec((TM, TN), lambda r, c: (r, c))
    call = pl.pallas_call(
        _add_tile,
        grid=(rows // TM, cols // TN),
        in_specs=[tile, tile],
        out_specs=tile,
        out_shape=jax.ShapeDtypeStruct((rows, cols), jnp.float32),
        interpret=True,
    )
    return call(x, y)
