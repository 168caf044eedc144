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

import math
from dataclasses import replace

from ...findings import Finding
from ..run.plan import Plan
from .faces import Faces
from .figures import num, of_output


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
               f"{num(x.get('max_abs_error', 0.0))} ({of_output(x.get('relative_to_output', 0.0))}): small here, "
               f"but the same kernel is wrong far beyond rounding on {there}, of the "
               "same dtype, so this is that logic error, not a precision problem")
    return replace(f.with_facts(one_cause=True, far_case=far.case if shown else None), id="wrong-result",
                   message=message)


# ---- one length taken from the wrong dimension -------------------------------------------
#
# A loop or slice whose length is read from the wrong dimension (``x.shape[1] // CHUNK``
# where the chunks run down the rows) overruns on a case whose other dimension is the
# larger (out of bounds) and stops short on one where it is the smaller (rows never
# stored): two symptoms, two cases, one bug. Tied only when the numbers say so exactly:
# on every case with never-stored memory, what is never stored is the trailing slab of
# one axis from the index that equals the size of one other dimension, the same axes on
# every case, and every wrong element is one never stored; an out-of-bounds slice of that
# axis is the same bug where the other dimension is the larger. Evidence for one problem
# and its fix (``feedback.evidence``); the points each test lost stay as they were.

def _short_along(f: Finding, shape: tuple[int, ...]) -> tuple[int, int] | None:
    """(axis, other dimension) when ``f``'s never-stored elements are exactly the trailing
    slab of ``axis`` from the size of the other dimension, else None."""
    x = f.facts()
    never, first = x.get("never_written"), x.get("first_never")
    if not isinstance(never, int) or not isinstance(first, list) or len(first) != len(shape) or len(shape) < 2:
        return None
    if x.get("wrong") != x.get("wrong_unwritten") or not all(isinstance(i, int) for i in first):
        return None
    moved = [a for a, i in enumerate(first) if i]
    if len(moved) != 1:
        return None
    axis, edge = moved[0], first[moved[0]]
    rest = math.prod(n for a, n in enumerate(shape) if a != axis)
    others = [d for d, n in enumerate(shape) if d != axis and n == edge and n != shape[axis]]
    if never != (shape[axis] - edge) * rest or len(others) != 1:
        return None
    return axis, others[0]


def _over_along(f: Finding, shape: tuple[int, ...], axis: int, dim: int) -> bool:
    """An out-of-bounds slice of ``axis`` on a case whose dimension ``dim`` is the larger."""
    s = f.facts().get("slice")
    return (f.id == "out-of-bounds" and isinstance(s, dict) and s.get("dim") == shape[axis]
            and shape[dim] > shape[axis])


def one_length(plan: Plan, findings: list[Finding]) -> list[Finding]:
    """``findings`` with a length from the wrong dimension said as one bug: every finding
    of it carries ``length_from`` (the axes, and each visible case's two sizes), and a
    case's never-stored memory is tied to the out-of-bounds slice (``same_bug_as``)."""
    a = plan.assignment
    shapes = {c.name: a.output_shape(c) for c in a.cases}
    short = {}
    for f in findings:
        if f.id == "uninitialized-memory" and f.case in shapes and f.case not in short:
            found = _short_along(f, shapes[f.case])
            if found is not None:
                short[f.case] = found
    if len(set(short.values())) != 1:
        return findings
    axis, dim = next(iter(short.values()))
    over = {f.case for f in findings if f.case in shapes and _over_along(f, shapes[f.case], axis, dim)}
    if len(short) + len(over) < 2:
        return findings
    shown = [[c.name, shapes[c.name][axis], shapes[c.name][dim]] for c in a.cases
             if c.visible and c.name in short.keys() | over]
    fact = {"axis": axis, "dim": dim, "rank": len(next(iter(shapes.values()))), "cases": shown}
    out = []
    for f in findings:
        if f.id == "uninitialized-memory" and f.case in short:
            f = f.with_facts(length_from=fact, **({"same_bug_as": "out-of-bounds"} if over else {}))
        elif f.id == "out-of-bounds" and f.case in over:
            f = f.with_facts(length_from=fact)
        out.append(f)
    return out


def one_map(plan: Plan, findings: list[Finding]) -> list[Finding]:
    """``findings`` with an index map whose grid axes are crossed said as one bug: past
    the end where the array's block counts along the two axes differ (the static scan's
    ``map_axes``: that operand), wrong blocks where they match. Every wrong result is
    tied to it (``same_bug_as``) only when each visible one's missing block is that same
    input's (``unread_needed``); a secret case's then goes with them, as one wrong
    formula is one finding on every case it breaks (correctness tests only: a probe's
    stress input is its own evidence). The points each test lost stay."""
    crossed = {x["map_axes"] for f in findings if f.id == "out-of-bounds"
               and isinstance((x := f.facts()).get("map_axes"), str)}
    # A correctness test's own comparison on one of the spec's cases (a stress input's is a probe's).
    cases = {c.name: c for c in plan.assignment.cases}
    wrong = [f for f in findings if f.id == "wrong-result" and f.check == "correctness" and f.case in cases
             and not f.same_bug_as]
    seen = [f for f in wrong if cases[f.case].visible]
    if len(crossed) != 1 or not seen:
        return findings
    (operand,) = crossed
    if not all(isinstance(u := f.facts().get("unread_needed"), dict) and u.get("input") == operand for f in seen):
        return findings
    tied = {id(f) for f in wrong}
    return [f.with_facts(same_bug_as="out-of-bounds") if id(f) in tied else f for f in findings]


# ---- memory read before the DMA that fills it lands -----------------------------------------
#
# A prefetch into the slot still being read (``buf.at[cur]`` for ``buf.at[nxt]``) is one
# bug that TPU interpret mode's race detector sees as a DMA write racing the read, and the
# fill reruns see as output that depends on memory never written (the other slot is
# never filled). Tied only when the racing read is the kernel's one output store (what the
# fills changed is what that read stored) and the memory was read before written (not
# elements never stored, not blocks never visited); the points each test lost stay.

def _racing_read(f: Finding) -> str | None:
    """The student's line ("file.py:24") of a race's read, when the race is one DMA write
    against one read of the same buffer; else None."""
    accesses = [a for a in f.facts().get("accesses") or [] if isinstance(a, dict)]
    if f.id != "data-race" or len(accesses) != 2 or {a.get("access") for a in accesses} != {"read", "write"}:
        return None
    read = next(a for a in accesses if a.get("access") == "read")
    where = str(read.get("where", "")).split(" ")[0]
    return where.rsplit(":", 1)[0] if where.count(":") >= 2 else None


def _read_first(f: Finding) -> bool:
    x = f.facts()
    return (f.id == "uninitialized-memory" and f.problem != "unwritten-blocks" and not x.get("unwritten_count")
            and not x.get("never_written") and not f.same_bug_as)


def one_race(findings: list[Finding], stores: frozenset[str]) -> list[Finding]:
    """``findings`` with memory read before written tied to the DMA race on its case whose
    read is the kernel's one output store (``stores``: that store's "file.py:line")."""
    if len(stores) != 1:
        return findings
    raced = {f.case for f in findings if f.case is not None and _racing_read(f) in stores}
    return [f.with_facts(same_bug_as="data-race") if f.case in raced and _read_first(f) else f for f in findings]
