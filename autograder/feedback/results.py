"""Gradescope's results.json: building it from a report, validating, and always writing it.

Field names, types and enum values follow Gradescope's autograder
specification. ``validate`` is used by the writer itself (an invalid document
is replaced by a catastrophic one) and by the tests. Imports no JAX.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
import traceback
from pathlib import Path
from typing import Any

VISIBILITY = ("hidden", "after_due_date", "after_published", "visible")
OUTPUT_FORMATS = ("text", "html", "simple_format", "md", "ansi")
STATUS = ("passed", "failed")
OUTPUT_CAP = 100_000           # Gradescope truncates output fields beyond this
TRUNCATION_NOTICE = "\n\n[... output truncated by the autograder: it exceeded {cap} characters ...]\n"

_TOP = {"score": (int, float), "execution_time": (int, float), "output": str,
        "output_format": str, "test_output_format": str, "test_name_format": str,
        "visibility": str, "stdout_visibility": str, "extra_data": dict, "tests": list,
        "leaderboard": list}
_TEST = {"score": (int, float), "max_score": (int, float), "status": str, "name": str,
         "name_format": str, "number": str, "output": str, "output_format": str, "tags": list,
         "visibility": str, "extra_data": dict}
_LEADER = {"name": str, "value": (int, float, str), "order": str}


def cap(text: str, limit: int = OUTPUT_CAP) -> str:
    """Keep an output field under Gradescope's cap, saying so when it cuts."""
    if len(text) <= limit:
        return text
    notice = TRUNCATION_NOTICE.format(cap=limit)
    return text[: limit - len(notice)] + notice


def validate(doc: Any) -> list[str]:
    """Problems with a results document; an empty list means it is valid."""
    errors: list[str] = []

    def check(obj: dict, schema: dict, where: str) -> None:
        for key, value in obj.items():
            if key not in schema:
                errors.append(f"{where}: unknown field {key!r}")
            elif isinstance(value, bool) or not isinstance(value, schema[key]):
                errors.append(f"{where}.{key}: expected {schema[key]}, got {type(value).__name__}")
            elif isinstance(value, float) and not math.isfinite(value):
                errors.append(f"{where}.{key}: must be finite, got {value}")
            elif isinstance(value, str) and key in ("output",) and len(value) > OUTPUT_CAP:
                errors.append(f"{where}.{key}: longer than {OUTPUT_CAP} characters")
        for key in ("visibility", "stdout_visibility"):
            if key in obj and obj[key] not in VISIBILITY:
                errors.append(f"{where}.{key}: must be one of {VISIBILITY}, got {obj[key]!r}")
        for key in ("output_format", "test_output_format", "name_format", "test_name_format"):
            if key in obj and obj[key] not in OUTPUT_FORMATS:
                errors.append(f"{where}.{key}: must be one of {OUTPUT_FORMATS}, got {obj[key]!r}")

    if not isinstance(doc, dict):
        return ["results must be a JSON object"]
    check(doc, _TOP, "results")
    if "score" not in doc and not (isinstance(doc.get("tests"), list) and
                                   all(isinstance(t, dict) and "score" in t for t in doc["tests"])):
        errors.append("results: needs a top-level score or a score on every test")
    for i, t in enumerate(doc.get("tests", []) if isinstance(doc.get("tests"), list) else []):
        if not isinstance(t, dict):
            errors.append(f"tests[{i}]: must be an object")
            continue
        check(t, _TEST, f"tests[{i}]")
        if "status" in t and t["status"] not in STATUS:
            errors.append(f"tests[{i}].status: must be one of {STATUS}, got {t['status']!r}")
        if "tags" in t and not all(isinstance(x, str) for x in t["tags"]):
            errors.append(f"tests[{i}].tags: must be strings")
    for i, row in enumerate(doc.get("leaderboard", []) if isinstance(doc.get("leaderboard"), list) else []):
        if not isinstance(row, dict) or "name" not in row or "value" not in row:
            errors.append(f"leaderboard[{i}]: needs name and value")
            continue
        check(row, _LEADER, f"leaderboard[{i}]")
        if "order" in row and row["order"] not in ("asc", "desc"):
            errors.append(f"leaderboard[{i}].order: must be 'asc' or 'desc'")
    return errors


def test_entry(*, name: str, number: str, score: float, max_score: float, output: str,
               output_format: str, tags: list[str], visibility: str,
               extra_data: dict | None = None) -> dict:
    """One test; its status is its score's (passed exactly when it earns its points)."""
    return {"name": name, "number": number, "score": round(float(score), 4),
            "max_score": round(float(max_score), 4),
            "status": "passed" if score >= max_score else "failed",
            "output": cap(output), "output_format": output_format, "tags": list(tags),
            "visibility": visibility, **({"extra_data": extra_data} if extra_data else {})}


def document(*, score: float, execution_time: float, output: str, output_format: str,
             tests: list[dict], leaderboard: list[dict] | None = None) -> dict:
    doc = {"score": round(float(score), 4), "execution_time": round(float(execution_time), 3),
           "output": cap(output), "output_format": output_format, "visibility": "visible",
           "stdout_visibility": "hidden", "tests": tests}
    if leaderboard:
        doc["leaderboard"] = leaderboard
    return doc


