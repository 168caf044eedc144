"""One bug, one finding across cases: the correctness tests' labels reconciled
into one root cause before scoring (pure data; no JAX).

The comparison labels each case on its own: an error small next to the output
is ``numerics`` (a precision problem), a large one ``wrong-result`` (a logic
error). But a finding's kind is a property of the bug, not of one case's error
size. A softmax that calls ``exp2`` without the ``log2(e)`` factor is one wrong
formula: far off on most cases, and on a large-scale case, where nearly all the
mass is on one element, off by a few elements at 6e-4. Labelled case by case,
the same file got two findings on one run key and one on another.

So a finite ``numerics`` label is the logic error when the same kernel (the
same face, ``faces``) is far beyond rounding on another case of the same dtype:
precision loss does not explain a large error there, and the logic error
explains the small one here. What stays ``numerics``: NaN or Inf (an overflow,
``diagnosis.overflows``, or outputs past the dtype's range), a case of another
dtype (a bfloat16 accumulator is a bug of its own), a case another kernel
computed (a function may specialise by shape), and every case of a kernel that
is nowhere far off.
"""
from __future__ import annotations

from dataclasses import replace

from ...findings import Finding
from ..run.plan import Plan
from .faces import Faces
from .figures import num, pct


def _plain(f: Finding, fid: str) -> bool:
    """A correctness test's own comparison, labelled ``fid``, with finite outputs
    (not an overflow, not padding the kernel read, not a finding of another kind)."""
    facts = f.facts()
    return (f.id == fid and f.check == "correctness" and f.case is not None and not f.problem
            and not facts.get("nonfinite") and not facts.get("overflow") and not facts.get("padding_read"))


def one_cause(plan: Plan, findings: list[Finding], kernels: Faces | None) -> list[Finding]:
    """``findings`` with each finite ``numerics`` label of a kernel that is far
    off on another case of the same dtype said as the ``wrong-result`` it is."""
    a = plan.assignment

    def kernel(case_name: str) -> tuple[str | None, str]:
        run = next((r for r in plan.correctness() if r.case.name == case_name), None)
        face = kernels.face(run.draw.signature) if run is not None and kernels is not None else None
        return face, a.case(case_name).dtype

    wrong = {}
    for f in findings:
        if _plain(f, "wrong-result"):
            wrong.setdefault(kernel(f.case), f)
    out = []
    for f in findings:
        if _plain(f, "numerics"):
            key = kernel(f.case)
            far = wrong.get(key) if key[0] is not None else None
            if far is not None:
                f = _as_wrong(f, far, a.case(far.case).visible)
        out.append(f)
    return out


def _as_wrong(f: Finding, far: Finding, shown: bool) -> Finding:
    """A small error said as the logic error another case shows (that case named
    only when it is visible)."""
    x = f.facts()
    there = f"case {far.case}" if shown else "another case"
    message = (f"{x.get('mismatches')} of {x.get('total')} outputs are off by up to "
               f"{num(x.get('max_abs_error', 0.0))} ({pct(x.get('relative_to_output', 0.0))} of the output's "
               f"magnitude): small here, but the same kernel is wrong far beyond rounding on {there}, of the "
               "same dtype, so this is that logic error, not a precision problem")
    return replace(f.with_facts(one_cause=True, far_case=far.case if shown else None), id="wrong-result",
                   message=message)
