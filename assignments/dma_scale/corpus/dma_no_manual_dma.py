"""Technique violation: an ordinary blocked VMEM in_spec of (64, N) rows over a
grid of M // 64 steps (Pallas's own pipelining) instead of x in HBM
(memory_space=pl.ANY) and pltpu.make_async_copy. Measured: correct numbers on
the generic interpreter and on TPU interpret mode ('nan', 'zero', 'eager'),
on every case. Only a structure check can catch it (none exists yet)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def dma_scale(x, alpha):
    m, n = x.shape

    def kernel(x_ref, o_ref):
        o_ref[...] = alpha * x_ref[...]

    spec = pl.BlockSpec((64, n), lambda i: (i, 0))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
                          grid=(m // 64,), in_specs=[spec], out_specs=spec, interpret=True)(x)
