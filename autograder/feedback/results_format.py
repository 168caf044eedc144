"""Gradescope's results.json format: test entries, documents, validation, and
writing one whatever happens.

Field names, types and enum values follow Gradescope's autograder
specification. ``validate`` is used by the writer itself (an invalid document
is replaced by a catastrophic one) and by the tests. ``written_whatever_happens``
is the one guard that leaves a valid results.json behind: the CLI, the
Gradescope run and ``run_autograder`` (even without the grader's venv: this
module and what it imports need only the standard library) all use it.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
import traceback
from pathlib import Path
from typing import Any, Callable

from ..grading.judge import figures
from ..spec.model import VISIBILITIES
from ..speed import grade as speed_grade
from .escaping import json_text

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
            if key in obj and obj[key] not in VISIBILITIES:
                errors.append(f"{where}.{key}: must be one of {VISIBILITIES}, got {obj[key]!r}")
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


def listed_as_test(points: float, visibility: str) -> bool:
    """Whether a number the grader shows is a test of its own. Gradescope colours a
    test by its status, so a 0-point number could only show green ("passed") or red:
    it goes in the top-level output instead, unless hidden until later (the
    top-level output has no visibility of its own)."""
    return points > 0 or visibility != "visible"


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


def written_whatever_happens(path: Path, produce: Callable[[], dict], *, placeholder: str = "",
                             interrupts_write: bool = True) -> dict:
    """Write the document ``produce()`` returns to ``path``. Whatever it raises,
    a catastrophic document naming the error is written instead and the
    exception goes on; ``interrupts_write=False``: Ctrl-C writes nothing (a
    person stopped a local run). ``placeholder``: written first, and left there
    if this process is killed before it finishes (Gradescope's timeout, the OOM
    killer): a valid result saying the grader, not the student, failed."""
    if placeholder:
        write(catastrophic(detail=placeholder), path)
    try:
        doc = produce()
    except KeyboardInterrupt:
        if interrupts_write:
            write(catastrophic(detail="grading was interrupted"), path)
        raise
    except BaseException as exc:
        write(catastrophic(exc), path)
        raise
    return write(doc, path)


def main(argv: list[str] | None = None) -> int:
    """``python -m autograder.feedback.results_format --catastrophic DETAIL OUT``:
    what ``run_autograder`` runs when the grader's own Python is missing."""
    import argparse
    p = argparse.ArgumentParser(prog="results_format")
    p.add_argument("--catastrophic", required=True, metavar="DETAIL", help="what went wrong (staff only)")
    p.add_argument("out", type=Path)
    args = p.parse_args(argv)
    write(catastrophic(detail=args.catastrophic), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def speed_tests(report) -> list[dict[str, Any]]:
    """The tests the speed stage adds to results.json: the estimate (S1) and the
    TPU timing (T1), each only where points ride on it. Gradescope colours a test
    by its status (``results_format.listed_as_test``): the unscored estimate goes in
    the top-level output (``results._top_output``); ``merge`` does the same with an
    unscored TPU timing once the TPU stage has run."""
    spec, g = report.assignment.speed, report.speed
    if spec is None or not report.plan.speed_runs():
        return []
    out = []
    if g is not None and listed_as_test(g.max_score, g.visibility):
        passed = g.score >= g.max_score
        out.append({"number": "S1", "visibility": g.visibility, "passed": passed,
                    "state": "pass" if passed else "fail"})
    if spec.tpu_points > 0:
        out.append({"number": "T1", "visibility": spec.visibility, "passed": False, "state": "not-run"})
    return out


def speed_line(g) -> str:
    """The speed estimate in one line (the end of the terminal report; S1 while a
    correctness test fails): the full estimate helps once the kernel is right."""
    v = speed_grade.view(g)
    if v is None or not v["sizes"]:
        return ""
    sz = v["sizes"][0]
    if sz["ms"] is None:
        return f"Speed estimate (TPU {v['chip']}): none at {sz['dims']}: {sz['problem']}."
    relative = f", {sz['relative']:.2f}x the instructor solution's speed" if sz["relative"] is not None else ""
    points = (f"{figures.points(v['score'])}/{figures.points(v['max_score'])} points" if v["scored"]
              else "not scored")
    gate = f"; {v['gate']}" if v["scored"] and v["gate"] else ""
    later = "" if v["correct"] else "; the full estimate is shown once every correctness test passes"
    return (f"Speed estimate: {sz['ms']:.3f} ms on a TPU {v['chip']} at {sz['dims']} (from the schedule, "
            f"not a measurement{relative}; {points}{gate}){later}.")
