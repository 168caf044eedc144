"""Numerics stress: the probe case rerun with inputs that strain floating point
(large-magnitude values, long reductions, bfloat16), and an error analysis that
tells a precision problem from a logic error.

The spec's cases are sized to expose indexing bugs; precision problems grow
with the magnitude of the values and the length of the reductions, so the
stress inputs push those (``[[probes.numerics.stress]]``). The runs use the
generic interpreter: both interpreters run the kernel's real arithmetic in the
kernel's dtypes, and the generic one is the cheaper by 30x per grid step.
"""
from __future__ import annotations

import math

import numpy as np

from ..compare import compare
from ..findings import Finding
from ..sandbox import read_output
from .base import Probe, ProbeResults

# Mantissa bits (with the implicit one) of the float dtypes: the precision a
# correct kernel keeps, against which the error's effective bits are read.
MANTISSA_BITS = {"float32": 24, "bfloat16": 8, "float16": 11}


def plan_numerics(assignment, case, rubric):
    return [{"variant": f"stress-{s.name}", "rung": "generic", "params": {}, "stress": s.name}
            for s in rubric.stress]


def effective_bits(relative_error: float) -> float | None:
    """Bits of the output that are right, read from the largest error relative to
    the output's magnitude (2^-bits): ~8 is a bfloat16 accumulator, ~1 or less a
    logic error."""
    if not math.isfinite(relative_error) or relative_error <= 0:
        return None
    return round(-math.log2(relative_error), 1)


def judge_numerics(r: ProbeResults) -> list[Finding]:
    plain = r.correctness.get("generic") or r.correctness.get("tpu-interpret")
    if r.passes(plain) is not True:
        # Wrong on the plain probe case already: the correctness tests report that
        # bug; a stressed rerun of it would only charge it again.
        return []
    a = r.assignment
    for stress in r.rubric.stress:
        variant = f"stress-{stress.name}"
        outcome = r.outcomes.get(variant)
        if outcome is None or outcome.status != "ok" or variant not in r.stress:
            continue
        case, reference = r.stress[variant]
        out = read_output(outcome, r.out_dir)
        if isinstance(out, str) or out.shape != reference.shape:
            continue
        c = compare(out, reference, a.tolerance(case.dtype), a.reduction_length(case), a.numerics_bound)
        if c.ok:
            continue
        bits = effective_bits(c.finite_relative if c.nonfinite else c.relative_to_output)
        described = _describe(a, case, stress)
        evidence = dict(c.evidence(), stress=stress.name, stress_case=described,
                        effective_bits=bits, dtype_bits=MANTISSA_BITS.get(case.dtype),
                        reduction_length=a.reduction_length(case))
        if c.verdict == "numerics":
            why = (f"{c.nonfinite} of {c.total} outputs are NaN or Inf where the float64 reference "
                   "is finite: an intermediate overflows (e.g. exp of a large value)"
                   if c.nonfinite else
                   f"the error is {c.relative_to_output:.2%} of the output's magnitude (about "
                   f"{bits:g} correct bits, where {case.dtype} inputs allow "
                   f"{MANTISSA_BITS.get(case.dtype, '?')}): precision is lost, e.g. by accumulating "
                   "in a low-precision dtype")
            return [r.finding("numerics", f"with stress input '{stress.name}' ({described}) {why}",
                              **evidence)]
        return [r.finding("wrong-result", f"with stress input '{stress.name}' ({described}) the "
                          f"output is wrong far beyond rounding ({c.mismatches} of {c.total} "
                          "outputs): a logic error that the graded cases do not reach",
                          **evidence)]
    return []


def _describe(assignment, case, stress) -> str:
    parts = [f"{k}={v}" for k, v in stress.dims]
    if stress.dtype:
        parts.append(stress.dtype)
    parts += [f"{k} scaled by {v:g}" for k, v in stress.scale]
    return ", ".join(parts) or case.name


NUMERICS = Probe("numerics", "Numerics: stress inputs (large values, long reductions, bfloat16)",
                 "generic", ("numerics", "wrong-result"), plan_numerics, judge_numerics,
                 per_case=False)
