"""Kernels written for the chip measurements, in styles the assignments'
solutions and corpora lack: microbenchmarks that each stress one part of a
TPU (the grid pipeline's per-step cost, HBM bandwidth, the vector unit, the
EUP, cross-lane reductions, the matrix unit at each precision, a loop-carried
dependency chain, an inner ``emit_pipeline``, manual DMAs), and whole kernels
in other styles (layer norm, GELU, a fused matmul epilogue, a block-sparse
scalar-prefetch matmul, a K loop inside the kernel, a transposed product).

Each builder takes its parameters and returns ``(function, inputs)``: the
function to trace (as a grading traces a submission) and its arguments as
(shape, dtype) pairs. They are the project's own code: the chip harness
imports them directly.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

F32, BF16 = "float32", "bfloat16"


def _dt(name: str):
    return {"float32": jnp.float32, "bfloat16": jnp.bfloat16, "int8": jnp.int8}[name]


# -- element-wise families ---------------------------------------------------

def copy(m: int, n: int, bm: int, bn: int, dtype: str = F32, inputs: int = 1):
    """o = x (+ y ...): bytes through the pipeline, nothing computed."""
    def kernel(*refs):
        ins, o = refs[:-1], refs[-1]
        acc = ins[0][...]
        for r in ins[1:]:
            acc = acc + r[...]
        o[...] = acc

    def fn(*xs):
        spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), xs[0].dtype), grid=(m // bm, n // bn),
                              in_specs=[spec] * inputs, out_specs=spec)(*xs)
    return fn, [((m, n), dtype)] * inputs


def vpu_chain(m: int, n: int, bm: int, bn: int, ops: int, dtype: str = F32):
    """``ops`` dependent multiply-adds per element (2 vector operations each)."""
    def kernel(x_ref, o_ref):
        y = x_ref[...].astype(jnp.float32)
        for k in range(ops):
            y = y * 1.0001 + (0.5 + k * 1e-3)
        o_ref[...] = y.astype(o_ref.dtype)

    def fn(x):
        spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // bm, n // bn),
                              in_specs=[spec], out_specs=spec)(x)
    return fn, [((m, n), dtype)]


def eup_chain(m: int, n: int, bm: int, bn: int, ops: int, op: str = "exp"):
    """``ops`` transcendental operations per element (exp, tanh, log, reciprocal, rsqrt)."""
    f = {"exp": lambda y: jnp.exp(y * 0.5), "tanh": jnp.tanh, "log": lambda y: jnp.log(jnp.abs(y) + 1.0),
         "reciprocal": lambda y: 1.0 / (jnp.abs(y) + 1.0), "rsqrt": lambda y: jax.lax.rsqrt(jnp.abs(y) + 1.0)}[op]

    def kernel(x_ref, o_ref):
        y = x_ref[...]
        for _ in range(ops):
            y = f(y)
        o_ref[...] = y

    def fn(x):
        spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // bm, n // bn),
                              in_specs=[spec], out_specs=spec)(x)
    return fn, [((m, n), F32)]


def row_reduce(m: int, n: int, bm: int, op: str = "sum", repeat: int = 1):
    """Each row's sum or max over the whole row (cross-lane), written back broadcast."""
    red = {"sum": jnp.sum, "max": jnp.max}[op]

    def kernel(x_ref, o_ref):
        x = x_ref[...]
        acc = jnp.zeros((bm, 1), jnp.float32)
        for k in range(repeat):
            acc = acc + red(x * (1.0 + k * 1e-3), axis=-1, keepdims=True)
        o_ref[...] = jnp.broadcast_to(acc, (bm, 128))

    def fn(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, 128), x.dtype), grid=(m // bm,),
                              in_specs=[pl.BlockSpec((bm, n), lambda i: (i, 0))],
                              out_specs=pl.BlockSpec((bm, 128), lambda i: (i, 0)))(x)
    return fn, [((m, n), F32)]


