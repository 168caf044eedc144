"""Bug: subtracts jnp.max(x) over the whole (8, N) block (both axes) instead of
each row's max. Two failures, measured (jax 0.10.2):
- Padding dependence: the block max includes the padding rows of the partial
  last block. The generic interpreter pads partial blocks with NaN, and so
  does TPU interpret mode with uninitialized_memory='nan' (the grader's rung):
  the max is NaN and every valid row of the last block is NaN (rows 16-19 of
  rows-20x256, rows 200-202 of hidden-tall). With uninitialized_memory='zero'
  the padding is 0, below the block's real max, and those scale-1 cases pass.
  Padding that held large values (possible on a chip, not producible by
  either interpreter) would make exp underflow to 0 in every valid row of the
  block, and 0 / 0 = NaN.
- Numerics: with logits scaled by 100 or 1000, rows whose own max lies far
  below the block's max get exp() = 0 in every element, 0 / 0 = NaN, even in
  full blocks (10 of 37 rows of logits100-37x128 with 'zero', 15 with NaN
  padding).
wide-64x1024 (M a multiple of 8, scale 1) passes on every rung."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def kernel(x_ref, o_ref):
    x = x_ref[...]
    e = jnp.exp(x - jnp.max(x))
    o_ref[...] = e / jnp.sum(e, axis=-1, keepdims=True)


def softmax(x):
    m, n = x.shape
    spec = pl.BlockSpec((8, n), lambda i: (i, 0))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
                          grid=(pl.cdiv(m, 8),), in_specs=[spec], out_specs=spec,
                          interpret=True)(x)
