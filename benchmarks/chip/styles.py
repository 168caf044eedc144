"""Kernels in the styles the speed estimate missed worst on kernels written apart
from the project (issue 47), and others it had no point for: manual DMAs looped
with ``fori_loop`` over two semaphores with the scale in SMEM, single-buffered
(``pl.Buffered(1)``) and column-major or tall-block element-wise kernels, flash
attention looping over key blocks inside the kernel, matmuls contracting both
operands' last axes (NT ``dot_general``) over a swapped grid, batched
``dot_general``, int8 products, a column reduction carried across the grid.

Each builder returns ``(function, inputs)`` like ``kernels.py``'s (the chip
harness and the estimate's validation trace the function as a grading traces a
submission); ``kernels.build`` finds them by name.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

F32, BF16 = "float32", "bfloat16"


def _dt(name: str):
    return {"float32": jnp.float32, "bfloat16": jnp.bfloat16, "int8": jnp.int8}[name]


def _mode(buffers: int) -> dict:
    """BlockSpec keywords for ``buffers`` buffers (1: synchronous, no overlap of copy and compute)."""
    return {} if buffers == 2 else {"pipeline_mode": pl.Buffered(buffers)}


# -- manual DMAs in a loop ----------------------------------------------------

def dma_loop(m: int, n: int, chunk: int, buffers: int = 2, out: str = "vmem", loop: str = "fori"):
    """o = s * x with x in HBM, copied chunk by chunk by manual DMAs (``buffers`` slots and
    semaphores; 2: the next chunk's copy starts before this one is waited on), the scale
    read from SMEM, the chunk loop a ``fori_loop`` (or unrolled: ``loop="static"``). The
    output is one VMEM block (``out="vmem"``) or stays in HBM, written back by DMAs too."""
    steps = m // chunk

    def kernel(s_ref, x_hbm, o_ref, buf, sem, *rest):
        alpha = s_ref[0, 0]

        def cp(c, slot):
            return pltpu.make_async_copy(x_hbm.at[pl.ds(c * chunk, chunk)], buf.at[slot], sem.at[slot])

        def put(c, slot):
            obuf, osem = rest
            return pltpu.make_async_copy(obuf.at[slot], o_ref.at[pl.ds(c * chunk, chunk)], osem.at[slot])

        def compute(c, slot):
            if out == "vmem":
                o_ref[pl.ds(pl.multiple_of(c * chunk, chunk), chunk), :] = alpha * buf[slot]
                return
            obuf = rest[0]
            if buffers == 2:
                @pl.when(c >= 2)
                def _():
                    put(c - 2, slot).wait()      # the slot's last write-back has landed
            obuf[slot] = alpha * buf[slot]
            put(c, slot).start()
            if buffers == 1:
                put(c, slot).wait()

        def body(c, carry):
            slot = c % buffers if buffers == 2 else 0
            if buffers == 2:
                @pl.when(c + 1 < steps)
                def _():
                    cp(c + 1, 1 - slot).start()
            else:
                cp(c, 0).start()
            cp(c, slot).wait()
            compute(c, slot)
            return carry

        if buffers == 2:
            cp(0, 0).start()
        if loop == "fori":
            jax.lax.fori_loop(0, steps, body, 0)
        else:
            for c in range(steps):
                body(c, 0)
        if out == "hbm" and buffers == 2:
            for c in range(max(steps - 2, 0), steps):     # the last two write-backs still in flight
                put(c, c % 2).wait()

    def fn(s, x):
        scratch = [pltpu.VMEM((buffers, chunk, n), jnp.float32), pltpu.SemaphoreType.DMA((buffers,))]
        if out == "hbm":
            scratch += [pltpu.VMEM((buffers, chunk, n), jnp.float32), pltpu.SemaphoreType.DMA((buffers,))]
        out_spec = pl.BlockSpec((m, n), lambda: (0, 0)) if out == "vmem" else pl.BlockSpec(memory_space=pl.ANY)
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
                              in_specs=[pl.BlockSpec(memory_space=pltpu.SMEM), pl.BlockSpec(memory_space=pl.ANY)],
                              out_specs=out_spec, scratch_shapes=scratch)(s, x)
    return fn, [((1, 1), F32), ((m, n), F32)]


def dma_grid(m: int, n: int, rows: int, chunk: int, buffers: int = 2):
    """A grid over (rows, n) output blocks; each step copies its rows from HBM in chunks by
    manual DMAs in a fori_loop (``buffers`` slots), scaled by an SMEM scalar."""
    steps = rows // chunk

    def kernel(s_ref, x_hbm, o_ref, buf, sem):
        i = pl.program_id(0)

        def cp(c, slot):
            return pltpu.make_async_copy(x_hbm.at[pl.ds(i * rows + c * chunk, chunk)], buf.at[slot], sem.at[slot])

        def body(c, carry):
            slot = c % 2 if buffers == 2 else 0
            if buffers == 2:
                @pl.when(c + 1 < steps)
                def _():
                    cp(c + 1, 1 - slot).start()
            else:
                cp(c, 0).start()
            cp(c, slot).wait()
            o_ref[pl.ds(pl.multiple_of(c * chunk, chunk), chunk), :] = s_ref[0, 0] * buf[slot]
            return carry
        if buffers == 2:
            cp(0, 0).start()
        jax.lax.fori_loop(0, steps, body, 0)

    def fn(s, x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(m // rows,),
                              in_specs=[pl.BlockSpec(memory_space=pltpu.SMEM), pl.BlockSpec(memory_space=pl.ANY)],
                              out_specs=pl.BlockSpec((rows, n), lambda i: (i, 0)),
                              scratch_shapes=[pltpu.VMEM((buffers, chunk, n), jnp.float32),
                                              pltpu.SemaphoreType.DMA((buffers,))])(s, x)
    return fn, [((1, 1), F32), ((m, n), F32)]


# -- element-wise layouts and buffering ---------------------------------------

def add_layout(m: int, n: int, bm: int, bn: int, order: str = "row", buffers: int = 2, dtype: str = F32,
               inputs: int = 2):
    """o = x + y (+ ...) in (bm, bn) blocks: the grid walks rows first (``order="row"``) or
    columns first (``"col"``: consecutive steps move down a column of blocks); ``buffers=1``
    single-buffers every operand (``pl.Buffered(1)``: each copy waits for the step before)."""
    def kernel(*refs):
        ins, o = refs[:-1], refs[-1]
        acc = ins[0][...]
        for r in ins[1:]:
            acc = acc + r[...]
        o[...] = acc

    def fn(*xs):
        if order == "row":
            grid, index = (m // bm, n // bn), (lambda i, j: (i, j))
        else:
            grid, index = (n // bn, m // bm), (lambda j, i: (i, j))
        spec = pl.BlockSpec((bm, bn), index, **_mode(buffers))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), xs[0].dtype), grid=grid,
                              in_specs=[spec] * inputs, out_specs=spec)(*xs)
    return fn, [((m, n), dtype)] * inputs


def transpose_add(m: int, n: int, b: int, buffers: int = 2):
    """o = x.T + y with x given as (n, m): x's block is read transposed ((b, b) blocks, index
    (j, i)) and transposed in the kernel."""
    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...].T + y_ref[...]

    def fn(x, y):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), y.dtype), grid=(m // b, n // b),
                              in_specs=[pl.BlockSpec((b, b), lambda i, j: (j, i), **_mode(buffers)),
                                        pl.BlockSpec((b, b), lambda i, j: (i, j), **_mode(buffers))],
                              out_specs=pl.BlockSpec((b, b), lambda i, j: (i, j), **_mode(buffers)))(x, y)
    return fn, [((n, m), F32), ((m, n), F32)]


# -- flash attention, the key loop inside the kernel ------------------------

def flash_loop(b: int, s: int, d: int, bq: int, bk: int, dtype: str = BF16, causal: bool = False):
    """Flash attention over a (batch, query block) grid; each step holds its batch's whole K
    and V in VMEM and walks the key blocks with a fori_loop (online softmax in the carry);
    ``causal``: the loop stops at the diagonal (its bound from the program id)."""
    scale = 1.0 / d ** 0.5

    def kernel(q_ref, k_ref, v_ref, o_ref):
        qi = pl.program_id(1)
        q = q_ref[0]

        def body(t, carry):
            mx, total, acc = carry
            start = pl.multiple_of(t * bk, bk)
            k = k_ref[0, pl.ds(start, bk), :]
            v = v_ref[0, pl.ds(start, bk), :]
            sc = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32) * scale
            if causal:
                rows = qi * bq + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 0)
                cols = start + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 1)
                sc = jnp.where(cols <= rows, sc, -1e30)
            m_new = jnp.maximum(mx, jnp.max(sc, axis=-1, keepdims=True))
            p = jnp.exp(sc - m_new)
            alpha = jnp.exp(mx - m_new)
            total = alpha * total + jnp.sum(p, axis=-1, keepdims=True)
            acc = alpha * acc + jnp.dot(p.astype(v.dtype), v, preferred_element_type=jnp.float32)
            return m_new, total, acc

        trips = (qi * bq + bq + bk - 1) // bk if causal else s // bk
        init = (jnp.full((bq, 1), -1e30, jnp.float32), jnp.zeros((bq, 1), jnp.float32),
                jnp.zeros((bq, d), jnp.float32))
        _m, total, acc = jax.lax.fori_loop(0, trips, body, init)
        o_ref[0] = (acc / total).astype(o_ref.dtype)

    def fn(q, k, v):
        whole = pl.BlockSpec((1, s, d), lambda bb, i: (bb, 0, 0))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((b, s, d), jnp.float32), grid=(b, s // bq),
                              in_specs=[pl.BlockSpec((1, bq, d), lambda bb, i: (bb, i, 0)), whole, whole],
                              out_specs=pl.BlockSpec((1, bq, d), lambda bb, i: (bb, i, 0)),
                              compiler_params=pltpu.CompilerParams(
                                  dimension_semantics=("parallel", "arbitrary")))(q, k, v)
    return fn, [((b, s, d), dtype)] * 3


# -- the matrix unit in other forms -----------------------------------------

def matmul_nt(m: int, k: int, n: int, bm: int, bk: int, bn: int, grid: str = "swapped", dtype: str = BF16,
              acc: str = "scratch"):
    """x @ y.T with y given as (N, K) (an NT ``dot_general``: both operands contracted on their
    last axis), the grid (N, M, K) blocks (``grid="swapped"``) or (M, N, K); the float32 sum in
    a scratch accumulator or, with ``acc="output"``, in the output block itself. ``bk == k``:
    no K axis."""
    ksteps = k // bk

    def kernel(x_ref, y_ref, o_ref, *scratch):
        target = scratch[0] if scratch else o_ref
        part = jax.lax.dot_general(x_ref[...], y_ref[...], (((1,), (1,)), ((), ())),
                                   preferred_element_type=jnp.float32)
        if ksteps == 1:
            o_ref[...] = part
            return
        kk = pl.program_id(2)

        @pl.when(kk == 0)
        def _():
            target[...] = jnp.zeros_like(target)
        target[...] += part
        if scratch:
            @pl.when(kk == ksteps - 1)
            def _():
                o_ref[...] = target[...]

    def fn(x, y):
        if grid == "swapped":
            g, xi, yi, oi = (n // bn, m // bm, ksteps), (lambda j, i, kk: (i, kk)), (lambda j, i, kk: (j, kk)), \
                (lambda j, i, kk: (i, j))
        else:
            g, xi, yi, oi = (m // bm, n // bn, ksteps), (lambda i, j, kk: (i, kk)), (lambda i, j, kk: (j, kk)), \
                (lambda i, j, kk: (i, j))
        if ksteps == 1:
            g = g[:2]
            xi2, yi2, oi2 = xi, yi, oi
            xi, yi, oi = (lambda a, b_: xi2(a, b_, 0)), (lambda a, b_: yi2(a, b_, 0)), (lambda a, b_: oi2(a, b_, 0))
        scratch = [pltpu.VMEM((bm, bn), jnp.float32)] if acc == "scratch" and ksteps > 1 else []
        sem = ("parallel", "parallel", "arbitrary")[:len(g)]
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=g,
                              in_specs=[pl.BlockSpec((bm, bk), xi), pl.BlockSpec((bn, bk), yi)],
                              out_specs=pl.BlockSpec((bm, bn), oi), scratch_shapes=scratch,
                              compiler_params=pltpu.CompilerParams(dimension_semantics=sem))(x, y)
    return fn, [((m, k), dtype), ((n, k), dtype)]


def batched_matmul(b: int, m: int, k: int, n: int, bb: int, bm: int, bn: int, dtype: str = BF16):
    """A batched product in 3-D blocks: ``jnp.einsum('bmk,bkn->bmn')`` inside the kernel (a
    dot_general with a batch dimension), whole K."""
    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = jnp.einsum("bmk,bkn->bmn", x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    def fn(x, y):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((b, m, n), jnp.float32),
                              grid=(b // bb, m // bm, n // bn),
                              in_specs=[pl.BlockSpec((bb, bm, k), lambda p, i, j: (p, i, 0)),
                                        pl.BlockSpec((bb, k, bn), lambda p, i, j: (p, 0, j))],
                              out_specs=pl.BlockSpec((bb, bm, bn), lambda p, i, j: (p, i, j)))(x, y)
    return fn, [((b, m, k), dtype), ((b, k, n), dtype)]


def int8_matmul(m: int, k: int, n: int, bm: int, bk: int, bn: int):
    """int8 x int8 with an int32 accumulator over a K grid axis."""
    def kernel(x_ref, y_ref, o_ref, acc_ref):
        kk = pl.program_id(2)

        @pl.when(kk == 0)
        def _():
            acc_ref[...] = jnp.zeros_like(acc_ref)
        acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.int32)

        @pl.when(kk == pl.num_programs(2) - 1)
        def _():
            o_ref[...] = acc_ref[...]

    def fn(x, y):
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.int32), grid=(m // bm, n // bn, k // bk),
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                      pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.int32)],
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")))(x, y)
    return fn, [((m, k), "int8"), ((k, n), "int8")]


# -- reductions carried across the grid -------------------------------------

def col_sum(m: int, n: int, bm: int, bn: int, buffers: int = 2):
    """Column sums of x, accumulated in the (8, bn) output block across the row blocks (the
    reduction axis last and 'arbitrary')."""
    def kernel(x_ref, o_ref):
        @pl.when(pl.program_id(1) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)
        x = x_ref[...].reshape(bm // 8, 8, bn)
        o_ref[...] += jnp.sum(x, axis=0)

    def fn(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, n), x.dtype), grid=(n // bn, m // bm),
                              in_specs=[pl.BlockSpec((bm, bn), lambda j, i: (i, j), **_mode(buffers))],
                              out_specs=pl.BlockSpec((8, bn), lambda j, i: (0, j)),
                              compiler_params=pltpu.CompilerParams(
                                  dimension_semantics=("parallel", "arbitrary")))(x)
    return fn, [((m, n), F32)]


BUILDERS = {f.__name__: f for f in (dma_loop, dma_grid, add_layout, transpose_add, flash_loop, matmul_nt,
                                    batched_matmul, int8_matmul, col_sum)}
