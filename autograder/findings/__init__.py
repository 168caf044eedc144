"""The one immutable finding type, and the catalogue of stable finding IDs
(``catalogue``: each ID's one home, its explanation template beside it).

Checks produce findings; scoring and rendering consume them and never re-run
code. The bottom layer: imports nothing else from the package.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from .catalogue import CATALOGUE, PRECEDENCE, RUNGS, TEMPLATES, TEST_RUNGS, FindingKind

__all__ = ["CATALOGUE", "PRECEDENCE", "RUNGS", "TEMPLATES", "TEST_RUNGS", "CheckNote", "Finding", "FindingKind",
           "FrozenMap", "fix_line", "primary"]

class FrozenMap(tuple):
    """An immutable mapping stored as a tuple of (key, value) pairs."""

    __slots__ = ()


def _freeze(value: Any) -> Any:
    """Evidence must be JSON-like and immutable, so a finding can be shared freely."""
    if isinstance(value, Mapping):
        return FrozenMap((str(k), _freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"finding evidence must be JSON-like; got {type(value).__name__}: {value!r}")


@dataclass(frozen=True)
class Finding:
    """One observation about a submission.

    ``id``: catalogue ID; ``rung``: where it was seen; ``case``: the test case
    name or None for submission-wide findings; ``message``: one plain sentence;
    ``evidence``: structured facts for templates (frozen key/value pairs);
    ``check``: the check that produced it; ``run``: the plan index of the run
    it was seen on (the report reads that run's seed and parameters), if any.
    """

    id: str
    rung: str
    message: str
    case: str | None = None
    check: str = "correctness"
    evidence: FrozenMap = field(default=FrozenMap())
    run: int | None = None

    def __post_init__(self) -> None:
        if self.id not in CATALOGUE:
            raise ValueError(f"finding ID must be one of the catalogue; got {self.id!r}")
        if self.rung not in RUNGS:
            raise ValueError(f"finding rung must be one of {list(RUNGS)}; got {self.rung!r}")
        if not isinstance(self.evidence, FrozenMap):
            object.__setattr__(self, "evidence", _freeze(dict(self.evidence)))

    @classmethod
    def make(cls, id: str, rung: str, message: str, *, case: str | None = None,
             check: str = "correctness", run: int | None = None, **evidence: Any) -> "Finding":
        return cls(id=id, rung=rung, message=message, case=case, check=check,
                   evidence=_freeze(evidence), run=run)

    @property
    def kind(self) -> FindingKind:
        return CATALOGUE[self.id]

    def facts(self) -> dict[str, Any]:
        """Evidence as plain nested dicts/lists for templates and JSON."""
        return _thaw(self.evidence)

    def with_facts(self, **more: Any) -> "Finding":
        """This finding with more (or replaced) evidence."""
        return replace(self, evidence=_freeze({**self.facts(), **more}))

    @property
    def problem(self) -> str | None:
        """The kind of submission-error (or probe outcome) this is, if it says."""
        return dict(self.evidence).get("problem")

    @property
    def same_bug_as(self) -> str | None:
        """The catalogue ID of the finding whose bug this is, seen on another case as
        another symptom (``grading.judge.causes.one_length``), if the grader tied it."""
        tie = dict(self.evidence).get("same_bug_as")
        return tie if isinstance(tie, str) and tie in CATALOGUE else None


def _thaw(value: Any) -> Any:
    if isinstance(value, FrozenMap):
        return {k: _thaw(v) for k, v in value}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


def primary(findings: list[Finding]) -> Finding | None:
    """The root cause among findings for one test: the first by PRECEDENCE."""
    if not findings:
        return None
    return min(findings, key=lambda f: PRECEDENCE.index(f.id))


def fix_line(f: Finding) -> str:
    """The catalogue's one-line fix of ``f`` (by its problem or rule where the kind has a finer one)."""
    return f.kind.fix_for(f.facts())


@dataclass(frozen=True)
class CheckNote:
    """A probe check that could not run for a reason that is not the student's
    (the grader ran out of time, or failed itself): it costs nothing, and says so."""
    probe: str
    case: str
    text: str
    ran: bool = False        # the check ran and found what costs nothing (not: it could not run)
