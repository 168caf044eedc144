"""The speed model against the published timings: every point's estimate and
error, the in-sample (fit) and out-of-sample (validation) summaries kept
apart, the ranking of each table, the fit of the two constants, and the
Markdown table of docs/speed-validation.md (``benchmarks/speed_validation.py``).

Each kernel is traced on CPU under the TPU abstract target, as a grading
traces a submission, and its schedule facts come from the grader's own
analysis (``pallas_surface.cost``).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from autograder.pallas_surface.rungs import rung
from autograder.pallas_surface.static import cost
from autograder.pallas_surface.static.facts import Schedule, decode
from autograder.speed import model as speed

from .points import POINTS, Point


@dataclass(frozen=True)
class Row:
    point: Point
    schedule: Schedule
    estimate: speed.Estimate

    @property
    def error(self) -> float:
        return self.estimate.seconds / self.point.measured_s - 1


def schedule(point: Point) -> Schedule:
    fn, args = point.build()
    with rung.tpu_target():
        traced = rung.trace(fn, args)
    return decode("speed", cost.speed_facts(traced, point.chip, args))


def rows(points: tuple[Point, ...] = POINTS, fitted: speed.Fitted = speed.FITTED,
         schedules: dict[Point, Schedule] | None = None) -> list[Row]:
    out = []
    for p in points:
        s = schedules[p] if schedules is not None else schedule(p)
        out.append(Row(p, s, speed.estimate(s, fitted)))
    return out


@dataclass(frozen=True)
class Summary:
    points: int
    median: float            # of |error|
    worst: float


def summary(rs: list[Row], role: str) -> Summary:
    errors = [abs(r.error) for r in rs if r.point.role == role]
    return Summary(len(errors), statistics.median(errors) if errors else 0.0, max(errors, default=0.0))


def misranked(rs: list[Row]) -> list[str]:
    """Tables whose configurations the estimates put in another order than the measurements."""
    bad = []
    for table in dict.fromkeys(r.point.table for r in rs):
        group = [r for r in rs if r.point.table == table]
        if sorted(group, key=lambda r: r.estimate.seconds) != sorted(group, key=lambda r: r.point.measured_s):
            bad.append(table)
    return bad


def _ms(s: float) -> str:
    return f"{s * 1e3:.4g}"


def markdown(rs: list[Row]) -> str:
    head = ("| source | chip | kernel | dtype | shape | blocks (bm x bk x bn) | measured (ms) | estimated (ms) "
            "| error | bound | fit or validation |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
    body = "".join(
        f"| {r.point.source.split(' (')[0]} | {r.point.chip} | {r.point.kernel} | {r.point.dtype} | "
        f"{r.point.shape} | {r.point.blocks} | {_ms(r.point.measured_s)} | {_ms(r.estimate.seconds)} | "
        f"{r.error:+.1%} | {r.estimate.bound} | {r.point.role} |\n" for r in rs)
    return head + body
