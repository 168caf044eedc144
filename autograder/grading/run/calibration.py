"""Time limits that fit the work: each run's limit comes from the instructor
solution's measured time for that run, with a margin, under the spec's ceiling.

``pallas-autograder calibrate SLUG`` grades ``solutions/SLUG.py`` a few times
and writes ``<assignment>/calibration-<jax release>.json`` (one per release the
course may grade on: the interpreters' speed differs between them): per run, the slowest time seen
and the grid points its kernel had. A grading then gives a run

    min(ceiling, max(MIN_RUN_S, MARGIN x measured x max(1, steps / measured steps)))

where ``steps`` is the student's own grid size, known once the function is
traced (a correct kernel with smaller blocks runs more grid points, and is
given proportionally longer). MARGIN covers a slower machine (Gradescope's
default container has half a CPU: about 3x this project's 2-core machines)
and a loaded one. Without a calibration, or with one made for another spec or
JAX, every run gets the ceiling (the spec's ``case_s``), and ``why_not`` says why.
"""
from __future__ import annotations

import hashlib
import json
import platform
from dataclasses import dataclass, field
from pathlib import Path

from ...pallas_surface.release import INSTALLED
from ...pallas_surface.static import facts
from ...pallas_surface.static.facts import Schedule
from ...spec import Assignment, course_release
from .plan import Run

PREFIX = "calibration-"


def file_name(release: str | None = None) -> str:
    """The calibration file for a JAX release (the installed one by default)."""
    return f"{PREFIX}{release or INSTALLED}.json"


MARGIN = 10.0
MIN_RUN_S = 10.0
MIN_STARTUP_S = 30.0


@dataclass(frozen=True)
class Measured:
    seconds: float
    grid_steps: int = 0


def run_id(run: Run) -> tuple[str, str, str]:
    """A run's stable name across gradings: (case, probe or "", variant or rung)."""
    return (run.case.name, run.probe or "", run.variant if run.probe else run.rung)


@dataclass(frozen=True)
class Calibration:
    spec_sha256: str
    jax: str
    machine: str
    startup_s: float
    runs: tuple[tuple[tuple[str, str, str], Measured], ...]
    # The solution's schedule facts per [speed] size: the speed estimate's yardstick.
    speed: dict[str, Schedule] = field(default_factory=dict, compare=False)

    def measured(self, run: Run) -> Measured | None:
        return dict(self.runs).get(run_id(run))


def spec_hash(assignment: Assignment) -> str:
    """Of the spec's text without its ``jax`` line (build writes the course's release
    there, which changes no time a run takes on that release)."""
    text = course_release.without_release((assignment.folder / "spec.toml").read_bytes().decode("utf-8"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load(assignment: Assignment) -> Calibration | None:
    """The assignment's calibration, or None when absent, unreadable or made
    for another spec or JAX release."""
    path = assignment.folder / file_name()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        cal = Calibration(raw["spec_sha256"], raw["jax"], raw["machine"], float(raw["startup_s"]),
                          tuple(((r["case"], r["probe"], r["run"]),
                                 Measured(float(r["seconds"]), int(r["grid_steps"])))
                                for r in raw["runs"]),
                          {str(size): facts.decode("speed", f) for size, f in (raw.get("speed") or {}).items()})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):   # FactsError is a ValueError
        return None
    if cal.spec_sha256 != spec_hash(assignment) or cal.jax != INSTALLED:
        return None
    return cal


def why_not(assignment: Assignment) -> str | None:
    """Why ``load`` gives no calibration (None when it gives one)."""
    if load(assignment) is not None:
        return None
    path = assignment.folder / file_name()
    fix = f"run `pallas-autograder calibrate {assignment.slug}` with jax {INSTALLED}"
    others = sorted(p.name for p in assignment.folder.glob(f"{PREFIX}*.json") if p != path)
    if not path.is_file():
        seen = f" ({', '.join(others)} are for other JAX releases, ignored)" if others else ""
        return f"no {path.name}{seen}: every run gets the spec's ceiling; {fix}"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if raw.get("jax") != INSTALLED:
            return f"{path.name} was made with jax {raw.get('jax')!r}, ignored; {fix}"
        if raw.get("spec_sha256") != spec_hash(assignment):
            return f"{path.name} was made for another spec.toml, ignored; {fix}"
    except (OSError, ValueError, AttributeError):
        pass
    return f"{path.name} cannot be read, ignored; {fix}"


def save(assignment: Assignment, startup_s: float, measured: dict[Run, Measured],
         speed: dict[str, Schedule] | None = None) -> Path:
    path = assignment.folder / file_name()
    rows = [{"case": c, "probe": p, "run": v, "seconds": round(m.seconds, 3), "grid_steps": m.grid_steps}
            for (c, p, v), m in sorted((run_id(r), m) for r, m in measured.items())]
    doc = {"spec_sha256": spec_hash(assignment), "jax": INSTALLED,
           "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}",
           "startup_s": round(startup_s, 3), "margin": MARGIN, "min_run_s": MIN_RUN_S, "runs": rows,
           "speed": {size: facts.encode(f) for size, f in (speed or {}).items()}}
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path


class Timing:
    """The limits of one grading's runs (``fixed_s``: one limit for every run,
    as ``--case-timeout`` asks)."""

    def __init__(self, assignment: Assignment, calibration: Calibration | None,
                 fixed_s: float | None = None):
        self.ceiling = fixed_s or assignment.limits.case_s
        self.startup_ceiling = assignment.limits.startup_s
        self.calibration = None if fixed_s else calibration
        # The solution's speed facts hold whatever the limits are (``--case-timeout`` too).
        self.solution_speed: dict[str, Schedule] = calibration.speed if calibration else {}

    def _scaled(self, m: Measured, factor: float = 1.0) -> float:
        return min(self.ceiling, max(MIN_RUN_S, MARGIN * m.seconds * factor))

    def limit(self, run: Run) -> float:
        m = self.calibration.measured(run) if self.calibration else None
        return self.ceiling if m is None else self._scaled(m)

    def after_trace(self, run: Run, grid_steps: int) -> float:
        m = self.calibration.measured(run) if self.calibration else None
        if m is None or m.grid_steps <= 0:
            return self.limit(run)
        return self._scaled(m, max(1.0, grid_steps / m.grid_steps))

    def trace_limit(self) -> float:
        """Tracing a signature (the student's Python around the kernel) takes well
        under a second for any kernel; a trace that takes longer is stuck."""
        return min(self.ceiling, MIN_RUN_S)

    def startup(self) -> float:
        if self.calibration is None:
            return self.startup_ceiling
        return min(self.startup_ceiling, max(MIN_STARTUP_S, MARGIN * self.calibration.startup_s))
