"""The `grade` verb: grade a submission on this machine exactly as Gradescope
would (same findings, same points), print the feedback, and optionally write
the same results.json.

A file argument is graded as that file uploaded alone to Gradescope. Exit
status: 0 whenever grading completed, whatever the score; 2 for bad arguments;
3 when the grader itself failed (never the submission's fault).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import spec
from ..feedback import render, repro, results, results_format, terminal
from ..grading import assignments, grade
from ..grading.run import calibration
from ..isolation.sandbox import GraderFailure
from ..pallas_surface import release


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("submission", type=Path, help="a .py or .ipynb file, or a folder")
    p.add_argument("--assignment", "-a", required=True, help="assignment slug (see `list`)")
    p.add_argument("--results", type=Path, help="also write Gradescope results.json here")
    p.add_argument("--format", choices=("text", "md", "html"), default="text",
                   help="feedback format printed (default text); results.json uses md unless html")
    p.add_argument("--case", action="append", default=[], help="grade only this case (repeatable)")
    p.add_argument("--rung", action="append", default=[], choices=("generic", "tpu-interpret"),
                   help="grade only on this rung (repeatable)")
    p.add_argument("--case-timeout", type=float, help="seconds per case and rung (overrides the spec)")
    p.add_argument("--run-key", type=int, help="replay the input data of an earlier grading run "
                   "(its feedback shows the key); default: fresh data")


def _options(args, assignment: spec.Assignment, progress: terminal.Progress) -> grade.GradeOptions:
    try:
        selection = grade.select(assignment, tuple(args.case), tuple(args.rung))
    except grade.UnknownSelection as e:
        # Secret cases are never listed (a student may run this).
        args.parser.error(f"unknown case or rung {e.args[0]!r} for {assignment.slug}; valid cases: "
                          f"{', '.join(c.name for c in assignment.cases if c.visible)}; rungs: "
                          f"{', '.join(assignment.rungs)}")
    return grade.GradeOptions(selection=selection, case_timeout_s=args.case_timeout, run_key=args.run_key,
                              progress=progress)


def run(args: argparse.Namespace) -> int:
    assignment = assignments.find(args.assignment, args.assignments)
    progress = terminal.Progress()
    options = _options(args, assignment, progress)
    if not args.submission.exists():
        args.parser.error(f"submission {args.submission} does not exist; give a .py or .ipynb file or a folder")
    note = release.course_note(assignment.jax)
    if note and release.INSTALLED not in release.SUPPORTED:
        args.parser.exit(2, f"pallas-autograder: {note}\n")
    if note:
        print(f"pallas-autograder: note: {note}", file=sys.stderr)
    uncalibrated = calibration.why_not(assignment) if args.case_timeout is None else None
    if uncalibrated:
        print(f"pallas-autograder: note: time limits: {uncalibrated}", file=sys.stderr)
    graded = {}

    def produce() -> dict:
        graded["report"] = report = grade.grade(assignment, args.submission, options)
        # The reproduce commands as this student starts the grader, here.
        how = repro.invoked(sys.argv[0], sys.executable, str(args.submission),
                            str(args.assignments) if args.assignments else None)
        graded["view"] = view = render.report_view(report, how)
        return results.results_document(report, "html" if args.format == "html" else "md", view)

    try:
        if args.results:
            results_format.written_whatever_happens(args.results, produce, interrupts_write=False)
        else:
            produce()
    except GraderFailure as exc:
        progress.clear()
        args.parser.exit(3, f"pallas-autograder: autograder error (not your submission's fault): {exc}\n")
    finally:
        progress.clear()
    text = render.render_report(graded["view"], args.format)
    if args.format == "text" and terminal.wants_colour(sys.stdout):
        text = terminal.colour(text)
    print(text, end="" if text.endswith("\n") else "\n")
    sys.stdout.flush()
    if args.results:
        print(f"results written to {args.results}", file=sys.stderr)
    return 0
