"""The finding kind: what every stage says of a class of bug, as one frozen,
validated type (the catalogue, ``catalogue``, holds the kinds as data), and the
names every kind's entries speak of (the rungs, the chip's source, the templates'
folder). Pure data; imports nothing else from the package."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal, Mapping

# The ladder of rungs, in the order a kernel climbs it.
RUNGS: dict[str, str] = {
    "static": "static analysis (nothing runs)",
    "generic": "generic interpreter (interpret=True)",
    "tpu-interpret": "TPU interpret mode (pltpu.InterpretParams)",
    "tpu": "real TPU (Mosaic compiler)",
}
# The rung in a test's name: short, so a test's line fits a terminal (the ladder
# under each explanation says which switch selects it).
TEST_RUNGS: dict[str, str] = {"generic": "generic interpreter", "tpu-interpret": "TPU interpret mode",
                              "tpu": "real TPU"}

# What a real TPU did with each class of bug (each kind's ``chip``): observed on a real
# TPU v5e (one TensorCore; jax 0.10.2, libtpu 0.0.42.1) by the chip check of 2026-12-06
# (``benchmarks/chip_check.py``, outcomes phase): every solution and corpus kernel compiled
# by Mosaic and run at its assignment's visible cases (docs/chip-outcomes.md lists each).
# Where a line says what other chips do, it cites the document; where nothing backs it, it
# says so. A line never promises more than the chip showed: a bug the v5e ran right is
# latent there, and the charge stands.
CHIP_SOURCE = "checked on a TPU v5e with jax 0.10.2; GLOSSARY.md says how"

# Each kind's explanation (``<id>.j2``) and the parts they share (``_*.j2``); the
# feedback's templates include them as "findings/<id>.j2".
TEMPLATES = Path(__file__).resolve().parent / "templates"


@dataclass(frozen=True)
class Claim:
    """A static finding no run confirms, said as a note: what the scan saw, why it costs nothing."""
    saw: str
    why: str


@dataclass(frozen=True)
class FindingKind:
    """One finding ID and what every stage says of it.

    ``detected_by``: which checks report it and how (the "how it is detected" column
    of the generated reference, docs/reference/findings.md; required).

    ``fix``: the one-line fix the report's problem list gives (the finding's own
    section gives the full fix with its evidence); ``fixes``: a finer fix by the
    value of the finding's fact ``fix_by`` (a submission error's problem, the
    compile rule the lowering refused), the general ``fix`` where none is named;
    ``fix_at``: where in the student's file the fix goes: "call" (how the kernel is
    called: grid, block specs, semantics, scratch: the pl.pallas_call's line),
    "body" (what the kernel computes: its body's lines), or "" (no one place).

    How scoring relates it to others (``grading.judge.scoring``): ``explains``: the
    rungs on which a probe's finding of this kind explains a failed correctness
    test on the same case (the test then reports the root cause, with the symptom
    kept beside it); ``symptom``: a correctness test's own comparison says this
    when another finding explains its failure (the symptom, never a problem of its
    own); ``same_bug``: the IDs that are another view of this bug, never charged
    again; ``same_bug_on_case``: another view only on the very case and rung whose
    own test this bug broke; ``same_bug_by``: by its ``fix_by`` fact, the IDs that
    are this bug on a case of the same dtype (a refused bfloat16 product);
    ``hang_explains_timeout``: a probe that saw the kernel hang under this kind
    explains a run's timeout on that rung (even before submission-error).

    ``hidden``: what a secret case's test says in place of the finding's message
    (which may quote what the tracer named); '' for its title in the grader's
    words (``titled``).

    ``chip``: what a real TPU did with this class of bug, the "real TPU" line of
    its ladder (``chip_line``: from the chip check's outcomes, never an assumption);
    ``chip_seen``: that line by the same evidence ``seen`` reads, where the chip's
    story differs (a mesh's two cores are not a parallel grid axis).

    ``seen``: the fix by what the finding's evidence shows (``feedback.evidence``
    reads the evidence and the kernel's facts and names the entry; ``{name}``
    fields are filled from them), before the general ``fix``: a row a mask leaves
    out is not an accumulator to zero, two cores of a mesh are not a parallel axis.

    ``drawn``: its evidence draws as a block map (``feedback.blockmaps.makers``).

    ``claim``: the index-map scan's finding of this kind is a claim about running
    that only a run can confirm (``grading.judge.unconfirmed``): what the scan saw,
    in the grader's words, and why it costs nothing where no run shows a difference.
    """

    id: str
    title: str
    summary: str
    fix: str
    detected_by: str = ""
    fixes: Mapping[str, str] = field(default_factory=dict)
    fix_by: str = "problem"
    fix_at: Literal["call", "body", ""] = ""
    seen: Mapping[str, str] = field(default_factory=dict)
    explains: tuple[str, ...] = ()
    symptom: bool = False
    same_bug: tuple[str, ...] = ()
    same_bug_on_case: tuple[str, ...] = ()
    same_bug_by: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    hang_explains_timeout: bool = False
    hidden: str = ""
    claim: Claim | None = None
    chip: str = ""
    chip_seen: Mapping[str, str] = field(default_factory=dict)
    drawn: bool = False

    def __post_init__(self) -> None:
        if not (self.id and self.title and self.summary and self.fix):
            raise ValueError(f"a finding kind needs an id, a title, a summary and a fix; got {self!r}")
        if not self.detected_by.strip():
            raise ValueError(f"{self.id}: detected_by must say which checks report it; got {self.detected_by!r}")
        if self.fix_at not in ("call", "body", ""):
            raise ValueError(f"{self.id}: fix_at must be 'call', 'body' or ''; got {self.fix_at!r}")
        if not set(self.explains) <= set(RUNGS):
            raise ValueError(f"{self.id}: explains must name rungs of {list(RUNGS)}; got {self.explains!r}")
        if not set(self.chip_seen) <= set(self.seen):
            raise ValueError(f"{self.id}: chip_seen must name entries of seen {sorted(self.seen)}; "
                             f"got {sorted(self.chip_seen)}")
        object.__setattr__(self, "fixes", MappingProxyType(dict(self.fixes)))
        object.__setattr__(self, "seen", MappingProxyType(dict(self.seen)))
        object.__setattr__(self, "chip_seen", MappingProxyType(dict(self.chip_seen)))

    def __hash__(self) -> int:
        # Its ID names it (``fixes`` is a read-only mapping, which has no hash of its own).
        return hash(self.id)

    @property
    def template(self) -> Path:
        """Its explanation template, beside this module."""
        return TEMPLATES / f"{self.id}.j2"

    def titled(self, problem: object = "") -> str:
        """Its title in lower case, with the problem when the finding names one."""
        return self.title.lower() + (f" ({str(problem).replace('-', ' ')})" if problem else "")

    def hidden_message(self, problem: object = "") -> str:
        """What a secret case's test says of a finding of this kind."""
        return self.hidden or self.titled(problem)

    def chip_line(self, seen: str = "") -> str:
        """The "real TPU" line of its ladder (by the evidence ``seen``, where it has one),
        with its source; says so where the chip was not asked."""
        chip = self.chip_seen.get(seen) or self.chip
        if not chip:
            return "not run on a real TPU for this class (no chip observation backs a claim here)"
        return f"{chip} ({CHIP_SOURCE})"

    def fix_for(self, facts: Mapping) -> str:
        """The one-line fix of a finding of this kind with these facts."""
        return self.fixes.get(facts.get(self.fix_by) or "", self.fix)

    def fix_seen(self, key: str, values: Mapping) -> str | None:
        """The fix the evidence calls for (``seen[key]`` filled from ``values``), or None."""
        text = self.seen.get(key)
        try:
            return text.format_map(dict(values)) if text is not None else None
        except (KeyError, IndexError, ValueError):
            return None
