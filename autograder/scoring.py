"""Rubric from the spec + findings -> scored tests. Never runs code, never imports JAX.

One Gradescope test per (case, rung): a case's points are split evenly across
the spec's rungs. A test that loses points carries exactly one primary
finding, chosen by root-cause precedence.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .findings import RUNGS, Finding, primary
from .spec import Assignment, Case


@dataclass(frozen=True)
class TestResult:
    number: str
    name: str
    case: Case
    rung: str
    max_score: float
    score: float
    finding: Finding | None                 # the primary finding, None when passed
    others: tuple[Finding, ...] = ()       # further findings on the same test (not charged)
    ladder: tuple[tuple[str, str], ...] = field(default=())  # (rung, passed|failed|not-run)

    @property
    def passed(self) -> bool:
        return self.finding is None

    @property
    def tags(self) -> list[str]:
        return [self.finding.id] if self.finding else []


def score(assignment: Assignment, findings: list[Finding], rungs: tuple[str, ...],
          cases: tuple[Case, ...]) -> list[TestResult]:
    """Score every (case, rung) test. Submission-wide findings (case None) fail every test."""
    wide = [f for f in findings if f.case is None]
    by_test: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        if f.case is not None:
            by_test.setdefault((f.case, f.rung), []).append(f)
    tests = []
    for ci, case in enumerate(cases, 1):
        share = case.points / len(assignment.rungs)   # stable per test, whatever is selected
        states = []
        for rung in assignment.rungs:
            if rung not in rungs:
                states.append((rung, "not-run"))
            else:
                states.append((rung, "failed" if wide or by_test.get((case.name, rung)) else "passed"))
        for ri, rung in enumerate(rungs, 1):
            hits = wide + by_test.get((case.name, rung), [])
            main = primary(hits)
            label = case.name if case.visible else f"hidden case {ci}"
            tests.append(TestResult(
                number=f"{ci}.{ri}", name=f"{label} · {RUNGS[rung]}", case=case, rung=rung,
                max_score=share, score=0.0 if main else share, finding=main,
                others=tuple(f for f in hits if f is not main), ladder=tuple(states)))
    return tests
