"""Hangs only where a probe looks: a probe run is the test run with one switch
turned, and this kernel watches the one it can see, the grid order. It works
out, while tracing, which row block TPU interpret mode runs first when no seed
is given (seed 0, read from the grader's source), remembers in SMEM the first
row block it runs, and spins forever unless that is the test run's first (or
row 0, the generic interpreter's). The tests finish and pass; the grid-order
probe's other seeds and two cores hang ("could not finish: costs nothing",
once). A probe run that hangs where the test passed is charged as what it
exposes: the kernel depends on the grid order."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

UNSET = (jnp.iinfo(jnp.int32).max, jnp.iinfo(jnp.int32).min)   # the interpreters' unwritten int32


def _first_of_seed_0(n: int) -> int:
    with jax.ensure_compile_time_eval():
        _key, sub = jax.random.split(jax.random.key(0))
        return int(jax.random.permutation(sub, jnp.arange(n, dtype=jnp.int32))[0])


def add(x, y):
    rows, cols = x.shape[0] // 8, x.shape[1] // 128
    expected = _first_of_seed_0(rows)

    def kernel(x_ref, y_ref, o_ref, first_ref):
        i = pl.program_id(0)
        seen = first_ref[0]
        first = jnp.where((seen == UNSET[0]) | (seen == UNSET[1]), i, seen)
        first_ref[0] = first
        odd = (first != 0) & (first != expected)
        spun = jax.lax.while_loop(lambda c: c[0], lambda c: (c[0], c[1] + 1.0), (odd, 0.0))[1]
        o_ref[...] = x_ref[...] + y_ref[...] + spun
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(rows, cols),
                          in_specs=[spec, spec], out_specs=spec, scratch_shapes=[pltpu.SMEM((1,), jnp.int32)],
                          compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")))(x, y)
