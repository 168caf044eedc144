"""The report of one grading: what the pipeline produced, built once at its
end (scored tests, findings, the run's facts, the speed estimate), frozen.
Feedback, results.json and the staff's report are all read from it."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..findings import Finding
from ..isolation.outcome import Outcome
from ..spec import Assignment
from ..speed.grade import SpeedGrade
from .identity.sources import KernelSource, Sources
from .judge.scoring import TestResult
from .run.custom_checks import CheckSuite
from .run.plan import Plan, Run


@dataclass(frozen=True)
class Report:
    assignment: Assignment
    submission: str
    plan: Plan
    tests: tuple[TestResult, ...]
    findings: tuple[Finding, ...]
    uploaded_as: str | None
    seconds: float
    notes: tuple[str, ...] = ()        # said once, at the top of the feedback
    student_uid: int | None = None     # the uid student code ran as (staff data)
    jax_version: str | None = None
    children: int = 0
    peak_child_rss_mb: float = 0.0
    student_output: str = ""
    output_bytes: int = 0
    leftovers_killed: int = 0
    outcomes: dict[Run, Outcome] = field(default_factory=dict)   # for benchmarks and calibration
    startup_s: float = 0.0
    custom: CheckSuite | None = None   # the instructor's checks (``[checks]``)
    fingerprint: str = ""              # the graded program's structure (TA review)
    speed: SpeedGrade | None = None    # the TPU time estimate ([speed])
    programs: dict[str, str] = field(default_factory=dict)  # speed size -> its checked program (kept)
    sources: Sources = Sources()       # where the graded program's parts are in the student's file

    @property
    def kernels(self) -> tuple[KernelSource, ...]:
        """Where the graded program's pallas_calls are (fix lines name them)."""
        return self.sources.kernels

    @property
    def run_key(self) -> int:
        return self.plan.run_key

    @property
    def replay(self) -> bool:
        """Some cases or rungs only (--case/--rung): no grade; its score counts what ran."""
        return self.plan.replay

    @property
    def score(self) -> float:
        """Points earned; a replay's counts only the tests it ran (``TestResult.counted``)."""
        return sum(t.score for t in self.tests if t.counted) + (self.custom.score if self.custom else 0.0) + \
            (self.speed.score if self.speed else 0.0)

    @property
    def max_score(self) -> float:
        return sum(t.max_score for t in self.tests if t.counted) + \
            (self.custom.max_score if self.custom else 0.0) + (self.speed.max_score if self.speed else 0.0)

    def replay_tally(self) -> dict | None:
        """What a replay counted (None: not a replay): the tests it replays, those it
        counts, and those it did not run in full, with their points (counted neither way)."""
        if not self.replay:
            return None
        left = [t for t in self.tests if not t.counted]
        return {"tests": [t.number for t in self.tests if t.probe is None],
                "counted": [t.number for t in self.tests if t.counted],
                "not_counted": [t.number for t in left], "not_counted_points": sum(t.max_score for t in left)}

    @property
    def wide_findings(self) -> list[Finding]:
        return [f for f in self.findings if f.case is None]

    def seconds_by_check(self) -> dict[str, float]:
        """Child time spent per check ("correctness" for the tests), runs that
        really ran only: where a grading's time goes (staff data)."""
        out: dict[str, float] = {}
        for run, outcome in self.outcomes.items():
            if outcome.ran:
                key = run.probe or "correctness"
                out[key] = round(out.get(key, 0.0) + outcome.seconds, 3)
        return out
