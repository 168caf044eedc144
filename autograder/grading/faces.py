"""One kernel for every check: the face of each traced signature, and which
checks a function with several faces, or a size the tests never ran, leaves
unvouched (pure data; no JAX).

The tracer is student code, asked once per input signature: each program it
hands over is a claim about that size only. A face (``canonical.Form.face``)
is the kernel a program runs with shape-derived values set aside. The rule:
- every correctness test is graded on its own signature's program, and every
  static check runs on every graded signature (``plan.build``);
- the dynamic probes examine the probe case's kernel: they vouch for the
  function only when every graded signature has that one face;
- the production size (VMEM), the speed sizes (the estimate) and the numerics
  stress inputs are of the kernel the tests graded only when their face is one
  of the graded faces; otherwise they give no number.
A kernel that picks its block sizes (or unrolls a loop) by the shape keeps one
face; one that switches code paths by size does not, and is graded by its worst
face: the checks that cannot vouch for every face earn nothing, and the
feedback lists which sizes gave which kernel.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .canonical import Form, of as form_of
from .plan import Draw, Plan

MAX_LISTED = 6      # sizes listed per kernel in the feedback


@dataclass(frozen=True)
class Faces:
    forms: dict[int, Form]                   # signature -> its program's canonical form
    graded: tuple[str, ...]                  # distinct faces of the correctness tests' signatures
    sizes: tuple[tuple[str, tuple[str, ...]], ...]   # face -> the sizes that gave it (secret ones unnamed)

    def face(self, signature: int) -> str | None:
        form = self.forms.get(signature)
        return form.face if form is not None else None

    @property
    def one_kernel(self) -> bool:
        return len(self.graded) <= 1

    def graded_kernel(self, signature: int) -> bool:
        """The signature ran a kernel some correctness test graded (True when unknown)."""
        face = self.face(signature)
        return face is None or not self.graded or face in self.graded

    def fingerprint(self) -> str:
        """The graded kernel's fingerprint (the first correctness signature's): TA clusters."""
        return next((f.fingerprint for f in self.forms.values() if f.face == self.graded[0]), "") \
            if self.graded else next((f.fingerprint for f in self.forms.values()), "")

    def evidence(self) -> dict:
        """Which sizes gave which kernel, for the feedback (JSON-like)."""
        return {"programs": [{"kernel": i + 1, "sizes": list(sizes[:MAX_LISTED]),
                              "more": max(0, len(sizes) - MAX_LISTED)}
                             for i, (_face, sizes) in enumerate(self.sizes)]}


def _label(draw: Draw, plan: Plan) -> str:
    """A size as the feedback names it: a secret case's never."""
    case = draw.case
    dims = ", ".join(f"{k}={v}" for k, v in case.dims)
    runs = [r for r in plan.runs if r.draw.signature == draw.signature]
    if draw.abstract:
        return f"{case.name} ({dims})"
    if any(r.probe is None for r in runs) and not any(r.probe is None and r.case.visible for r in runs):
        return "a secret case"
    return f"{case.name} ({dims}, {case.dtype})" if all(r.case.visible for r in runs) else "a secret case"


def of(plan: Plan, programs: dict[int, Path]) -> Faces:
    """The faces of every signature that traced (``programs``: signature -> its
    checked document, written by the parent)."""
    forms = {sig: form_of(json.loads(path.read_text(encoding="utf-8"))) for sig, path in sorted(programs.items())}
    graded: list[str] = []
    for run in plan.correctness():
        face = forms[run.draw.signature].face if run.draw.signature in forms else None
        if face is not None and face not in graded:
            graded.append(face)
    sizes: dict[str, list[str]] = {}
    for draw in plan.draws:
        form = forms.get(draw.signature)
        if form is not None:
            label = _label(draw, plan)
            if label not in sizes.setdefault(form.face, []):
                sizes[form.face].append(label)
    order = graded + [f for f in sizes if f not in graded]
    return Faces(forms, tuple(graded), tuple((f, tuple(sizes[f])) for f in order if f in sizes))
