"""The speed estimate of one grading: per ``[speed]`` size, the kernel's
estimated TPU time beside the instructor solution's, their ratio, and the
points the spec's curve gives (none by default).

The solution's side comes from its calibration (``calibrate`` stores the
schedule facts of the solution at each size); the kernel's from the grading's
own static runs. Both go through the same model (``speed.estimate``), so a
change to the model moves both. Across sizes the ratio is a geometric mean (a
kernel twice as fast on one size and half as fast on another is even).
Imports no JAX.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..isolation.outcome import Outcome
from ..pallas_surface.static.facts import Schedule
from ..spec import Speed
from . import model as speed


@dataclass(frozen=True)
class SizeRun:
    """The grading's static run at one ``[speed]`` size, and what came of it."""
    size: str
    dims: tuple[tuple[str, int], ...]
    dtype: str
    outcome: Outcome | None           # None: not run
    # Why its program's estimate is no figure of the graded kernel ("" when it is):
    # no graded kernel vouches for it, or its grid and blocks do not cover the
    # arrays there, or its blocks overflow the chip's VMEM (``grading.grade``).
    withheld: str = ""


@dataclass(frozen=True)
class SizeEstimate:
    size: str
    dims: tuple[tuple[str, int], ...]
    dtype: str
    estimate: speed.Estimate | None
    solution: speed.Estimate | None
    problem: str = ""                   # why there is no estimate (in words)
    traced: bool = True                 # the kernel traced at this size (else nothing to show)

    @property
    def relative(self) -> float | None:
        """Solution time / the kernel's time (above 1: faster than the solution)."""
        if self.estimate is None or self.solution is None or self.estimate.seconds <= 0:
            return None
        return self.solution.seconds / self.estimate.seconds


@dataclass(frozen=True)
class SpeedGrade:
    chip: str
    sizes: tuple[SizeEstimate, ...]
    max_score: float
    score: float
    gate: str = ""                      # why the curve does not decide the points ("" when it does)
    correct: bool = True                # every correctness test passed (else: never scored or ranked)
    leaderboard: bool = False
    visibility: str = "visible"

    @property
    def seconds(self) -> float | None:
        """The kernel's estimate, geometric mean over sizes (None: some size has none)."""
        return geometric_mean([s.estimate.seconds if s.estimate else None for s in self.sizes])

    @property
    def relative(self) -> float | None:
        return geometric_mean([s.relative for s in self.sizes])

    @property
    def passed(self) -> bool:
        return self.score >= self.max_score


def geometric_mean(values: list[float | None]) -> float | None:
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def curve_score(spec: Speed, points: float, relative: float | None) -> float:
    return 0.0 if relative is None else round(points * spec.share(relative), 4)


def estimate_or_reason(facts: Schedule) -> tuple[speed.Estimate | None, str]:
    """The model's estimate, or None and why it cannot say (never a guess)."""
    try:
        return speed.estimate(facts), ""
    except speed.NoEstimate as e:
        return None, str(e)


def _size(run: SizeRun, solution_facts: Schedule | None) -> SizeEstimate:
    size, dims, dtype, outcome = run.size, run.dims, run.dtype, run.outcome
    solution = estimate_or_reason(solution_facts)[0] if solution_facts else None
    if outcome is None or not outcome.ok or not isinstance(outcome.facts, Schedule):
        why = outcome.status if outcome is not None else "not run"
        if outcome is not None and outcome.error_type:
            why = f"{outcome.error_type}: {outcome.message[:300]}"
        return SizeEstimate(size, dims, dtype, None, solution, f"the kernel could not be traced at "
                            f"this size ({why})", traced=False)
    if run.withheld:
        return SizeEstimate(size, dims, dtype, None, solution, run.withheld)
    estimate, why = estimate_or_reason(outcome.facts)
    return SizeEstimate(size, dims, dtype, estimate, solution, why)


def grade(spec: Speed | None, runs: tuple[SizeRun, ...], solution: dict[str, Schedule],
          correctness_passed: bool) -> SpeedGrade | None:
    """``solution``: size name -> the solution's facts (from its calibration)."""
    if spec is None or not runs:
        return None
    sizes = tuple(_size(r, solution.get(r.size)) for r in runs)
    g = SpeedGrade(spec.chip, sizes, spec.points, 0.0, leaderboard=spec.leaderboard,
                   visibility=spec.visibility)
    if not correctness_passed:
        # Shown all the same; never scored or ranked while the kernel is wrong.
        return replace(g, correct=False, gate="earns its points once every correctness test passes")
    if spec.points <= 0:
        return g
    if any(s.estimate is None for s in sizes):
        return replace(g, gate="no estimate for every size")
    if any(s.solution is None for s in sizes):
        # The instructor's calibration is missing: not the student's fault.
        return replace(g, score=spec.points,
                       gate="given: the instructor solution has no estimate to compare with yet (calibrate)")
    return replace(g, score=curve_score(spec, spec.points, g.relative))


NO_ESTIMATE = "no estimate"


def leaderboard(g: SpeedGrade | None) -> list[dict]:
    """Gradescope leaderboard rows: labelled an estimate, in milliseconds (fastest first); a
    correct kernel the model cannot estimate is listed as such, not left out or guessed."""
    if g is None or not g.leaderboard or not g.correct:
        return []
    value = round(g.seconds * 1e3, 4) if g.seconds is not None else NO_ESTIMATE
    return [{"name": f"Estimated TPU {g.chip} time (ms)", "value": value, "order": "asc"}]


def view(g: SpeedGrade | None) -> dict | None:
    """Plain data for the templates."""
    if g is None:
        return None
    return {"chip": g.chip, "scored": g.max_score > 0, "score": g.score, "max_score": g.max_score,
            "gate": g.gate, "relative": g.relative, "passed": g.passed, "correct": g.correct,
            "leaderboard": g.leaderboard,
            "sizes": [{"name": s.size, "dims": ", ".join(f"{k}={v}" for k, v in s.dims), "dtype": s.dtype,
                       "status": "estimated" if s.estimate else NO_ESTIMATE,
                       "text": speed.text(s.estimate).splitlines() if s.estimate else [],
                       "problem": s.problem, "relative": s.relative,
                       "solution_ms": s.solution.seconds * 1e3 if s.solution else None,
                       "ms": s.estimate.seconds * 1e3 if s.estimate else None} for s in g.sizes]}


def extra_data(g: SpeedGrade | None) -> dict | None:
    """For staff tools: every size's figures."""
    if g is None:
        return None
    return {"chip": g.chip, "score": g.score, "max_score": g.max_score, "relative": g.relative,
            "seconds": g.seconds, "gate": g.gate,
            "sizes": {s.size: {**(s.estimate.to_json() if s.estimate else {"status": NO_ESTIMATE,
                                                                                "problem": s.problem}),
                               "solution_seconds": s.solution.seconds if s.solution else None}
                      for s in g.sizes}}
