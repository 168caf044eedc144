"""Correct: the pallas_call sits inside jit, cond, fori_loop and scan bodies;
the grader must still force every rung on it."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def _add(x, y):
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(x.shape[0] // 8, x.shape[1] // 128),
                          in_specs=[spec, spec], out_specs=spec)(x, y)


@jax.jit
def add(x, y):
    # No work outside the kernel: control flow picks one kernel output, on values
    # that are not data (a loop counter, a table). A decision on the data itself
    # outside a kernel (a predicate reading an output) would be not-a-kernel.
    def body(i, acc):
        return jax.lax.cond(i == 0, lambda a: _add(x, y), lambda a: a, acc)
    once = jax.lax.fori_loop(0, 2, body, jnp.zeros_like(x))
    def step(carry, _):
        return carry, _add(x, y)
    _, stacked = jax.lax.scan(step, 0.0, None, length=2)
    first = jnp.arange(2)[0] == 0
    return jax.lax.cond(first, lambda: once, lambda: stacked[0])
