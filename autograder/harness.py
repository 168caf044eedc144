"""From a graded report to Gradescope's results.json, and the Gradescope run itself.

``run_gradescope`` is what ``run_autograder`` calls: it reads the Gradescope
layout under a root (``/autograder`` unless AUTOGRADER_ROOT says otherwise)
and always leaves a valid results.json, whatever happens.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
import traceback
from pathlib import Path

from . import gradescope, render

def results_document(report, fmt: str = "md") -> dict:
    view = render.report_view(report)
    tests = []
    for t, tv in zip(report.tests, view["tests"]):
        tests.append(gradescope.test_entry(
            name=t.name, number=t.number, score=t.score, max_score=t.max_score,
            output=render.render_test(tv, fmt), output_format=fmt, tags=t.tags,
            visibility=t.visibility, status="passed" if t.passed else "failed",
            extra_data=_finding_data(t)))
    doc = gradescope.document(score=report.score, execution_time=report.seconds,
                              output=render.render_summary(view, fmt), output_format=fmt,
                              tests=tests)
    # For staff tools (Gradescope does not show top-level extra_data to students).
    doc["extra_data"] = {"run_key": report.run_key, "children": report.children,
                         "peak_child_rss_mb": round(report.peak_child_rss_mb, 1),
                         "student_output_bytes": report.output_bytes,
                         "leftover_processes_killed": report.leftovers_killed,
                         "student_uid": report.student_uid}
    return doc


def _finding_data(t) -> dict:
    """Machine-readable finding for staff tools (Gradescope stores extra_data; it
    does not show it to students). No evidence: hidden cases stay hidden."""
    if t.finding is None:
        return {}
    return {"finding": t.finding.id, "rung": t.finding.rung, "check": t.finding.check,
            "problem": t.finding.facts().get("problem"), "charged_in": t.charged_in}


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


def run_gradescope(root: Path | None = None, slug: str | None = None) -> int:
    """Grade ``root/submission`` into ``root/results/results.json``. Never raises."""
    root = root or root_dir()
    results = root / "results" / "results.json"
    t0 = time.monotonic()
    try:
        # Left in place if this process is killed (OOM, Gradescope's timeout):
        # a valid result that says the grader, not the student, failed.
        gradescope.write(gradescope.catastrophic(
            detail="grading did not finish: the grader process was stopped before writing results"),
            results)
        from . import confinement, grade, spec
        source = root / "source"
        slug = slug or (source / "assignment.txt").read_text(encoding="utf-8").strip()
        assignment = spec.find(slug, source / "assignments" if (source / "assignments").is_dir() else None)
        if (source / "setup.sh").is_file():   # a Gradescope layout, not a developer checkout
            confinement.protect_layout(root, source)
        report = grade.grade(assignment, root / "submission")
        doc = results_document(report, "md")
        _clear_results(results.parent, keep=results.name)
        gradescope.write(doc, results)
        print(f"graded {slug}: {report.score:g}/{report.max_score:g} in {time.monotonic() - t0:.1f} s")
        return 0
    except BaseException as exc:  # noqa: BLE001 - the one guard that always writes results
        traceback.print_exc(file=sys.stderr)
        try:
            gradescope.write(gradescope.catastrophic(exc), results)
        except BaseException:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)
            return 2
        return 1
