"""Not a kernel: attention computed with jax.numpy around a pallas_call that only
copies the result (the correctness tests would pass on the reference's
arithmetic; the rubric gates them on the structure check)."""
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def flash_attention(q, k, v):
    s = jnp.einsum("bqd,bkd->bqk", q.astype(jnp.float32), k.astype(jnp.float32)) / math.sqrt(q.shape[-1])
    out = jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, axis=-1), v.astype(jnp.float32))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(out.shape, out.dtype), interpret=True)(out)
