"""The `calibrate` verb: measure the instructor solution, run by run, so that
each run's time limit fits the work (see ``calibration``)."""
from __future__ import annotations

from pathlib import Path

from ..grading import assignments, grade
from ..grading.run import calibration
from ..spec import Assignment


def calibrate(assignment: Assignment, solution: Path | None = None, repeat: int = 3) -> tuple[Path, dict]:
    """Grade the solution ``repeat`` times with the spec's ceilings and keep,
    per run, the slowest time seen. Refuses a solution that is not clean."""
    solution = solution or assignment.solution
    worst: dict = {}
    startup = 0.0
    speed: dict = {}
    for _ in range(repeat):
        report = grade.grade(assignment, solution, grade.GradeOptions(use_calibration=False))
        if report.score != report.max_score:
            lost = [f"{t.number} {t.name}: {t.tags}" for t in report.tests if not t.passed]
            raise ValueError(f"{solution} does not get full marks ({report.score:g}/{report.max_score:g}); "
                             f"calibrate measures a clean solution. Failed: {'; '.join(lost)}")
        startup = max(startup, report.startup_s)
        speed = {run.variant: report.outcomes[run].facts for run in report.plan.speed_runs()
                 if run in report.outcomes and report.outcomes[run].ok}
        for run, outcome in report.outcomes.items():
            if outcome.ran:
                key = calibration.run_id(run)
                best = worst.get(key)
                if best is None or outcome.seconds > best[1].seconds:
                    worst[key] = (run, calibration.Measured(outcome.seconds, outcome.grid_steps))
    path = calibration.save(assignment, startup, {run: m for run, m in worst.values()}, speed)
    return path, {"startup_s": startup, "runs": len(worst),
                  "slowest_s": max((m.seconds for _r, m in worst.values()), default=0.0)}


def add_arguments(p) -> None:
    p.add_argument("slug")
    p.add_argument("--solution", type=Path, help="the solution to measure (default solutions/SLUG.py)")
    p.add_argument("--repeat", type=int, default=3, help="gradings to take the slowest of (default 3)")


def run(args) -> int:
    assignment = assignments.find(args.slug, args.assignments)
    try:
        path, summary = calibrate(assignment, args.solution, args.repeat)
    except ValueError as e:
        args.parser.exit(1, f"pallas-autograder calibrate: {e}\n")
    print(f"wrote {path}: {summary['runs']} runs, slowest {summary['slowest_s']:.2f} s, "
          f"start-up {summary['startup_s']:.2f} s")
    return 0
