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

from ...findings import Finding
from ...spec import DTYPES, ProbeTerms, SpecContext, Stress, TableReader, read_own_tolerance
from ..judge import regions
from ..judge.compare import compare, mismatches
from ..judge.figures import of_output
from ..run.plan import Variant
from .base import Exposes, Probe, ProbeResults

# Mantissa bits (with the implicit one) of the float dtypes: the precision a
# correct kernel keeps, against which the error's effective bits are read.
MANTISSA_BITS = {"float32": 24, "bfloat16": 8, "float16": 11}


def _stress_input(sr: TableReader, ctx: SpecContext) -> Stress:
    sr.unknown({"name", "dims", "dtype", "scale", "tolerance"})
    name = sr.get("name", str, "must be a short name")
    sdims = sr.get("dims", dict, "must be a table of dimension sizes", {})
    rules = {d.name: d for d in ctx.dims}
    for k, v in sdims.items():
        # A stress input may exceed the cases' max (a longer reduction): only the shape rules apply.
        if k not in rules or not rules[k].admits(v, check_max=False):
            raise sr.fail(f"dims.{k}", rules[k].text if k in rules else
                          f"must be a declared dimension ({sorted(rules)})", v)
    dtype = sr.get("dtype", str, f"must be one of {list(DTYPES)}", None)
    if dtype is not None and dtype not in ctx.tolerances:
        raise sr.fail("dtype", f"must be a dtype with a [tolerance.<dtype>] table "
                      f"({sorted(ctx.tolerances)})", dtype)
    arrays = {i.name for i in ctx.inputs if i.kind == "array"}
    scale = sr.get("scale", dict, "must be a table of input scales", {})
    for k, v in scale.items():
        if k not in arrays or isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise sr.fail(f"scale.{k}", "must map an array input's name to a positive number", v)
    tolerance = read_own_tolerance(sr, "this stress input's", "the tolerance of the stress input's dtype")
    return Stress(name, tuple(sorted((k, int(v)) for k, v in sdims.items())), dtype,
                  tuple(sorted((k, float(v)) for k, v in scale.items())), tolerance)


def read_stress(t: TableReader, ctx: SpecContext) -> tuple[Stress, ...]:
    """[[probes.numerics.stress]]: name, and dims / dtype / scale overrides of the probe case."""
    out = []
    for sr in t.items("stress"):
        stress = _stress_input(sr, ctx)
        if stress.name in {s.name for s in out}:
            raise sr.fail("name", "must be unique among stress inputs", stress.name)
        out.append(stress)
    if not out:
        raise t.fail("stress", "must list at least one stress input", [])
    return tuple(out)


def plan_numerics(assignment, case, rubric, run_key) -> tuple[Variant, ...]:
    # Each stress input's own index-map scan (static, cheap): its shapes are not the
    # probe case's, and the block map cuts its output into the kernel's blocks there.
    return tuple(v for s in rubric.settings for v in (
        Variant(f"stress-{s.name}", "generic", inputs=s),
        Variant(f"{SCAN}{s.name}", "static", analysis="index-maps", inputs=s)))


SCAN = "index-maps-"


def effective_bits(relative_error: float) -> float | None:
    """Bits of the output that are right, read from the largest error relative to
    the output's magnitude (2^-bits): ~8 is a bfloat16 accumulator, ~1 or less a
    logic error."""
    if not math.isfinite(relative_error) or relative_error <= 0:
        return None
    return round(-math.log2(relative_error), 1)


def _wrong_already(r: ProbeResults) -> bool:
    plain = r.correctness.get("generic") or r.correctness.get("tpu-interpret")
    return r.passes(plain) is not True


def stood_aside(r: ProbeResults) -> str | None:
    """Said on the check's test when the kernel is already wrong on the case the stress
    inputs are built on: its stress runs are not judged (they may show more)."""
    if not _wrong_already(r):
        return None
    return (f"the kernel is already wrong on case {r.case.name}, which "
            "the stress inputs are built on (charged in its tests); its stress runs were not judged, so fix "
            "that first and regrade")


def judge_numerics(r: ProbeResults) -> list[Finding]:
    if _wrong_already(r):
        # Wrong on the plain probe case already: the correctness tests report that
        # bug; a stressed rerun of it would only charge it again (``stood_aside`` says so).
        return []
    a = r.assignment
    for variant, run in r.runs.items():
        outcome = r.outcomes.get(variant)
        if outcome is None or outcome.output is None:
            continue
        case, stress = run.draw.case, run.stress
        tol, length = a.tolerance(case), a.reduction_length(case)   # the stress input's own, else its dtype's
        c = compare(outcome.output, r.references[run.draw], tol, length, a.numerics_bound)
        if c.ok:
            continue
        bits = effective_bits(c.finite_relative if c.nonfinite else c.relative_to_output)
        described = stress.describe()
        wrong = mismatches(outcome.output, r.references[run.draw], tol, length)
        scan = regions.output_operand(r.facts(SCAN + stress.name), wrong.shape)
        evidence = dict(c.evidence(), stress=stress.name, stress_case=described,
                        effective_bits=bits, dtype_bits=MANTISSA_BITS.get(case.dtype),
                        reduction_length=length, wrong_by_block=regions.per_block(wrong, scan))
        if c.verdict == "numerics":
            why = (f"{c.nonfinite} of {c.total} outputs are NaN or Inf where the float64 reference "
                   "is finite: an intermediate overflows (e.g. exp of a large value)"
                   if c.nonfinite else
                   f"the error is {of_output(c.relative_to_output)} (about "
                   f"{bits:g} correct bits, where {case.dtype} inputs allow "
                   f"{MANTISSA_BITS.get(case.dtype, '?')}): precision is lost, e.g. by accumulating "
                   "in a low-precision dtype")
            return [r.finding("numerics", f"with stress input '{stress.name}' ({described}) {why}",
                              variant=variant, **evidence)]
        return [r.finding("wrong-result", f"with stress input '{stress.name}' ({described}) the "
                          f"output is wrong far beyond rounding ({c.mismatches} of {c.total} "
                          "outputs): a logic error that the graded cases do not reach",
                          variant=variant, **evidence)]
    return []


NUMERICS = Probe(
    ProbeTerms("numerics", "Numerics: stress inputs (large values, long reductions, bfloat16)", "generic",
               ("numerics", "wrong-result"), per_case=False, keys=frozenset({"stress"}), read_settings=read_stress),
    plan_numerics, judge_numerics, aside=stood_aside,
    note="reruns with stress inputs (large values, long reductions, bfloat16): precision loss or "
         "overflow that the graded cases do not reach.",
    exposes=(Exposes("wrong-result", "on this stress input"),))
