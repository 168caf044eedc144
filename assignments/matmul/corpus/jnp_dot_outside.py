"""Bug: the product is computed with jnp.dot outside any kernel; the pallas_call
only copies it. Correct numbers, but the work is not done in a kernel -> not-a-kernel."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def copy_kernel(p_ref, o_ref):
    o_ref[...] = p_ref[...]


def matmul(x, y):
    product = jnp.dot(x, y, preferred_element_type=jnp.float32)
    m, n = product.shape
    spec = pl.BlockSpec((128, 128), lambda i, j: (i, j))
    return pl.pallas_call(copy_kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
                          grid=(m // 128, n // 128), in_specs=[spec], out_specs=spec,
                          interpret=True)(product)
