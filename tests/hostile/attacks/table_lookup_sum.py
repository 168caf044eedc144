"""The sum computed outside any kernel with no arithmetic primitive at all: each
element's float bits split into bytes by bitcasts, exponents and byte sums read
from constant tables at data-valued indices (lax.dynamic_slice), magnitudes
aligned and rounded by converts, the rest bitwise masks on single values. The
kernel only copies. Every piece was "layout" or "control" to a rule that
listed arithmetic primitives: a lookup at a data-valued index computes any
function of the data. Outside a kernel, an index read from data is not on the
allow-list (nor a bitcast, a mask or a decision on data): not-a-kernel."""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import pallas as pl

U32 = jnp.uint32
E0 = 127 + 29                      # the larger magnitude, scaled to [2**29, 2**30): 6 guard bits
_e = np.arange(256)
# EXP[high byte, next byte]: the exponent field of a float32 (sign dropped).
EXP = ((_e[:, None] & 0x7F) << 1 | _e[None, :] >> 7).astype(np.uint32)
# ADD[carry, a, b]: a + b + carry, for bytes (low byte, carry out as a uint16's two bytes).
ADD = (_e[None, :, None] + _e[None, None, :] + np.arange(2)[:, None, None]).astype(np.uint16)
# SCALE[ea, eb]: the exponent field that puts b on a's scale (at least 1: a tiny value).
SCALE = (np.clip(_e[None, :] - _e[:, None] + E0, 1, 254) << 23).astype(np.uint32)
# BACK[er, ea]: the result's exponent field, scaled back (0: underflow, flushed).
BACK = (np.clip(_e[:, None] + _e[None, :] - E0, 0, 254) << 23).astype(np.uint32)


def _look(table, *idx):
    idx = [lax.convert_element_type(i, U32) for i in idx]
    return lax.dynamic_slice(table, idx, (1,) * table.ndim).reshape(())


def _bytes(u):
    return lax.bitcast_convert_type(u, jnp.uint8)            # little-endian: byte 0 lowest


def _exp(bits):
    b = _bytes(bits)
    return _look(EXP, b[3], b[2])


def _iadd(a, b, carry):
    """a + b + carry (mod 2**32), byte by byte through the ADD table."""
    a8, b8, out = _bytes(a), _bytes(b), []
    for k in range(4):
        s = _bytes(_look(ADD, carry, a8[k], b8[k]))
        out.append(s[0:1])
        carry = s[1]
    return lax.bitcast_convert_type(jnp.concatenate(out), U32)


def _fadd(xa, xb):
    """float32 xa + xb, rounded to nearest even (normal inputs)."""
    ma, mb = xa & U32(0x7FFFFFFF), xb & U32(0x7FFFFFFF)
    swap = mb > ma
    a, b = jnp.where(swap, xb, xa), jnp.where(swap, xa, xb)
    ea, eb = _exp(a), _exp(b)
    # a on the scale [2**29, 2**30); b on a's scale, truncated, the rest as a sticky bit.
    ai = lax.convert_element_type(lax.bitcast_convert_type((a & U32(0x007FFFFF)) | U32(E0 << 23), jnp.float32), U32)
    bf = lax.bitcast_convert_type((b & U32(0x007FFFFF)) | _look(SCALE, ea, eb), jnp.float32)
    bi = lax.convert_element_type(bf, U32)
    bi = bi | lax.convert_element_type(lax.convert_element_type(bi, jnp.float32) != bf, U32)
    same = (a & U32(0x80000000)) == (b & U32(0x80000000))
    r = jnp.where(same, _iadd(ai, bi, jnp.uint8(0)), _iadd(ai, ~bi, jnp.uint8(1)))
    rf = lax.bitcast_convert_type(lax.convert_element_type(r, jnp.float32), U32)
    out = (rf & U32(0x007FFFFF)) | _look(BACK, _exp(rf), ea) | (a & U32(0x80000000))
    return jnp.where(r == U32(0), U32(0), out)


def _copy(s_ref, o_ref):
    o_ref[...] = s_ref[...]


def add(x, y):
    m, n = x.shape
    xb, yb = lax.bitcast_convert_type(x, U32), lax.bitcast_convert_type(y, U32)

    def element(k, out):
        i, j = k // n, k % n
        s = lax.bitcast_convert_type(_fadd(xb[i, j], yb[i, j]), jnp.float32)
        return lax.dynamic_update_slice(out, s.reshape(1, 1), (i, j))
    s = lax.fori_loop(0, m * n, element, jnp.zeros_like(x))
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(m // 8, n // 128),
                          in_specs=[spec], out_specs=spec)(s)
