"""Bug (issue 45's fifth read, written apart from the project): a double buffer
in a ``fori_loop`` whose wait for chunk c names the next slot's semaphore
(``sems.at[next_slot]``) while chunk c was started on its own slot's. The
indices are traced values (``c % 2``, ``1 - slot``), so the equations alone do
not say which semaphore the wait names; the grader evaluates the loop's integer
arithmetic step by step (``pallas_surface/program/unroll.py``) and finds, on the
first step, the wait on sems[1] for the copy into buf[0] started on sems[0].
Measured (jax 0.12.0.1, run key 5): the generic interpreter is right (it copies
at the start and never blocks); TPU interpret mode hangs with 'on_wait'. The fix
is placed at the wait, not the general "start every copy before waiting"."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CHUNK = 64


def dma_scale(x, alpha):
    m, n = x.shape
    nchunks = m // CHUNK
    a = float(alpha)

    def kernel(x_hbm, o_ref, buf, sems):
        def fetch(c, slot, sem):
            return pltpu.make_async_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK), :], buf.at[slot], sem)

        fetch(0, 0, sems.at[0]).start()

        def step(c, carry):
            slot = c % 2
            next_slot = 1 - slot

            @pl.when(c + 1 < nchunks)
            def _():
                fetch(c + 1, next_slot, sems.at[next_slot]).start()

            fetch(c, slot, sems.at[next_slot]).wait()
            o_ref[pl.ds(pl.multiple_of(c * CHUNK, CHUNK), CHUNK), :] = buf[slot] * a
            return carry

        jax.lax.fori_loop(0, nchunks, step, 0)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((m, n), lambda: (0, 0)),
        scratch_shapes=[pltpu.VMEM((2, CHUNK, n), jnp.float32), pltpu.SemaphoreType.DMA((2,))],
        interpret=True,
    )(x)
