"""One kernel for every check: which program a size no test runs is vouched
for by, and whether it may be (pure data; no JAX).

The tracer is student code, asked once per input signature: each program it
hands over is a claim about that size only. The rule:
- every graded size (a correctness test's signature, visible or secret) is
  checked on its own program by every check that can run on it (``plan.build``):
  a function may build another kernel at another graded size (float32 products
  at ``precision=HIGHEST`` for float32 inputs only, a softmax specialised on N,
  block sizes chosen by the shape) and loses nothing for it;
- a size no test runs (the production size of the VMEM budget, a speed size of
  the estimate, a numerics stress input) must build a graded kernel: the same
  face (``canonical``: the same equations, numbers and dtypes aside). Its
  numbers are its own, checked there by what reads that size, never charged as
  a departure: the VMEM budget counts that program's blocks, scratch and
  scoped buffers; the index-map scan there finds a block outside, an output
  block never written or revisited; a stress run compares that program's
  output with the reference. Otherwise (another face) the check that reads it
  gives no figure and says why (``inconsistent-kernel`` for the VMEM budget
  and the numerics stress inputs; "No estimate" for the speed estimate).
- what no check at that size reads is held to the graded kernels by the rules
  they follow (``numbers``): a stress input's dtypes (a precision check of a
  kernel that computes in another dtype there is no check of the graded one:
  ``inconsistent-kernel``), and for the speed estimate, which reads how much
  work the body does, its dtypes and the integers of its body (a departure
  withholds the estimate, and charges nothing).
What is said about it never names a secret case, nor which kernel one built.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..identity import numbers
from ..identity.canonical import Form, of as form_of
from ..run.plan import Draw, Plan

MAX_LISTED = 6      # sizes listed per kernel in the feedback
MAX_SAID = 3        # numbers named in a departure's reason


@dataclass(frozen=True)
class Vouch:
    """A size no test runs: whether a graded kernel vouches for its program."""
    label: str                   # the size in words
    matched: bool
    problem: str = ""            # "another-kernel" (no graded face) or "other-dtype" (at a stress input)
    reason: str = ""             # why not, in words (no secret value)
    # Why the speed estimate of this size is no estimate of the graded kernel's work
    # ("" when it is): a dtype or an integer of the body no graded size's rule gives.
    estimate: str = ""


@dataclass(frozen=True)
class Faces:
    forms: dict[int, Form]                    # signature -> its program's canonical form
    graded: tuple[str, ...]                   # distinct faces of the correctness tests' signatures
    vouches: dict[int, Vouch] = field(default_factory=dict)    # ungraded signature -> its verdict
    shown: tuple[tuple[str, tuple[str, ...]], ...] = ()        # graded face -> the visible sizes that built it

    def face(self, signature: int) -> str | None:
        form = self.forms.get(signature)
        return form.face if form is not None else None

    def graded_kernel(self, signature: int) -> bool:
        """The signature's program is vouched for by a graded one (True for a
        graded signature, and when unknown)."""
        vouch = self.vouches.get(signature)
        return vouch is None or vouch.matched

    def vouch(self, signature: int) -> Vouch | None:
        return self.vouches.get(signature)

    def fingerprint(self) -> str:
        """The graded kernel's fingerprint (the first correctness signature's): TA clusters."""
        return next((f.fingerprint for f in self.forms.values() if f.face == self.graded[0]), "") \
            if self.graded else next((f.fingerprint for f in self.forms.values()), "")

    def evidence(self, signature: int) -> dict:
        """What the feedback says of an ungraded size that no graded kernel vouches
        for (JSON-like): the size, why, and which visible sizes built which graded
        kernel. Secret cases are never listed, nor which kernel one built."""
        vouch = self.vouches[signature]
        listed = [sizes for _face, sizes in self.shown if sizes]
        programs = [{"kernel": i + 1, "sizes": list(sizes[:MAX_LISTED]), "more": max(0, len(sizes) - MAX_LISTED)}
                    for i, sizes in enumerate(listed)]
        return {"size": vouch.label, "why": vouch.reason, "problem": vouch.problem, "programs": programs}


def _dims(draw: Draw) -> str:
    return ", ".join(f"{k}={v}" for k, v in draw.case.dims)


def _label(draw: Draw, plan: Plan) -> str:
    """An ungraded size as the feedback names it (none is a secret case)."""
    stress = next((r.stress for r in plan.runs if r.draw == draw and r.stress is not None), None)
    if stress is not None:
        return f"stress input {stress.name} ({_dims(draw)}, {draw.case.dtype})"
    if draw.case.name == "production":
        return f"the production size ({_dims(draw)}, {draw.case.dtype})"
    return f"speed size {draw.case.name} ({_dims(draw)}, {draw.case.dtype})"


def _size(draw: Draw) -> numbers.Size:
    return numbers.Size(tuple(draw.case.dims), draw.case.dtype)


class _Numbers(dict):
    """Each signature's kernel numbers, read once (by signature, on first use)."""

    def __init__(self, docs: dict[int, dict]):
        super().__init__()
        self._docs = docs

    def __missing__(self, sig: int) -> numbers.Numbers:
        self[sig] = numbers.of(self._docs[sig])
        return self[sig]