def catastrophic(exc: BaseException | None = None, *, detail: str = "") -> dict:
    """Results for when the grader itself failed: never the student's fault."""
    tb = detail or ("".join(traceback.format_exception(exc)) if exc else "unknown error")
    return {
        "score": 0.0, "execution_time": 0.0, "output_format": "text", "visibility": "visible",
        "stdout_visibility": "hidden",
        "output": ("The autograder itself failed while grading this submission. This is not "
                   "your fault, and the course staff have been told. Please resubmit later or "
                   "contact them; your submission was saved."),
        "tests": [
            {"name": "Autograder error (not your fault)", "number": "0", "score": 0.0,
             "max_score": 0.0, "status": "failed", "output_format": "text",
             "output": "The autograder failed; the course staff have been told. Nothing in this "
                       "result reflects your work.", "tags": ["autograder-error"],
             "visibility": "visible"},
            {"name": "Autograder traceback (staff only)", "number": "0.1", "score": 0.0,
             "max_score": 0.0, "status": "failed", "output_format": "text",
             "output": cap(tb), "tags": ["autograder-error"], "visibility": "hidden"},
        ],
    }


def _text_only(value):
    """Every string made JSON text (lone surrogates from undecodable names replaced)."""
    from .escaping import json_text
    if isinstance(value, str):
        return json_text(value)
    if isinstance(value, dict):
        return {_text_only(k): _text_only(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_text_only(v) for v in value]
    return value


def write(doc: dict, path: Path) -> dict:
    """Atomically write a valid document to ``path``; an invalid one is replaced by a
    catastrophic document naming the problems, so results.json is always valid JSON."""
    doc = _text_only(doc)
    problems = validate(doc)
    if problems:
        doc = catastrophic(detail="the grader built an invalid results.json:\n" + "\n".join(problems))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".results-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2, allow_nan=False)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return doc


def _finding_data(t) -> dict:
    """Machine-readable finding for staff tools (Gradescope stores extra_data; it
    does not show it to students). No evidence: hidden cases stay hidden."""
    if t.finding is None:
        return {"note": t.note} if t.note else {}
    return {"finding": t.finding.id, "rung": t.finding.rung, "check": t.finding.check,
            "problem": t.finding.problem, "charged_in": t.charged_in}


def _custom_entries(report, fmt: str) -> list[dict]:
    """The instructor's checks, as gradescope-utils would list them (status
    their own: an unweighted check can fail)."""
    from . import render
    if report.custom is None:
        return []
    out = []
    for c, number in zip(report.custom.checks, render.custom_numbers(report.custom)):
        entry = test_entry(name=c.name, number=number, score=c.score, max_score=c.max_score,
                           output=render.render_custom(c, fmt), output_format=fmt,
                           tags=list(c.tags), visibility=c.visibility,
                           extra_data={"custom_check": True})
        entry["status"] = c.status
        out.append(entry)
    return out


def _speed_entry(report, fmt: str) -> list[dict]:
    """The speed estimate (S1, 0 points unless the spec scores it) and the TPU
    stage's "not run" (T1), in a grading that planned the estimate. Nothing
    traced (a submission error) and no points at stake: neither."""
    from ..speed import grade as speed_grade
    from ..tpu import results as tpu_results
    from . import render
    spec, g = report.assignment.speed, report.speed
    if spec is None or not report.plan.speed_runs() or (g is None and spec.tpu_points <= 0):
        return []
    out = []
    if g is not None:
        scored = "" if g.max_score > 0 else ", not scored"
        out.append(test_entry(name=f"Speed estimate (TPU {g.chip}, from the schedule{scored})", number="S1",
                              score=g.score, max_score=g.max_score,
                              output=render.render_speed(speed_grade.view(g), fmt), output_format=fmt,
                              tags=[], visibility=g.visibility))
    return out + [tpu_results.entry(spec, None, None, None, fmt)]


def results_document(report, fmt: str = "md", view: dict | None = None) -> dict:
    """The whole results.json of a graded report, feedback rendered in ``fmt``
    (``view``: the report's ``render.report_view``, when the caller has it)."""
    from ..speed import grade as speed_grade
    from . import render
    view = view or render.report_view(report)
    tests = [test_entry(name=t.name, number=t.number, score=t.score, max_score=t.max_score,
                        output=render.render_test(tv, fmt), output_format=fmt, tags=t.tags,
                        visibility=t.visibility, extra_data=_finding_data(t))
             for t, tv in zip(report.tests, view["tests"])]
    tests += _speed_entry(report, fmt) + _custom_entries(report, fmt)
    board = speed_grade.leaderboard(report.speed) + [
        {"name": b.name, "value": b.value, "order": b.order}
        for b in (report.custom.leaderboard if report.custom else ())]
    doc = document(score=report.score, execution_time=report.seconds,
                   output=render.render_summary(view, fmt), output_format=fmt, tests=tests,
                   leaderboard=board)
    # For staff tools (Gradescope does not show top-level extra_data to students).
    doc["extra_data"] = {"run_key": report.run_key, "children": report.children,
                         "peak_child_rss_mb": round(report.peak_child_rss_mb, 1),
                         "student_output_bytes": report.output_bytes,
                         "leftover_processes_killed": report.leftovers_killed,
                         "student_uid": report.student_uid, "startup_s": round(report.startup_s, 3),
                         "seconds_by_check": report.seconds_by_check(),
                         "fingerprint": report.fingerprint,
                         "speed_estimate": speed_grade.extra_data(report.speed),
                         "runs": {"planned": len(report.plan.runs),
                                  "ran": sum(o.ran for o in report.outcomes.values())}}
    return doc
