"""Bug: no max subtraction, exp(x) / sum(exp(x)) (8-row blocks, otherwise like
the solution). Measured (jax 0.10.2): within tolerance on the scale-1 cases
(rows-20x256, wide-64x1024, hidden-tall); on the cases whose logits are scaled
by 100 or 1000 exp overflows to inf and inf / inf = NaN (907 of 4736 outputs
on logits100-37x128, in all 37 rows). Identical on the generic interpreter and
on TPU interpret mode with uninitialized_memory 'nan' and 'zero': numerics."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def kernel(x_ref, o_ref):
    e = jnp.exp(x_ref[...])
    o_ref[...] = e / jnp.sum(e, axis=-1, keepdims=True)


def softmax(x):
    m, n = x.shape
    spec = pl.BlockSpec((8, n), lambda i: (i, 0))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
                          grid=(pl.cdiv(m, 8),), in_specs=[spec], out_specs=spec,
                          interpret=True)(x)
