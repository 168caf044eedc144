"""The Gradescope run itself: what ``run_autograder`` calls.

``run_gradescope`` reads the Gradescope layout under a root (``/autograder``
unless AUTOGRADER_ROOT says otherwise) and always leaves a valid results.json,
whatever happens. The document is assembled by ``feedback.results``; the
format, its validation and the one writer that leaves a valid file whatever
happens are ``feedback.results_format``.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

from .. import spec
from ..feedback import results as assembled, results_format, staff
from ..grading import grade
from ..isolation import confinement
from . import rate_limit


def _clear_results(folder: Path, keep: str) -> None:
    """Only the grader's results.json may be there when grading ends."""
    for p in folder.iterdir():
        if p.name == keep:
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


def root_dir() -> Path:
    return Path(os.environ.get("AUTOGRADER_ROOT", "/autograder"))


def _rate_limited(root: Path, source: Path) -> dict | None:
    """The results of a submission the zip's rate limit refuses, or None to grade it.
    Read before the layout is closed (the metadata is the grader's, not the student's)."""
    config = source / rate_limit.FILE
    if not config.is_file():
        return None
    raw = json.loads(config.read_text(encoding="utf-8"))
    limit = rate_limit.Limit(raw["submissions"], raw["window_hours"])
    try:
        metadata = json.loads((root / "submission_metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None        # no metadata (a local run): nothing to count
    verdict = rate_limit.judge(limit, metadata if isinstance(metadata, dict) else {})
    return None if verdict.allowed else rate_limit.refused_results(limit, verdict)


def run_gradescope(root: Path | None = None, slug: str | None = None, staff_report: Path | None = None,
                   programs: Path | None = None) -> int:
    """Grade ``root/submission`` into ``root/results/results.json``; a valid
    results.json is left whatever happens (``results_format.written_whatever_happens``).
    ``staff_report``: also write the staff's report there (secret cases' evidence
    included; `review` asks for it, Gradescope never does)."""
    root = root or root_dir()
    results = root / "results" / "results.json"
    t0 = time.monotonic()
    said = []

    def produce() -> dict:
        doc, said_line = _graded(root, slug, results, staff_report, programs, t0)
        said.append(said_line)
        return doc

    try:
        results_format.written_whatever_happens(
            results, produce,
            placeholder="grading did not finish: the grader process was stopped before writing results")
    except BaseException:  # noqa: BLE001 - results.json says what failed; the exit status says it failed
        traceback.print_exc(file=sys.stderr)
        return 1 if results.is_file() else 2
    print(said[0])
    return 0


def _graded(root: Path, slug: str | None, results: Path, staff_report: Path | None, programs: Path | None,
            t0: float) -> tuple[dict, str]:
    """The results document (refused by the rate limit, or graded), and what to print."""
    source = root / "source"
    slug = slug or (source / "assignment.txt").read_text(encoding="utf-8").strip()
    assignment = spec.find(slug, source / "assignments" if (source / "assignments").is_dir() else None)
    refused = _rate_limited(root, source)
    if refused is not None:
        _clear_results(results.parent, keep=results.name)
        return refused, f"not graded (rate limit): kept score {refused['score']:g}"
    if (source / "setup.sh").is_file():   # a Gradescope layout, not a developer checkout
        confinement.protect_layout(root, source)
    report = grade.grade(assignment, root / "submission", grade.GradeOptions(keep_programs=programs is not None))
    doc = assembled.results_document(report, "md")
    _clear_results(results.parent, keep=results.name)
    if staff_report is not None:
        Path(staff_report).write_text(staff.report_text(report), encoding="utf-8")
    if programs is not None:
        Path(programs).write_text(json.dumps(report.programs), encoding="utf-8")
    return doc, f"graded {slug}: {report.score:g}/{report.max_score:g} in {time.monotonic() - t0:.1f} s"


def add_arguments(p) -> None:
    p.add_argument("--root", type=Path, help="the /autograder root (default $AUTOGRADER_ROOT or /autograder)")
    p.add_argument("--assignment", help="slug (default: source/assignment.txt)")
    p.add_argument("--staff-report", type=Path, help="also write the staff's report (secret cases' "
                   "evidence included) to this file, outside the results folder (used by `review`)")
    p.add_argument("--programs", type=Path, help="also write the checked programs the TPU stage times "
                   "(JSON: name -> program) to this file (used by `review`)")


def run(args) -> int:
    return run_gradescope(args.root, args.assignment, args.staff_report, args.programs)
