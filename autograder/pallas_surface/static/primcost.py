"""What one primitive of a kernel body costs a TPU, by unit: matrix-unit flops
by rate class (read from a ``dot_general``'s operand dtypes and precision),
vector-unit and EUP element operations, the bytes of a manual DMA; or
``Unanalysable``, saying which primitive the model has no cost for
(``stepwork`` walks a kernel body with these). Also what a program's DMAs do
in program order: how many are in flight after it, whether it starts any
itself (a loop that does is a pipeline; its iterations are pipeline steps)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import release

_INLINE = {**release.INLINE_CLOSED, **release.INLINE_OPEN}
# Matrix-unit rate classes (the speed model gives each its rate):
# bf16: bf16 (or f16, or mixed narrow) operands, one pass; f32: f32 operands at
# DEFAULT precision, which Mosaic rounds to bf16 for one pass (JAX's Pallas TPU
# guide, "details": "they will be rounded to bfloat16 unless float32 precision
# is requested"); bf16x3 / bf16x6: f32 at HIGH / HIGHEST precision, 3 / 6 bf16
# passes (jax.lax.Precision's docstring); int8, fp8, int4: both operands of
# that type (the chip's own rate where its table has one).
RATE_CLASSES = ("bf16", "f32", "bf16x3", "bf16x6", "int8", "fp8", "int4")
# Each f32 operand is split into this many bf16 pieces on the vector unit
# first (one rounding; hi/lo for 3 products; hi/mid/lo for 6).
_PIECES = {"f32": 1, "bf16x3": 2, "bf16x6": 3}

TRANSCENDENTAL = frozenset({"exp", "exp2", "log", "log1p", "tanh", "logistic", "sin", "cos", "tan", "pow",
                            "sqrt", "rsqrt", "erf", "erf_inv", "atan2", "reciprocal"})
REDUCTIONS = frozenset({"reduce_sum", "reduce_max", "reduce_min", "reduce_and", "reduce_or", "argmax",
                        "argmin"})
ELEMENTWISE = frozenset({
    "abs", "add", "add_any", "and", "ceil", "clamp", "clz", "concatenate", "convert_element_type", "eq",
    "floor", "ge", "gt", "integer_pow", "is_finite", "le", "lt", "max", "min", "mul", "ne", "neg",
    "nextafter", "not", "or", "pad", "population_count", "rem", "round", "select_n", "shift_left",
    "shift_right_arithmetic", "shift_right_logical", "sign", "square", "sub", "xor", "roll", "gather",
    "tile", "pack_elementwise", "unpack_elementwise", "stochastic_round", "random_bits", "prng_random_bits",
    "threefry2x32", "iota_2x32_shape", "random_fold_in", "prng_split"})
# Moved, not computed (layout, refs, scalars, synchronisation): no unit's time.
FREE = frozenset({
    "get", "swap", "masked_load", "masked_swap", "broadcast_in_dim", "broadcast_to", "reshape", "squeeze",
    "expand_dims", "program_id", "num_programs", "iota", "slice", "dynamic_slice", "transpose", "multiple_of",
    "bitcast", "bitcast_convert_type", "stop_gradient", "debug_callback", "debug_print", "delay",
    "semaphore_read", "semaphore_signal", "semaphore_wait", "dma_wait", "get_barrier_semaphore",
    "axis_index", "platform_index", "dim_as_value", "check", "trace_value", "empty_ref", "reshard", "split",
    "stack", "unstack", "add_dependency", "stage", "prng_seed", "random_seed", "random_wrap",
    "random_unwrap", "prng_join", "copy_p", "copy"})


def _lane_reduction(eqn) -> bool:
    """A reduction over the lane (last) axis: it goes through the cross-lane unit and its result
    comes back after a latency."""
    if eqn.primitive.name not in REDUCTIONS:
        return False
    aval = eqn.invars[0].aval
    return bool(aval.shape) and (len(aval.shape) - 1) in tuple(eqn.params.get("axes", ()))


class Unanalysable(Exception):
    """The kernel has something the model cannot put a time on (says what)."""


def _size(aval) -> int:
    return int(np.prod(getattr(aval, "shape", ()) or (1,), dtype=np.int64))


def _slots(aval) -> int:
    """The lane slots a value occupies in vector registers: its last two axes padded to the
    (8, 128) tile (a (256, 1) row statistic fills 32 registers, as a (256, 128) block does);
    scalars are not vector work."""
    shape = tuple(getattr(aval, "shape", ()) or ())
    if len(shape) < 1 or _size(aval) <= 1:
        return _size(aval)
    rows = -(-shape[-2] // 8) * 8 if len(shape) >= 2 else 1
    lead = int(np.prod(shape[:-2], dtype=np.int64)) if len(shape) > 2 else 1
    return lead * rows * (-(-shape[-1] // 128) * 128)


def _kind(dtype) -> str:
    name = np.dtype(dtype).name
    if name in ("int8", "uint8"):
        return "int8"
    if name in ("int4", "uint4"):
        return "int4"
    if name.startswith("float8"):
        return "fp8"
    return "f32" if np.dtype(dtype).itemsize >= 4 else "bf16"


def _passes(precision: Any) -> int:
    """bf16 passes of an f32 matmul: None and DEFAULT are one (Mosaic's default)."""
    if precision is None:
        return 1
    if isinstance(precision, (tuple, list)):
        return max(_passes(p) for p in precision)
    name = str(getattr(precision, "name", precision)).upper()
    if name in ("HIGHEST", "FLOAT32", "F32_F32_F32") or "X6" in name:
        return 6
    if name in ("HIGH", "BFLOAT16_3X", "TENSORFLOAT32") or "X3" in name:
        return 3
    return 1


def rate_class(lhs_dtype, rhs_dtype, precision: Any) -> str:
    """The matrix-unit rate class of a dot_general (see RATE_CLASSES)."""
    kinds = {_kind(lhs_dtype), _kind(rhs_dtype)}
    if len(kinds) == 1 and kinds <= {"int8", "int4", "fp8"}:
        return kinds.pop()
    if "f32" in kinds:
        return {1: "f32", 3: "bf16x3", 6: "bf16x6"}[_passes(precision)]
    return "bf16"


def _dot_cost(eqn) -> dict[str, float]:
    (lhs_contract, _rc), _batch = eqn.params["dimension_numbers"]
    lhs, rhs = eqn.invars[0].aval, eqn.invars[1].aval
    k = int(np.prod([lhs.shape[d] for d in lhs_contract], dtype=np.int64)) if lhs_contract else 1
    cls = rate_class(lhs.dtype, rhs.dtype, eqn.params.get("precision"))
    cost = {f"mxu:{cls}": 2.0 * _size(eqn.outvars[0].aval) * k}
    pieces = _PIECES.get(cls, 0)
    if pieces:
        # The f32 operands are rounded (or split) to bf16 on the vector unit.
        cost["vector"] = float(pieces * sum(_size(a) for a in (lhs, rhs) if _kind(a.dtype) == "f32"))
    return cost


def dma_shape(eqn) -> tuple[int, ...]:
    """The shape of the slice one DMA copies (its source as transformed; () when unreadable)."""
    try:
        return tuple(int(d) for d in eqn.params["tree"].unflatten([v.aval for v in eqn.invars])[0].shape)
    except Exception:  # noqa: BLE001 - a DMA whose slice cannot be read: no shape to name
        return ()


def _dma_bytes(eqn) -> int:
    """The bytes one DMA copies: its source as transformed (the slice it names)."""
    try:
        src = eqn.params["tree"].unflatten([v.aval for v in eqn.invars])[0]
        return int(np.prod(src.shape, dtype=np.int64)) * int(np.dtype(src.dtype).itemsize)
    except Exception:  # noqa: BLE001 - a DMA whose slice cannot be read counts its whole source
        inner = getattr(eqn.invars[0].aval, "inner_aval", eqn.invars[0].aval)
        return _size(inner) * int(np.dtype(inner.dtype).itemsize)


def eqn_cost(eqn) -> dict[str, float]:
    """One equation's work, by column (control flow is walked, not costed here)."""
    name = eqn.primitive.name
    out = eqn.outvars[0].aval if eqn.outvars else None
    if name == "dot_general":
        return _dot_cost(eqn)
    if name in TRANSCENDENTAL:
        return {"transcendental": float(_slots(out))}
    if name == "div":
        # A float divide is a reciprocal on the EUP and a multiply; integers divide on the vector unit.
        floating = np.issubdtype(np.dtype(out.dtype), np.floating)
        return {"transcendental": float(_slots(out)), "vector": float(_slots(out))} if floating else \
            {"vector": float(_slots(out))}
    if name in REDUCTIONS:
        return {"vector": float(_slots(eqn.invars[0].aval))}
    if name == "dma_start":
        return {"dma_bytes": float(_dma_bytes(eqn))}
    if name in ELEMENTWISE:
        return {"vector": float(_slots(out))}
    if name in FREE or name in _INLINE or name in ("cond", "while", "scan", release.RUN_SCOPED):
        return {}
    raise Unanalysable(f"the kernel body uses '{name}', which the model has no cost for")


def starts_dma(jaxpr) -> bool:
    """Whether ``jaxpr`` starts a DMA itself: in its own equations, branches and scopes, not in the
    loops it runs (their iterations are their own pipeline's steps)."""
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "dma_start":
            return True
        if name in ("scan", "while"):
            continue
        for sub in (v for v in eqn.params.values() for v in ([v] if not isinstance(v, tuple) else v)):
            inner = getattr(sub, "jaxpr", sub)
            if hasattr(inner, "eqns") and starts_dma(inner):
                return True
    return False


def dma_pass(jaxpr, inflight: int) -> int:
    """The manual DMAs in flight after ``jaxpr`` runs once from ``inflight`` (a branch: the one that
    leaves most in flight; a nested loop body: once)."""
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "dma_start":
            inflight += 1
        elif name == "dma_wait":
            inflight = max(inflight - 1, 0)
        elif name == "cond":
            inflight = max(dma_pass(b.jaxpr, inflight) for b in eqn.params["branches"])
        else:
            for sub in (v for v in eqn.params.values() for v in ([v] if not isinstance(v, tuple) else v)):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    inflight = dma_pass(inner, inflight)
    return inflight
