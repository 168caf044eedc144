"""A results.json document assembled from a graded report: each test's
feedback rendered, the speed estimate, the TPU timing's "not run", the
instructor's checks, the leaderboard, and staff data. The format itself (test
entries, validation, writing) is ``results_format``. Imports no JAX.
"""
from __future__ import annotations

from ..speed import grade as speed_grade
from . import render, results_format, tpu_timing
from .results_format import document, test_entry


def _finding_data(t, tv: dict) -> dict:
    """Machine-readable finding for staff tools (Gradescope stores extra_data; it
    does not show it to students). No evidence: hidden cases stay hidden. The
    block map the test's feedback draws (already shown to the student, as text)
    rides along as data, so the TA site can draw it as SVG."""
    if t.finding is None:
        return {"note": t.note} if t.note else {}
    maps = [fv["map"]["data"] for fv in (tv["finding"], *tv["also_explained"]) if fv and fv["map"]]
    return {"finding": t.finding.id, "rung": t.finding.rung, "check": t.finding.check,
            "problem": t.finding.problem, "charged_in": t.charged_in, **({"block_maps": maps} if maps else {})}


def _custom_entries(report, view: dict, fmt: str) -> list[dict]:
    """The instructor's checks, as gradescope-utils would list them (status
    their own: an unweighted check can fail)."""
    if report.custom is None:
        return []
    out = []
    for c, check in zip(report.custom.checks, view["custom_checks"]):
        output = render.render("custom.j2", fmt, check=check)
        entry = test_entry(name=c.name, number=check["number"], score=c.score, max_score=c.max_score,
                           output=output, output_format=fmt,
                           tags=list(c.tags), visibility=c.visibility,
                           extra_data={"custom_check": True})
        entry["status"] = c.status
        out.append(entry)
    return out


def _speed_entry(report, fmt: str) -> list[dict]:
    """The speed estimate (S1, where the spec scores it) and the TPU stage's "not
    run" (T1, only where points wait on it), as ``results_format.speed_tests`` lists them.
    While a correctness test fails, S1 says its estimate in one line."""
    spec, g = report.assignment.speed, report.speed
    out = []
    for t in results_format.speed_tests(report):
        if t["number"] == "S1":
            scored = "" if g.max_score > 0 else ", not scored"   # hidden until later: still a test
            view = speed_grade.view(g)
            output = (render.render("speed.j2", fmt, speed=view) if view["correct"]
                      else render.render("speed.j2", fmt, speed=view, line=results_format.speed_line(g)))
            out.append(test_entry(name=f"Speed estimate (TPU {g.chip}, from the schedule{scored})", number="S1",
                                  score=g.score, max_score=g.max_score, output=output, output_format=fmt,
                                  tags=[], visibility=g.visibility))
        else:
            out.append(tpu_timing.entry(spec, None, None, None, fmt))
    return out


def _top_output(report, view: dict, fmt: str) -> str:
    """Gradescope's top-level output: the summary and, when the estimate is shown
    but not scored, the estimate (no test of its own: see ``results_format.speed_tests``;
    while a correctness test fails, the summary's one line says it)."""
    out = render.render_summary(view, fmt)
    speed = view["speed"]
    if speed and not speed["scored"] and speed["correct"]:
        out = out.rstrip("\n") + "\n\n" + render.render("estimate.j2", fmt, speed=speed)
    return out


def results_document(report, fmt: str = "md", view: dict | None = None) -> dict:
    """The whole results.json of a graded report, feedback rendered in ``fmt``
    (``view``: the report's ``render.report_view``, when the caller has it)."""
    view = view or render.report_view(report)
    # A replay's test that did not run counts for nothing there (0 of 0): the entries add up to its score.
    tests = [test_entry(name=t.name, number=t.number, score=t.score * t.counted, max_score=t.max_score * t.counted,
                        output=render.render_test(tv, fmt), output_format=fmt, tags=t.tags,
                        visibility=t.visibility, extra_data=_finding_data(t, tv))
             for t, tv in zip(report.tests, view["tests"])]
    tests += _speed_entry(report, fmt) + _custom_entries(report, view, fmt)
    board = speed_grade.leaderboard(report.speed) + [
        {"name": b.name, "value": b.value, "order": b.order}
        for b in (report.custom.leaderboard if report.custom else ())]
    doc = document(score=report.score, execution_time=report.seconds,
                   output=_top_output(report, view, fmt), output_format=fmt, tests=tests,
                   leaderboard=board)
    # For staff tools (Gradescope does not show top-level extra_data to students).
    # "jax": the release the grader's child really ran (its own startup event), so a
    # TA, and build's self-test, can tell which release graded this submission.
    doc["extra_data"] = {"run_key": report.run_key, "jax": report.jax_version, "children": report.children,
                         "peak_child_rss_mb": round(report.peak_child_rss_mb, 1),
                         "student_output_bytes": report.output_bytes,
                         "leftover_processes_killed": report.leftovers_killed,
                         "student_uid": report.student_uid, "startup_s": round(report.startup_s, 3),
                         "seconds_by_check": report.seconds_by_check(),
                         "fingerprint": report.fingerprint, **({"replay": view["replay"]} if view["replay"] else {}),
                         "speed_estimate": speed_grade.extra_data(report.speed),
                         "runs": {"planned": len(report.plan.runs),
                                  "ran": sum(o.ran for o in report.outcomes.values())}}
    return doc
