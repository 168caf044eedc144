"""Test inputs: random, non-periodic data from each case's seed (numpy only).

All-ones or periodic data hides stale-block bugs, so every array is drawn from
a seeded generator. The seed is the case's public seed combined with a secret
run key drawn for each grading run: a submission cannot predict its data (so
caching answers by shape or replaying an earlier output fails). Every run of a
graded case, on either rung, shares stream 0: every check runs on every graded
case, and every probe is a differential experiment (same input, one switch
changed). A stress input (a case of its own) draws from its rung's stream.
Low-precision dtypes are rounded here, in the parent, so the reference is
computed on exactly the values the kernel receives. Arrays cross to the child
as float32/int32 ``.npy`` plus a dtype name.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...spec import Assignment, Case

_NUMPY_DTYPES = {"float32": np.float32, "float16": np.float16, "int32": np.int32}


@dataclass(frozen=True)
class CaseInput:
    name: str
    kind: str                 # "array" or "float"
    dtype: str                # the dtype the kernel receives ("float" for Python floats)
    array: np.ndarray | None  # exact values, in a transport dtype (float32 or int32)
    value: float | None = None


def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype of a spec's dtype name (bfloat16 through ml_dtypes)."""
    if dtype == "bfloat16":
        import ml_dtypes  # a numpy extension, not JAX: the parent stays JAX-free
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(_NUMPY_DTYPES[dtype])


def round_to(x: np.ndarray, dtype: str) -> np.ndarray:
    """``x`` with values exact in ``dtype``, carried as float32 (int32 for integers)."""
    if dtype == "bfloat16":     # through float32, as every input ever drawn was
        return x.astype(np.float32).astype(numpy_dtype(dtype)).astype(np.float32)
    if dtype == "float16":
        return x.astype(np.float16).astype(np.float32)
    return x.astype(_NUMPY_DTYPES[dtype])


PROBE_STREAM = 0


def stream(assignment: Assignment, case: Case, rung: str) -> int:
    """Which draw a run of ``case`` on ``rung`` gets (see the module docstring)."""
    if any(c.name == case.name for c in assignment.cases):
        return PROBE_STREAM
    return 1 + list(assignment.rungs).index(rung) if rung in assignment.rungs else PROBE_STREAM


def entropy(case: Case, run_key: int | None, stream_: int = PROBE_STREAM) -> list[int]:
    """The generator seed: numpy's SeedSequence mixes every word of it."""
    return [case.seed] if run_key is None else [case.seed, run_key, stream_]


def _draw(rng: np.random.Generator, dtype: str, distribution: str, scale: float, shape) -> np.ndarray:
    if dtype == "int32":
        return rng.integers(-int(scale * 100), int(scale * 100) + 1, size=shape)
    if distribution == "uniform":
        return rng.uniform(-scale, scale, size=shape)
    return rng.standard_normal(shape) * scale


def make(assignment: Assignment, case: Case, seed: list[int] | None = None) -> list[CaseInput]:
    rng = np.random.default_rng(seed if seed is not None else [case.seed])
    scales = dict(case.scale)
    params = dict(case.params)
    out = []
    for spec in assignment.inputs:
        if spec.kind == "float":
            out.append(CaseInput(spec.name, "float", "float", None, params[spec.name]))
            continue
        shape = assignment.shape(spec.shape, case)
        dtype = assignment.dtype_of(spec.dtype, case)
        raw = _draw(rng, dtype, spec.distribution, scales.get(spec.name, spec.scale), shape)
        out.append(CaseInput(spec.name, "array", dtype, round_to(raw, dtype)))
    return out


# Integer inputs this small can be index or mask tables (scalar prefetch lives in SMEM, 1 MiB).
INDEX_TABLE_ELEMENTS = 1 << 18


def index_tables(assignment: Assignment, case: Case, seed: list[int]) -> dict[int, CaseInput]:
    """The small integer inputs of a draw that is otherwise shapes only (a [speed] size): a
    kernel's scalar-prefetch tables may be computed from them, and the speed estimate of a
    data-dependent grid needs their values. Each is drawn from the seed and its position (the
    large inputs are never drawn at that size)."""
    scales = dict(case.scale)
    out = {}
    for i, spec in enumerate(assignment.inputs):
        if spec.kind == "float" or assignment.dtype_of(spec.dtype, case) != "int32":
            continue
        shape = assignment.shape(spec.shape, case)
        if int(np.prod(shape, dtype=np.int64)) <= INDEX_TABLE_ELEMENTS:
            rng = np.random.default_rng([*seed, i])
            raw = _draw(rng, "int32", spec.distribution, scales.get(spec.name, spec.scale), shape)
            out[i] = CaseInput(spec.name, "array", "int32", round_to(raw, "int32"))
    return out


def generator_source(assignment: Assignment, case: Case, seed: list[int] | None = None) -> list[str]:
    """Python lines that rebuild exactly these inputs, for the reproduction snippet."""
    lines = [f"rng = np.random.default_rng({list(seed) if seed is not None else [case.seed]})"]
    scales = dict(case.scale)
    params = dict(case.params)
    for spec in assignment.inputs:
        if spec.kind == "float":
            lines.append(f"{spec.name} = {params[spec.name]!r}")
            continue
        shape = assignment.shape(spec.shape, case)
        dtype = assignment.dtype_of(spec.dtype, case)
        scale = scales.get(spec.name, spec.scale)
        if dtype == "int32":
            draw = f"rng.integers({-int(scale * 100)}, {int(scale * 100) + 1}, size={shape})"
        elif spec.distribution == "uniform":
            draw = f"rng.uniform({-scale!r}, {scale!r}, size={shape})"
        else:
            draw = f"rng.standard_normal({shape}) * {scale!r}"
        if dtype in ("bfloat16", "float16"):
            lines.append(f"{spec.name} = jnp.asarray(({draw}).astype(np.float32), dtype=jnp.{dtype})")
        else:
            lines.append(f"{spec.name} = jnp.asarray(({draw}).astype(np.{dtype}))")
    return lines