def _said(off: list[numbers.Departure]) -> str:
    def one(d: numbers.Departure) -> str:
        there = " and ".join(str(v).removeprefix("dtype:") for v in d.graded)
        return (f"{d.where} is {str(d.value).removeprefix('dtype:')} here"
                + (f" ({there} at the graded sizes)" if there else ""))
    said = "; ".join(one(d) for d in off[:MAX_SAID])
    return said + (f" (and {len(off) - MAX_SAID} more)" if len(off) > MAX_SAID else "")


def _vouch(draw: Draw, plan: Plan, docs: dict[int, "_Numbers"], forms: dict[int, Form],
           graded: dict[int, Draw]) -> Vouch:
    label = _label(draw, plan)
    face = forms[draw.signature].face
    same = [sig for sig in graded if forms.get(sig) is not None and forms[sig].face == face]
    if not same:
        reason = (f"at {label} the function builds a kernel no graded case built (another kernel "
                  "body, grid structure or code path)")
        return Vouch(label, False, "another-kernel", reason, estimate=reason)
    mine = docs[draw.signature]
    theirs = [(_size(graded[sig]), docs[sig]) for sig in same]
    off = numbers.departures((_size(draw), mine), theirs)
    if not off:
        return Vouch(label, True)
    dtypes = [d for d in off if isinstance(d.value, str)]
    estimate = (f"at {label} the kernel's body has other numbers than the graded kernel's rules give "
                f"there: {_said(off)}; the estimate counts the work the body does, which no check at that "
                "size confirms")
    stress = any(r.draw == draw and r.stress is not None for r in plan.runs)
    if stress and dtypes:
        return Vouch(label, False, "other-dtype",
                     f"at {label} the function builds a graded kernel that computes in other dtypes than "
                     f"the graded sizes' rules give: {_said(dtypes)}; a precision check of it is no check "
                     "of the graded kernel", estimate=estimate)
    return Vouch(label, True, estimate=estimate)


def of(plan: Plan, programs: dict[int, Path]) -> Faces:
    """The faces of every signature that traced (``programs``: signature -> its
    checked document, written by the parent), and the verdict on each size no
    test runs."""
    docs = {sig: json.loads(path.read_text(encoding="utf-8")) for sig, path in sorted(programs.items())}
    forms = {sig: form_of(doc) for sig, doc in docs.items()}
    graded_draws: dict[int, Draw] = {}
    for run in plan.correctness():
        graded_draws.setdefault(run.draw.signature, run.draw)
    graded = tuple(dict.fromkeys(forms[s].face for s in graded_draws if s in forms))
    kernel_numbers = _Numbers(docs)
    vouches = {}
    for draw in plan.draws:
        sig = draw.signature
        if sig in graded_draws or sig in vouches or sig not in forms or not graded:
            continue
        vouches[sig] = _vouch(draw, plan, kernel_numbers, forms, graded_draws)
    shown: dict[str, list[str]] = {face: [] for face in graded}
    for run in plan.correctness():
        form = forms.get(run.draw.signature)
        label = f"{run.case.name} ({_dims(run.draw)}, {run.case.dtype})"
        if form is not None and run.case.visible and label not in shown[form.face]:
            shown[form.face].append(label)
    return Faces(forms, graded, vouches, tuple((f, tuple(s)) for f, s in shown.items()))
