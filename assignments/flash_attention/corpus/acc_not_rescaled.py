"""Bug (wrong-result): the running sum is rescaled by exp(m_old - m_new) when the
running max grows, the accumulator is not, so each key block's contribution
keeps the scale of the max it was computed under. Not a scaled row (the
accumulator's error differs element by element); right when every key block is
alike (the running max never changes after the first), which places the fault
in what each step does with what earlier steps carried. The kernel is called
through a ``lambda *refs`` wrapper, so the traced scratch refs have no names of
their own: the feedback reads them from the kernel function's parameters."""
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BLOCK_Q = 128
BLOCK_K = 128


def flash_attention_kernel(q_ref, k_ref, v_ref, o_ref, m_sc, l_sc, acc_sc, *, sm_scale):
    kv_step = pl.program_id(2)

    @pl.when(kv_step == 0)
    def _init():
        m_sc[...] = jnp.full(m_sc.shape, -jnp.inf, jnp.float32)
        l_sc[...] = jnp.zeros(l_sc.shape, jnp.float32)
        acc_sc[...] = jnp.zeros(acc_sc.shape, jnp.float32)

    scores = jnp.dot(q_ref[0], k_ref[0].T, preferred_element_type=jnp.float32) * sm_scale
    m_prev = m_sc[...]
    m_cur = jnp.maximum(m_prev, scores.max(axis=-1, keepdims=True))
    correction = jnp.exp(m_prev - m_cur)
    probs = jnp.exp(scores - m_cur)
    l_sc[...] = correction * l_sc[...] + probs.sum(axis=-1, keepdims=True)
    acc_sc[...] = acc_sc[...] + jnp.dot(probs, v_ref[0], preferred_element_type=jnp.float32)
    m_sc[...] = m_cur

    @pl.when(kv_step == pl.num_programs(2) - 1)
    def _finish():
        o_ref[0] = acc_sc[...] / l_sc[...]


@jax.jit
def flash_attention(q, k, v):
    batch, seq, dim = q.shape
    kernel = lambda *refs: flash_attention_kernel(*refs, sm_scale=1.0 / math.sqrt(dim))  # noqa: E731
    q_spec = pl.BlockSpec((1, BLOCK_Q, dim), lambda b, i, j: (b, i, 0))
    kv_spec = pl.BlockSpec((1, BLOCK_K, dim), lambda b, i, j: (b, j, 0))
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((batch, seq, dim), jnp.float32),
        grid=(batch, seq // BLOCK_Q, seq // BLOCK_K),
        in_specs=[q_spec, kv_spec, kv_spec],
        out_specs=q_spec,
        scratch_shapes=[pltpu.VMEM((BLOCK_Q, 1), jnp.float32),
                        pltpu.VMEM((BLOCK_Q, 1), jnp.float32),
                        pltpu.VMEM((BLOCK_Q, dim), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
        interpret=True,
    )(q, k, v)
