"""The instructor solution as the students' baseline: timed first, guarded,
and timed again after the students to see that the machine did not drift.

A solution the chip refuses, that diverges, that is held (noisy, or any other
gate) or that has no device time from the profiler is no baseline: the run
stops with the reason, before any student is compared with it. Its second
timing (on the run's inputs, as every kernel's) is compared size by size
with the first; a change
beyond ``DRIFT`` is reported in speed.json and on the terminal (the chip's
clock, thermal state or a neighbour changed while the class was timed).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import kernel as stage
from .kernel import StageResult

DRIFT = 0.05        # the solution's medians may move this much (relative) between its two timings


class SolutionUnusable(SystemExit):
    """The instructor solution cannot be the baseline; the message says why."""


def timed(ctx: stage.Context, programs: dict[str, bytes], name: str = "solution") -> StageResult:
    """The solution through the whole stage, guarded: the baseline, or SolutionUnusable."""
    try:
        return guard(stage.run(ctx, name, programs))
    except SolutionUnusable:
        raise
    except Exception as e:  # noqa: BLE001 - whatever failed, nothing can be compared with it
        raise SolutionUnusable(f"pallas-autograder speed: the instructor solution cannot be the baseline: its stage "
                               f"failed: {type(e).__name__}: {e}"[:3000]) from None


def guard(sol: StageResult) -> StageResult:
    """``sol`` when it can be the baseline; SolutionUnusable otherwise."""
    why = ""
    if sol.status != "timed":
        detail = "; ".join(sol.holds) or sol.message or str(sol.evidence)
        why = f"it is {sol.status}: {detail}"
    else:
        wall = [s for s in sol.sizes if s.source != "profiler"]
        if wall:
            why = (f"at {wall[0].size} it was timed on the wall clock ({wall[0].clock_note}); students are never "
                   "compared with a wall-clock baseline")
    if why:
        raise SolutionUnusable(f"pallas-autograder speed: the instructor solution cannot be the baseline: {why}. "
                               "Nothing was ranked; fix this and run again.")
    return sol


@dataclass(frozen=True)
class Drift:
    bound: float
    sizes: dict[str, float]             # size -> second median / first - 1 (only sizes timed both times)
    exceeded: tuple[str, ...]
    again_status: str

    def to_json(self) -> dict:
        return {"bound": self.bound, "sizes": self.sizes, "exceeded": list(self.exceeded),
                "again_status": self.again_status}

    def message(self) -> str:
        if not self.exceeded:
            return ""
        worst = ", ".join(f"{s} {self.sizes[s]:+.1%}" for s in self.exceeded)
        return (f"the solution's time drifted beyond {self.bound:.0%} between its timings before and after the "
                f"students ({worst}): compare results timed at different points of the run with care")


def drift(before: StageResult, after: StageResult, bound: float = DRIFT) -> Drift:
    """How the solution's second timing differs from its first, size by size."""
    first = {s.size: s.median_s for s in before.sizes}
    sizes = {s.size: s.median_s / first[s.size] - 1 for s in after.sizes if first.get(s.size)}
    exceeded = tuple(s for s, d in sizes.items() if abs(d) > bound)
    if after.status not in ("timed", "held"):
        exceeded = tuple(first)
    return Drift(bound, sizes, exceeded, after.status)
