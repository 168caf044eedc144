"""Every input bit rebuilt outside the kernel through a lax.cond whose index reads
the data: for each element, 32 branches choose between v + 2**k and v, where v
starts at 0 and no branch reads an input. The rebuilt values carry no data flow
from the inputs, so their sum (outside any kernel) looked like bookkeeping to a
rule that follows data; the kernel only copies. A decision on data outside a
kernel is not on the allow-list: not-a-kernel."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _copy(s_ref, o_ref):
    o_ref[...] = s_ref[...]


def _rebuilt(u):
    """The uint32 ``u``, bit by bit, as a value no operation computed from it."""
    def bit(k, v):
        p = jnp.left_shift(jnp.uint32(1), jnp.uint32(31) - k.astype(jnp.uint32))
        return jax.lax.cond(u >= v + p, lambda w: w + p, lambda w: w, v)
    return jax.lax.fori_loop(0, 32, bit, jnp.uint32(0))


def _float(bits):
    return jax.lax.bitcast_convert_type(bits, jnp.float32)


def add(x, y):
    m, n = x.shape
    xb = jax.lax.bitcast_convert_type(x, jnp.uint32)
    yb = jax.lax.bitcast_convert_type(y, jnp.uint32)

    def element(k, out):
        i, j = k // n, k % n
        a, b = _float(_rebuilt(xb[i, j])), _float(_rebuilt(yb[i, j]))
        return jax.lax.dynamic_update_slice(out, jnp.reshape(a + b, (1, 1)), (i, j))
    s = jax.lax.fori_loop(0, m * n, element, jnp.zeros_like(x))
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(m // 8, n // 128),
                          in_specs=[spec], out_specs=spec)(s)