def col_reduce(m: int, n: int, bn: int, bm: int):
    """Column sums over M (sublanes, then an accumulator across grid steps)."""
    def kernel(x_ref, o_ref):
        @pl.when(pl.program_id(1) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)
        o_ref[...] += jnp.broadcast_to(jnp.sum(x_ref[...], axis=0, keepdims=True), (8, bn))

    def fn(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, n), x.dtype), grid=(n // bn, m // bm),
                              in_specs=[pl.BlockSpec((bm, bn), lambda j, i: (i, j))],
                              out_specs=pl.BlockSpec((8, bn), lambda j, i: (0, j)),
                              compiler_params=pltpu.CompilerParams(
                                  dimension_semantics=("parallel", "arbitrary")))(x)
    return fn, [((m, n), F32)]


def transpose(m: int, n: int, b: int):
    """o = x.T in (b, b) blocks (the cross-lane unit)."""
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...].T

    def fn(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((n, m), x.dtype), grid=(m // b, n // b),
                              in_specs=[pl.BlockSpec((b, b), lambda i, j: (i, j))],
                              out_specs=pl.BlockSpec((b, b), lambda i, j: (j, i)))(x)
    return fn, [((m, n), F32)]


def carried_chain(m: int, n: int, bm: int, bn: int, trips: int):
    """A fori_loop whose carried block goes through a select each trip: every
    trip waits for the last (latency, not throughput)."""
    def kernel(x_ref, o_ref):
        def body(k, y):
            return jnp.where(y > 0.0, y * 0.999, y + 0.001)
        o_ref[...] = jax.lax.fori_loop(0, trips, body, x_ref[...])

    def fn(x):
        spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // bm, n // bn),
                              in_specs=[spec], out_specs=spec)(x)
    return fn, [((m, n), F32)]


# -- the matrix unit ---------------------------------------------------------

