"""Bug (output-block-revisit): a scalar-prefetched tile order (reversed) whose
first entry is wrongly 0, so tile 0 is visited twice and the last tile never.
One bug, one ID on both rungs: TPU interpret mode refuses block (0, 0) written
again after other blocks; on the generic interpreter the revisit alone looks
right, and the last tile, never written, is what its own fill reruns find (kept
beside the revisit as uninitialized-memory, costing nothing)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

B = 128


def kernel(order_ref, x_ref, y_ref, o_ref, acc_ref):
    k = pl.program_id(1)

    @pl.when(k == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(1) - 1)
    def _():
        o_ref[...] = acc_ref[...]


def matmul(x, y):
    m, kd = x.shape
    n = y.shape[1]
    cols = n // B
    tiles = (m // B) * cols
    order = jnp.arange(tiles - 1, -1, -1, dtype=jnp.int32).at[0].set(0)  # BUG: tile tiles-1 never visited
    gs = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1,
        grid=(tiles, kd // B),
        in_specs=[pl.BlockSpec((B, B), lambda t, k, o: (o[t] // cols, k)),
                  pl.BlockSpec((B, B), lambda t, k, o: (k, o[t] % cols))],
        out_specs=pl.BlockSpec((B, B), lambda t, k, o: (o[t] // cols, o[t] % cols)),
        scratch_shapes=[pltpu.VMEM((B, B), jnp.float32)])
    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid_spec=gs,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
        interpret=True)(order, x, y)
