"""The instructor's checks (``[checks]``) as the feedback shows them: each check's
own output, then its failed subTests, each said once. A failure repeated word for
word on another rung names the first ("the same failure as test 1.1"), and a
failure on the kernel of a graded test that the grader's own problem already
charges says it is likely another view of that problem. The check's points stay
the instructor's rubric: nothing here changes a score."""
from __future__ import annotations

from typing import Any

from ..grading.judge.problems import key_of


def numbers(suite) -> list[str]:
    """Each check's number: its own (``@number``), else C1, C2, ..."""
    return [c.number or f"C{i}" for i, c in enumerate(suite.checks, 1)]


def views(report, problems: dict) -> list[dict[str, Any]]:
    """Every check (hidden ones too: results.json lists them), in order; ``problems``:
    the grading's problems by key (``problems.key_of``)."""
    suite = report.custom
    if suite is None:
        return []
    return [{"name": c.name, "number": number, "score": c.score, "max_score": c.max_score,
             "passed": c.passed, "output": c.output, "visibility": c.visibility,
             "failures": _failures(c.failures, report, problems)}
            for c, number in zip(suite.checks, numbers(suite))]


def _failures(failures, report, problems: dict) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    first: dict[str, dict] = {}
    for f in failures:
        test = _test_of(f, report)
        if f.message in first:
            said = first[f.message]
            out.append({"label": f.label, "message": None, "same_as_test": said["test"],
                        "same_as_label": said["label"], "problem": None})
            continue
        p = problems.get(key_of(test.finding)) if test is not None and test.charges else None
        first[f.message] = {"test": test.number if test is not None else None, "label": f.label}
        out.append({"label": f.label, "message": f.message.strip("\n"), "same_as_test": None, "same_as_label": None,
                    "problem": {"number": p.number, "title": p.title, "id": p.id, "test": test.number}
                    if p is not None else None})
    return out


def _test_of(f, report):
    """The graded test whose kernel the failed subTest last called (its case's
    signature, its rung): one the grader charged first, where several share it."""
    if f.signature is None or f.rung is None:
        return None
    same = [t for t in report.tests if t.probe is None and t.rung == f.rung and t.run is not None
            and t.run.draw.signature == f.signature]
    return next((t for t in same if t.charges), same[0] if same else None)
