"""The staff's report of a grading: the same feedback with every case's data
shown, secret cases included (what a TA reviews; never what a student gets).

It is the student's report rendered from a declassified copy: every case
marked not secret, wherever the report holds one (the assignment, the plan,
its runs and draws, the tests), so the renderer shows shapes, seeds, evidence
and reproductions for the secret cases too. Nothing is recomputed.
"""
from __future__ import annotations

from dataclasses import replace

from ..grading.run.plan import Run
from ..spec import Case


def _open(case: Case) -> Case:
    return replace(case, secret=False) if case.secret else case


def _run(run: Run | None) -> Run | None:
    if run is None:
        return None
    return replace(run, case=_open(run.case), draw=replace(run.draw, case=_open(run.draw.case)))


def declassified(report):
    a = replace(report.assignment, cases=tuple(map(_open, report.assignment.cases)))
    plan = replace(report.plan, assignment=a, cases=tuple(map(_open, report.plan.cases)),
                   runs=tuple(map(_run, report.plan.runs)),
                   draws=tuple(replace(d, case=_open(d.case)) for d in report.plan.draws))
    tests = [replace(t, case=_open(t.case), run=_run(t.run)) for t in report.tests]
    return replace(report, assignment=a, plan=plan, tests=tests)


def report_text(report, fmt: str = "md") -> str:
    """The whole report, secret cases' evidence included (Markdown by default)."""
    from . import render
    return render.render_report(render.report_view(declassified(report)), fmt)