def matmul(m: int, k: int, n: int, bm: int, bk: int, bn: int, dtype: str = BF16, precision: str | None = None,
           k_order: str = "inner"):
    """Tiled product with a float32 scratch accumulator over a K grid axis."""
    prec = {None: None, "highest": jax.lax.Precision.HIGHEST}[precision]

    def kernel(x_ref, y_ref, o_ref, acc_ref):
        kk = pl.program_id(2)

        @pl.when(kk == 0)
        def _():
            acc_ref[...] = jnp.zeros_like(acc_ref)
        acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32, precision=prec)

        @pl.when(kk == pl.num_programs(2) - 1)
        def _():
            o_ref[...] = acc_ref[...].astype(o_ref.dtype)

    def fn(x, y):
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(m // bm, n // bn, k // bk),
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                      pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")))(x, y)
    return fn, [((m, k), dtype), ((k, n), dtype)]


def matmul_epilogue(m: int, k: int, n: int, bm: int, bk: int, bn: int, dtype: str = BF16):
    """Tiled product, bias and GELU (tanh) on the last K step: a fused epilogue."""
    def kernel(x_ref, y_ref, b_ref, o_ref, acc_ref):
        kk = pl.program_id(2)

        @pl.when(kk == 0)
        def _():
            acc_ref[...] = jnp.zeros_like(acc_ref)
        acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

        @pl.when(kk == pl.num_programs(2) - 1)
        def _():
            z = acc_ref[...] + b_ref[0:1, :].astype(jnp.float32)
            o_ref[...] = 0.5 * z * (1.0 + jnp.tanh(0.7978845608 * (z + 0.044715 * z * z * z)))

    def fn(x, y, b):
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(m // bm, n // bn, k // bk),
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                      pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
                      pl.BlockSpec((8, bn), lambda i, j, kk: (0, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")))(x, y, b)
    return fn, [((m, k), dtype), ((k, n), dtype), ((8, n), F32)]


def matmul_k_loop(m: int, k: int, n: int, bm: int, bn: int, bk: int, dtype: str = BF16):
    """Whole-K blocks in VMEM and a fori_loop over K slices inside the kernel."""
    def kernel(x_ref, y_ref, o_ref):
        def body(t, acc):
            xs = x_ref[:, pl.ds(pl.multiple_of(t * bk, bk), bk)]
            ys = y_ref[pl.ds(pl.multiple_of(t * bk, bk), bk), :]
            return acc + jnp.dot(xs, ys, preferred_element_type=jnp.float32)
        o_ref[...] = jax.lax.fori_loop(0, k // bk, body, jnp.zeros((bm, bn), jnp.float32))

    def fn(x, y):
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(m // bm, n // bn),
            in_specs=[pl.BlockSpec((bm, k), lambda i, j: (i, 0)), pl.BlockSpec((k, bn), lambda i, j: (0, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)))(x, y)
    return fn, [((m, k), dtype), ((k, n), dtype)]


def matmul_transposed(m: int, k: int, n: int, bm: int, bk: int, bn: int, dtype: str = BF16):
    """x @ y.T with y given as (N, K): the contraction on both operands' last axis."""
    def kernel(x_ref, y_ref, o_ref, acc_ref):
        kk = pl.program_id(2)

        @pl.when(kk == 0)
        def _():
            acc_ref[...] = jnp.zeros_like(acc_ref)
        acc_ref[...] += jax.lax.dot_general(x_ref[...], y_ref[...], (((1,), (1,)), ((), ())),
                                            preferred_element_type=jnp.float32)

        @pl.when(kk == pl.num_programs(2) - 1)
        def _():
            o_ref[...] = acc_ref[...]

    def fn(x, y):
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(m // bm, n // bn, k // bk),
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                      pl.BlockSpec((bn, bk), lambda i, j, kk: (j, kk))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")))(x, y)
    return fn, [((m, k), dtype), ((n, k), dtype)]


def block_sparse(m: int, k: int, n: int, b: int, density_every: int = 3, dtype: str = BF16):
    """Block-sparse x dense: a scalar-prefetch table of the nonzero (i, kk) blocks
    of x (every ``density_every``-th along K, staggered by row), computed from the
    shapes; zero-block steps are skipped with pl.when."""
    import numpy as np
    mb, kb = m // b, k // b
    keep = np.array([[(i + kk) % density_every == 0 for kk in range(kb)] for i in range(mb)], np.int32)

    def kernel(mask_ref, x_ref, y_ref, o_ref, acc_ref):
        i, kk = pl.program_id(0), pl.program_id(2)

        @pl.when(kk == 0)
        def _():
            acc_ref[...] = jnp.zeros_like(acc_ref)

        @pl.when(mask_ref[i, kk] != 0)
        def _():
            acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

        @pl.when(kk == pl.num_programs(2) - 1)
        def _():
            o_ref[...] = acc_ref[...]

    def fn(x, y):
        mask = jnp.asarray(keep)
        grid_spec = pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1, grid=(mb, n // b, kb),
            in_specs=[pl.BlockSpec((b, b), lambda i, j, kk, msk: (i, kk)),
                      pl.BlockSpec((b, b), lambda i, j, kk, msk: (kk, j))],
            out_specs=pl.BlockSpec((b, b), lambda i, j, kk, msk: (i, j)),
            scratch_shapes=[pltpu.VMEM((b, b), jnp.float32)])
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid_spec=grid_spec,
                              compiler_params=pltpu.CompilerParams(
                                  dimension_semantics=("parallel", "parallel", "arbitrary")))(mask, x, y)
    return fn, [((m, k), dtype), ((k, n), dtype)]


# -- inner pipelines and manual DMAs ----------------------------------------

def emit_copy(m: int, n: int, outer: int, inner: int):
    """Each grid step walks its (outer, n) rows of x with an inner emit_pipeline
    of (inner, n) blocks (x and o stay in HBM)."""
    def kernel(x_hbm, o_hbm):
        i = pl.program_id(0)

        def body(x_ref, o_ref):
            o_ref[...] = x_ref[...] * 2.0
        pltpu.emit_pipeline(body, grid=(outer // inner,),
                            in_specs=[pl.BlockSpec((inner, n), lambda t: (i * (outer // inner) + t, 0))],
                            out_specs=[pl.BlockSpec((inner, n), lambda t: (i * (outer // inner) + t, 0))])(
            x_hbm, o_hbm)

    def fn(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // outer,),
                              in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                              out_specs=pl.BlockSpec(memory_space=pl.ANY))(x)
    return fn, [((m, n), F32)]


def emit_matmul(m: int, k: int, n: int, bm: int, bn: int, bk: int, dtype: str = BF16):
    """An outer (M, N) grid; K walked by an inner emit_pipeline."""
    def kernel(x_hbm, y_hbm, o_ref, acc_ref):
        i, j = pl.program_id(0), pl.program_id(1)
        acc_ref[...] = jnp.zeros_like(acc_ref)

        def inner(x_ref, y_ref):
            acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)
        pltpu.emit_pipeline(inner, grid=(k // bk,),
                            in_specs=[pl.BlockSpec((bm, bk), lambda kk: (i, kk)),
                                      pl.BlockSpec((bk, bn), lambda kk: (kk, j))])(x_hbm, y_hbm)
        o_ref[...] = acc_ref[...]

    def fn(x, y):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(m // bm, n // bn),
                              in_specs=[pl.BlockSpec(memory_space=pl.ANY), pl.BlockSpec(memory_space=pl.ANY)],
                              out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
                              scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)])(x, y)
    return fn, [((m, k), dtype), ((k, n), dtype)]


def dma_rows(m: int, n: int, rows: int, chunk: int):
    """A grid over (rows, n) output blocks; each step copies its rows from HBM by
    manual DMAs of ``chunk`` rows, double-buffered, and scales them."""
    def kernel(x_hbm, o_ref, buf, sem):
        i = pl.program_id(0)
        steps = rows // chunk

        def cp(c, slot):
            return pltpu.make_async_copy(x_hbm.at[pl.ds(i * rows + c * chunk, chunk)], buf.at[slot], sem.at[slot])
        cp(0, 0).start()
        for c in range(steps):
            if c + 1 < steps:
                cp(c + 1, (c + 1) % 2).start()
            cp(c, c % 2).wait()
            o_ref[pl.ds(c * chunk, chunk), :] = buf[c % 2] * 3.0

    def fn(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // rows,),
                              in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                              out_specs=pl.BlockSpec((rows, n), lambda i: (i, 0)),
                              scratch_shapes=[pltpu.VMEM((2, chunk, n), jnp.float32),
                                              pltpu.SemaphoreType.DMA((2,))])(x)
    return fn, [((m, n), F32)]


# -- whole kernels in other styles ------------------------------------------

def layernorm(m: int, n: int, bm: int):
    """Row-wise layer norm (mean, variance, rsqrt) over whole rows."""
    def kernel(x_ref, o_ref):
        x = x_ref[...]
        mu = jnp.mean(x, axis=-1, keepdims=True)
        d = x - mu
        var = jnp.mean(d * d, axis=-1, keepdims=True)
        o_ref[...] = d * jax.lax.rsqrt(var + 1e-5)

    def fn(x):
        spec = pl.BlockSpec((bm, n), lambda i: (i, 0))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // bm,),
                              in_specs=[spec], out_specs=spec)(x)
    return fn, [((m, n), F32)]


def gelu(m: int, n: int, bm: int, bn: int, dtype: str = F32):
    """GELU (tanh form) element-wise, computed in float32."""
    def kernel(x_ref, o_ref):
        z = x_ref[...].astype(jnp.float32)
        o_ref[...] = (0.5 * z * (1.0 + jnp.tanh(0.7978845608 * (z + 0.044715 * z * z * z)))).astype(o_ref.dtype)

    def fn(x):
        spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // bm, n // bn),
                              in_specs=[spec], out_specs=spec)(x)
    return fn, [((m, n), dtype)]


def softmax_rows(m: int, n: int, bm: int, form: str = "max"):
    """Row softmax over whole rows: ``max`` (subtract the max), ``lse`` (log-sum-exp form)."""
    def kernel(x_ref, o_ref):
        x = x_ref[...]
        mx = jnp.max(x, axis=-1, keepdims=True)
        e = jnp.exp(x - mx)
        s = jnp.sum(e, axis=-1, keepdims=True)
        o_ref[...] = e / s if form == "max" else jnp.exp(x - (mx + jnp.log(s)))

    def fn(x):
        spec = pl.BlockSpec((bm, n), lambda i: (i, 0))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // bm,),
                              in_specs=[spec], out_specs=spec)(x)
    return fn, [((m, n), F32)]


def attention_blocked(b: int, s: int, d: int, bq: int, bk: int, dtype: str = BF16):
    """Flash attention with the key loop as a grid axis (online softmax in scratch)."""
    scale = 1.0 / d ** 0.5

    def kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref):
        kv = pl.program_id(2)

        @pl.when(kv == 0)
        def _():
            m_ref[...] = jnp.full_like(m_ref, -1e30)
            l_ref[...] = jnp.zeros_like(l_ref)
            acc_ref[...] = jnp.zeros_like(acc_ref)
        q, k, v = q_ref[0], k_ref[0], v_ref[0]
        sc = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32) * scale
        m_new = jnp.maximum(m_ref[...], jnp.max(sc, axis=-1, keepdims=True))
        p = jnp.exp(sc - m_new)
        alpha = jnp.exp(m_ref[...] - m_new)
        l_ref[...] = alpha * l_ref[...] + jnp.sum(p, axis=-1, keepdims=True)
        acc_ref[...] = alpha * acc_ref[...] + jnp.dot(p.astype(v.dtype), v, preferred_element_type=jnp.float32)
        m_ref[...] = m_new

        @pl.when(kv == pl.num_programs(2) - 1)
        def _():
            o_ref[0] = acc_ref[...] / l_ref[...]

    def fn(q, k, v):
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct((b, s, d), jnp.float32), grid=(b, s // bq, s // bk),
            in_specs=[pl.BlockSpec((1, bq, d), lambda bb, i, j: (bb, i, 0)),
                      pl.BlockSpec((1, bk, d), lambda bb, i, j: (bb, j, 0)),
                      pl.BlockSpec((1, bk, d), lambda bb, i, j: (bb, j, 0))],
            out_specs=pl.BlockSpec((1, bq, d), lambda bb, i, j: (bb, i, 0)),
            scratch_shapes=[pltpu.VMEM((bq, 1), jnp.float32), pltpu.VMEM((bq, 1), jnp.float32),
                            pltpu.VMEM((bq, d), jnp.float32)],
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")))(q, k, v)
    return fn, [((b, s, d), dtype)] * 3


def scale_shift(m: int, n: int, bm: int, bn: int, dtype: str = F32):
    """x * s + b with per-column s and b (row vectors broadcast down the block)."""
    def kernel(x_ref, s_ref, b_ref, o_ref):
        x = x_ref[...].astype(jnp.float32)
        o_ref[...] = (x * s_ref[0:1, :] + b_ref[0:1, :]).astype(o_ref.dtype)

    def fn(x, s, b):
        row = pl.BlockSpec((8, bn), lambda i, j: (0, j))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // bm, n // bn),
                              in_specs=[pl.BlockSpec((bm, bn), lambda i, j: (i, j)), row, row],
                              out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)))(x, s, b)
    return fn, [((m, n), dtype), ((8, n), F32), ((8, n), F32)]


def matvec(m: int, k: int, bm: int, bk: int, dtype: str = BF16):
    """(M, K) @ (K, 128): memory-bound on x, a K grid axis accumulating in the output block."""
    def kernel(x_ref, v_ref, o_ref):
        @pl.when(pl.program_id(1) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)
        o_ref[...] += jnp.dot(x_ref[...], v_ref[...], preferred_element_type=jnp.float32)

    def fn(x, v):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, 128), jnp.float32), grid=(m // bm, k // bk),
                              in_specs=[pl.BlockSpec((bm, bk), lambda i, kk: (i, kk)),
                                        pl.BlockSpec((bk, 128), lambda i, kk: (kk, 0))],
                              out_specs=pl.BlockSpec((bm, 128), lambda i, kk: (i, 0)),
                              compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")))(x, v)
    return fn, [((m, k), dtype), ((k, 128), dtype)]


def loop_reduce(m: int, n: int, bm: int, chunk: int = 128):
    """Online row statistics in a fori_loop over 128-lane chunks: a running max and a rescaled
    running sum per row (cross-lane reductions and exps carried from iteration to iteration)."""
    def kernel(x_ref, o_ref):
        def body(c, carry):
            mx, sm = carry
            xc = x_ref[:, pl.ds(pl.multiple_of(c * chunk, chunk), chunk)]
            m_new = jnp.maximum(mx, xc.max(axis=-1, keepdims=True))
            sm = sm * jnp.exp(mx - m_new) + jnp.exp(xc - m_new).sum(axis=-1, keepdims=True)
            return m_new, sm
        mx, sm = jax.lax.fori_loop(0, n // chunk, body, (jnp.full((bm, 1), -1e30, jnp.float32),
                                                          jnp.zeros((bm, 1), jnp.float32)))
        o_ref[...] = jnp.broadcast_to(mx + jnp.log(sm), (bm, 128))

    def fn(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, 128), x.dtype), grid=(m // bm,),
                              in_specs=[pl.BlockSpec((bm, n), lambda i: (i, 0))],
                              out_specs=pl.BlockSpec((bm, 128), lambda i: (i, 0)))(x)
    return fn, [((m, n), F32)]


def print_copy(m: int, n: int, bm: int, bn: int):
    """o = x, with a pl.debug_print at every grid step."""
    def kernel(x_ref, o_ref):
        pl.debug_print("step {}", pl.program_id(0))
        o_ref[...] = x_ref[...]

    def fn(x):
        spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // bm, n // bn),
                              in_specs=[spec], out_specs=spec)(x)
    return fn, [((m, n), F32)]


def attention_kt(b: int, s: int, d: int, bq: int, bk: int, dtype: str = BF16):
    """attention_blocked with k given transposed, (B, D, S): q @ kt needs no transpose in the kernel."""
    scale = 1.0 / d ** 0.5

    def kernel(q_ref, kt_ref, v_ref, o_ref, m_ref, l_ref, acc_ref):
        kv = pl.program_id(2)

        @pl.when(kv == 0)
        def _():
            m_ref[...] = jnp.full_like(m_ref, -1e30)
            l_ref[...] = jnp.zeros_like(l_ref)
            acc_ref[...] = jnp.zeros_like(acc_ref)
        sc = jnp.dot(q_ref[0], kt_ref[0], preferred_element_type=jnp.float32) * scale
        m_new = jnp.maximum(m_ref[...], jnp.max(sc, axis=-1, keepdims=True))
        p = jnp.exp(sc - m_new)
        alpha = jnp.exp(m_ref[...] - m_new)
        l_ref[...] = alpha * l_ref[...] + jnp.sum(p, axis=-1, keepdims=True)
        acc_ref[...] = alpha * acc_ref[...] + jnp.dot(p.astype(v_ref.dtype), v_ref[0],
                                                      preferred_element_type=jnp.float32)
        m_ref[...] = m_new

        @pl.when(kv == pl.num_programs(2) - 1)
        def _():
            o_ref[0] = acc_ref[...] / l_ref[...]

    def fn(q, kt, v):
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct((b, s, d), jnp.float32), grid=(b, s // bq, s // bk),
            in_specs=[pl.BlockSpec((1, bq, d), lambda bb, i, j: (bb, i, 0)),
                      pl.BlockSpec((1, d, bk), lambda bb, i, j: (bb, 0, j)),
                      pl.BlockSpec((1, bk, d), lambda bb, i, j: (bb, j, 0))],
            out_specs=pl.BlockSpec((1, bq, d), lambda bb, i, j: (bb, i, 0)),
            scratch_shapes=[pltpu.VMEM((bq, 1), jnp.float32), pltpu.VMEM((bq, 1), jnp.float32),
                            pltpu.VMEM((bq, d), jnp.float32)],
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")))(q, kt, v)
    return fn, [((b, s, d), dtype), ((b, d, s), dtype), ((b, s, d), dtype)]


BUILDERS = {f.__name__: f for f in (copy, vpu_chain, eup_chain, row_reduce, col_reduce, transpose, carried_chain,
                                    matmul, matmul_epilogue, matmul_k_loop, matmul_transposed, block_sparse,
                                    emit_copy, emit_matmul, dma_rows, layernorm, gelu, softmax_rows,
                                    attention_blocked, scale_shift, matvec, loop_reduce, print_copy,
                                    attention_kt)}


def build(name: str, **params):
    from . import styles  # issue 47's styles, in a module of their own
    return {**BUILDERS, **styles.BUILDERS}[name](**params)


def partial_of(name: str, **params):
    return functools.partial(build, name, **params)
