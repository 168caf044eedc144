"""The custom checks' results, as the parent reads them (numpy-free, no JAX).

The grader's child runs the instructor's checks (``check_suite``) and reports
gradescope-utils-style entries; the parent checks every field before use (the
child runs no student code, but what it sends is still bounded and typed) and
keeps them as ``CustomCheck``. A suite that did not finish lists every planned
test it has no result for as failed, saying why; a check file that does not
import is the assignment's fault, reported as a grader error in one test.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from ...spec import VISIBILITIES

MAX_TESTS = 200
MAX_TEXT = 20_000


@dataclass(frozen=True)
class SubFailure:
    """One failed ``subTest`` of a check: its label ("subTest (rung='generic') failed"),
    the assertion's text, and the kernel it last called (the plan's signature number
    and rung; None when it called none): the graded test whose kernel that was."""
    label: str
    message: str
    signature: int | None = None
    rung: str | None = None


@dataclass(frozen=True)
class CustomCheck:
    name: str
    number: str
    score: float
    max_score: float
    status: Literal["passed", "failed"]
    output: str = ""                         # what the check printed, and its failure if not in a subTest
    visibility: str = "visible"
    tags: tuple[str, ...] = ()
    failures: tuple[SubFailure, ...] = ()    # its failed subTests, in order

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass(frozen=True)
class LeaderboardEntry:
    name: str
    value: float | str
    order: Literal["asc", "desc"] = "desc"


@dataclass(frozen=True)
class CheckSuite:
    checks: tuple[CustomCheck, ...] = ()
    leaderboard: tuple[LeaderboardEntry, ...] = ()
    problem: str = ""           # the suite did not run (or not to its end): why, in words

    @property
    def score(self) -> float:
        return sum(c.score for c in self.checks)

    @property
    def max_score(self) -> float:
        return sum(c.max_score for c in self.checks)

    def numbers(self) -> list[str]:
        """Each check's number: its own (``@number``), else C1, C2, ..."""
        return [c.number or f"C{i}" for i, c in enumerate(self.checks, 1)]


def _text(value: Any, limit: int = 300) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _check(entry: Any) -> CustomCheck | None:
    if not isinstance(entry, dict) or not _text(entry.get("name")):
        return None
    max_score = _number(entry.get("max_score"))
    score = _number(entry.get("score"))
    max_score = max(0.0, max_score) if max_score is not None else 0.0
    score = min(max(score, 0.0), max_score) if score is not None else 0.0
    status = "passed" if entry.get("status") == "passed" else "failed"
    tags = entry.get("tags") if isinstance(entry.get("tags"), (list, tuple)) else ()
    visibility = entry.get("visibility") if entry.get("visibility") in VISIBILITIES else "visible"
    subs = entry.get("subtests") if isinstance(entry.get("subtests"), list) else []
    return CustomCheck(_text(entry["name"]), _text(entry.get("number"), 20), score, max_score,
                       status, _text(entry.get("output"), MAX_TEXT), visibility,
                       tuple(_text(t, 60) for t in list(tags)[:10] if isinstance(t, str)),
                       tuple(f for f in map(_sub, subs[:MAX_TESTS]) if f is not None))


def _sub(entry: Any) -> SubFailure | None:
    if not isinstance(entry, dict) or not _text(entry.get("label")):
        return None
    sig = entry.get("signature")
    rung = entry.get("rung")
    return SubFailure(_text(entry["label"]), _text(entry.get("message"), MAX_TEXT),
                      sig if isinstance(sig, int) and not isinstance(sig, bool) else None,
                      rung if rung in ("generic", "tpu-interpret") else None)


def _board(row: Any) -> LeaderboardEntry | None:
    if not isinstance(row, dict) or not _text(row.get("name"), 100):
        return None
    value = row.get("value")
    value = _number(value) if not isinstance(value, str) else value[:100]
    if value is None:
        return None
    return LeaderboardEntry(_text(row["name"], 100), value, "asc" if row.get("order") == "asc" else "desc")


def from_planned(planned: Any, why: str) -> tuple[CustomCheck, ...]:
    """Every planned (non-leaderboard) test, failed for ``why``."""
    out = []
    for t in planned[:MAX_TESTS] if isinstance(planned, list) else ():
        if not isinstance(t, dict) or t.get("leaderboard") is True or not _text(t.get("name")):
            continue
        weight = _number(t.get("weight"))
        out.append(CustomCheck(_text(t["name"]), _text(t.get("number"), 20), 0.0,
                               max(weight or 0.0, 0.0), "failed", why,
                               t["visibility"] if t.get("visibility") in VISIBILITIES else "visible"))
    return tuple(out)


def read(done: dict | None, planned: dict | None, failure: str | None) -> CheckSuite:
    """The suite from the child's ``done`` (and ``planned``) events, or why it has none."""
    tests = (planned or {}).get("tests")
    if failure is not None or done is None:
        why = {"timeout": "the checks ran out of time"}.get(failure or "", f"the checks stopped ({failure})")
        return CheckSuite(from_planned(tests, f"Not finished: {why}."), problem=why)
    if done.get("status") != "ok":
        why = f"the check file failed to load: {_text(done.get('type'), 100)}: {_text(done.get('message'), 2000)}"
        # The assignment's fault, never the student's: no points either way.
        return CheckSuite((
            CustomCheck("Instructor checks: autograder error (not your fault)", "", 0.0, 0.0, "failed",
                        "The instructor's checks could not run; the course staff have been told.",
                        tags=("autograder-error",)),
            CustomCheck("Instructor checks: why (staff only)", "", 0.0, 0.0, "failed", why, "hidden",
                        ("autograder-error",))), problem=why)
    checks = tuple(c for c in map(_check, (done.get("checks") or [])[:MAX_TESTS]) if c is not None)
    board = tuple(b for b in map(_board, (done.get("leaderboard") or [])[:20]) if b is not None)
    return CheckSuite(checks, board)
