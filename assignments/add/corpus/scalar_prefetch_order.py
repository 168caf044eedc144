"""Correct, another style: scalar prefetch. A table of column-block indices is
prefetched (PrefetchScalarGridSpec) and the index maps read it, so the grid
walks the column blocks in reversed order; each block is written once. A
run_scoped VMEM buffer holds the sum before it is stored."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def add(x, y):
    m, n = x.shape
    cols = n // 128
    order = jnp.arange(cols - 1, -1, -1, dtype=jnp.int32)

    def kernel(order_ref, x_ref, y_ref, o_ref):
        def body(tmp):
            tmp[...] = x_ref[...] + y_ref[...]
            o_ref[...] = tmp[...]
        pl.run_scoped(body, pltpu.VMEM((8, 128), jnp.float32))

    spec = pl.BlockSpec((8, 128), lambda i, j, order_ref: (i, order_ref[j]))
    grid_spec = pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(m // 8, cols),
                                             in_specs=[spec, spec], out_specs=spec)
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid_spec=grid_spec,
                          interpret=True)(order, x, y)
