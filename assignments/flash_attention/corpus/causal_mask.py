"""Bug (issue 45's sixth read, written apart from the project): a causal mask left
in a kernel whose attention is not causal (each query is kept from the keys after
its position, ``jnp.where(col <= row, s, -1e30)``). The output is what the
reference computes with a causal mask, which the assignment declares beside its
reference (``MISTAKES`` in reference.py, ``judge.compare.mistake_fit``): the fix
names the mistake, in the instructor's words, at the ``jnp.where`` line. Everything
else is the instructor's solution."""
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BQ = BK = 128


def flash_attention_kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref, *, scale):
    kv = pl.program_id(2)

    @pl.when(kv == 0)
    def _reset():
        m_ref[...] = jnp.full_like(m_ref, -jnp.inf)
        l_ref[...] = jnp.zeros_like(l_ref)
        acc_ref[...] = jnp.zeros_like(acc_ref)

    s = jnp.dot(q_ref[0], k_ref[0].T, preferred_element_type=jnp.float32) * scale   # (BQ, BK)
    row = pl.program_id(1) * BQ + jax.lax.broadcasted_iota(jnp.int32, s.shape, 0)
    col = kv * BK + jax.lax.broadcasted_iota(jnp.int32, s.shape, 1)
    s = jnp.where(col <= row, s, -1e30)
    m_old = m_ref[...]
    m_new = jnp.maximum(m_old, jnp.max(s, axis=-1, keepdims=True))
    rescale = jnp.exp(m_old - m_new)
    p = jnp.exp(s - m_new)
    l_ref[...] = rescale * l_ref[...] + jnp.sum(p, axis=-1, keepdims=True)
    acc_ref[...] = rescale * acc_ref[...] + jnp.dot(p.astype(v_ref.dtype), v_ref[0],
                                                    preferred_element_type=jnp.float32)
    m_ref[...] = m_new

    @pl.when(kv == pl.num_programs(2) - 1)
    def _write():
        o_ref[0] = (acc_ref[...] / l_ref[...]).astype(o_ref.dtype)


@jax.jit
def flash_attention(q, k, v):
    b, s, d = q.shape
    q_spec = pl.BlockSpec((1, BQ, d), lambda bi, qi, ki: (bi, qi, 0))
    kv_spec = pl.BlockSpec((1, BK, d), lambda bi, qi, ki: (bi, ki, 0))
    return pl.pallas_call(
        lambda *refs: flash_attention_kernel(*refs, scale=1.0 / math.sqrt(d)),
        out_shape=jax.ShapeDtypeStruct((b, s, d), jnp.float32),
        grid=(b, s // BQ, s // BK),
        in_specs=[q_spec, kv_spec, kv_spec],
        out_specs=q_spec,
        scratch_shapes=[pltpu.VMEM((BQ, 1), jnp.float32), pltpu.VMEM((BQ, 1), jnp.float32),
                        pltpu.VMEM((BQ, d), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
        interpret=True,  # on a CPU; the grader picks the interpreter itself
    )(q, k, v)
