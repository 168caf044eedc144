"""Every input bit rebuilt outside the kernel through a while_loop of 0 or 1 trips
whose predicate reads the data: for each element and bit k, the loop adds 2**k
to v (which starts at 0) once, or not at all. The rebuilt values carry no data
flow from the inputs, so their sum (outside any kernel) looked like bookkeeping
to a rule that follows data; the kernel only copies. A loop condition read from
data outside a kernel is a decision on data: not-a-kernel."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _copy(s_ref, o_ref):
    o_ref[...] = s_ref[...]


def _rebuilt(u):
    """The uint32 ``u``, bit by bit, as a value no operation computed from it."""
    def bit(k, v):
        p = jnp.left_shift(jnp.uint32(1), jnp.uint32(31) - k.astype(jnp.uint32))
        once = jax.lax.while_loop(lambda c: (c[1] == 0) & (u >= c[0] + p),
                                  lambda c: (c[0] + p, c[1] + 1), (v, jnp.int32(0)))
        return once[0]
    return jax.lax.fori_loop(0, 32, bit, jnp.uint32(0))


def add(x, y):
    m, n = x.shape
    xb = jax.lax.bitcast_convert_type(x, jnp.uint32)
    yb = jax.lax.bitcast_convert_type(y, jnp.uint32)

    def element(k, out):
        i, j = k // n, k % n
        a = jax.lax.bitcast_convert_type(_rebuilt(xb[i, j]), jnp.float32)
        b = jax.lax.bitcast_convert_type(_rebuilt(yb[i, j]), jnp.float32)
        return jax.lax.dynamic_update_slice(out, jnp.reshape(a + b, (1, 1)), (i, j))
    s = jax.lax.fori_loop(0, m * n, element, jnp.zeros_like(x))
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(m // 8, n // 128),
                          in_specs=[spec], out_specs=spec)(s)
