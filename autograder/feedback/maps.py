"""A problem's block map: drawn once, where the problem is explained, from the
finding that shows it on a case whose shapes may be shown, and named for what
was drawn (a check's stress input has shapes of its own). Plain data; no JAX."""
from __future__ import annotations

from dataclasses import replace

from ..findings import Finding
from ..grading.judge.problems import Problem, key_of
from . import blockmaps


def shows(f: Finding, assignment) -> bool:
    """Redact by the finding's own case: submission-wide findings are about the
    student's file, and probe findings come from (usually visible) probe cases."""
    return f.case is None or assignment.case(f.case).visible


def drawn_at(f: Finding, plan) -> str:
    """What a finding's map shows: its case, or the check's own input it was seen on
    (a stress input of the numerics check: that input's shapes, not the case's)."""
    run = plan.runs[f.run] if f.run is not None and 0 <= f.run < len(plan.runs) else None
    if run is not None and run.stress is not None:
        return f"{f.case}, the {f.check} check's stress input {run.stress.name}"
    return f.case or ""


def _facts(f: Finding, sources) -> dict:
    """A finding's facts for its map. A race's core count is the run's, except that
    TPU interpret mode runs a pl.kernel mesh on the mesh's own cores whatever the
    run asked for (it takes num_cores_or_threads from the mesh): say those."""
    facts = f.facts()
    kernels = sources.kernels if sources is not None else ()
    if f.id == "data-race" and len(kernels) == 1 and kernels[0].cores > int(facts.get("cores") or 1):
        facts["cores"] = kernels[0].cores
    return facts


def _map_view(m: blockmaps.BlockMap, note: str) -> dict:
    m = replace(m, notes=(note, *m.notes)) if note else m
    return {"text": blockmaps.text(m), "figure": blockmaps.figure(m), "data": blockmaps.encode(m)}


def problem_map(p: Problem, report) -> tuple[dict | None, str]:
    """A spatial problem's block map and a note on where it is drawn: from the
    finding explained, else another finding of the same problem, the explaining
    test's own case first, on a case whose shapes may be shown (the probe case's
    static scan, say). Secret cases never give a map; when only they show the
    fault, the note says there is none."""
    a, plan = report.assignment, report.plan
    test = next((t for t in report.tests if t.number == p.explained_in), None)
    here = test.case.name if test is not None and test.probe is None else p.finding.case
    order = {c.name: i for i, c in enumerate(plan.cases)}
    same = [f for f in report.findings if key_of(f) == p.key and f.case is not None and shows(f, a)]
    same.sort(key=lambda f: (f.case != here, f is not p.finding, order.get(f.case, len(order))))
    drawn = next(((f, m) for f in same
                  if (m := blockmaps.build(f.id, _facts(f, report.sources), drawn_at(f, plan))) is not None), None)
    secret = here is not None and not a.case(here).visible
    if drawn is None:
        if secret:
            return None, "No block map: this fault was seen only on secret cases, whose shapes are never shown."
        # A hang leaves no order to draw: say so rather than draw an order that did not run.
        return None, ("No map of the grid order: the shuffled run hung, so it recorded none."
                      if p.finding.problem == "hang" else "")
    f, m = drawn
    what, note = drawn_at(f, plan), ""
    if secret:
        note = (f"Drawn at case {what}, where the {f.check} check shows the same fault: a secret case's "
                "shapes are never shown.")
    elif f.case != here or what != f.case:
        note = f"Drawn at case {what}, where the {f.check} check saw the same fault."
    return _map_view(m, note), ""
