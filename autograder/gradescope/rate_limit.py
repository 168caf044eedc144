"""Rate limiting on Gradescope: at most N graded submissions per window.

Counted from ``submission_metadata.json``: the ``previous_submissions`` whose
``submission_time`` lies within the window before this submission's
``created_at``, skipping those the grader did not grade (an autograder error,
or a submission this limit refused). A refused submission keeps the score of
the last graded one and says when the next will be graded. Pure logic: the
harness reads the files and writes the results.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from ..feedback.results_format import document, test_entry

REFUSED_TAG = "rate-limited"
ERROR_TAG = "autograder-error"
MAX_WINDOW_HOURS = 24 * 366      # a term, with room
FILE = "rate_limit.json"          # in the zip's root: {"submissions": N, "window_hours": H}


@dataclass(frozen=True)
class Limit:
    submissions: int
    window_hours: float

    def __post_init__(self):
        if not (isinstance(self.submissions, int) and self.submissions >= 1):
            raise ValueError(f"rate limit submissions must be an integer >= 1; got {self.submissions!r}")
        if not (isinstance(self.window_hours, (int, float)) and 0 < self.window_hours <= MAX_WINDOW_HOURS):
            raise ValueError(f"rate limit window_hours must be a number of hours in (0, {MAX_WINDOW_HOURS}]; "
                             f"got {self.window_hours!r}")


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    used: int                          # graded submissions in the window before this one
    next_at: datetime | None = None    # refused: when the next submission will be graded
    previous_score: float = 0.0        # refused: the score this submission keeps


def _tags(results: dict) -> set[str]:
    tests = results.get("tests") if isinstance(results, dict) else None
    return {t for test in tests or [] if isinstance(test, dict) for t in test.get("tags") or [] if isinstance(t, str)}


def _graded(prev: dict) -> bool:
    results = prev.get("results") or {}
    # Gradescope marks a submission whose autograder failed on the submission itself.
    if prev.get("autograder_error") or (isinstance(results, dict) and results.get("autograder_error")):
        return False
    return not (_tags(results) & {ERROR_TAG, REFUSED_TAG})


def _when(text) -> datetime | None:
    """An aware time (a time without a zone is taken as UTC), or None."""
    try:
        t = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)


def _score(value) -> float | None:
    """Gradescope writes some numbers as strings ("7.0")."""
    try:
        score = float(value)
    except (TypeError, ValueError):
        return None
    return score if math.isfinite(score) else None


def judge(limit: Limit, metadata: dict) -> Verdict:
    """Whether this submission is graded. Unreadable metadata never refuses."""
    now = _when(metadata.get("created_at"))
    previous = metadata.get("previous_submissions")
    if now is None or not isinstance(previous, list):
        return Verdict(True, 0)
    window = timedelta(hours=limit.window_hours)
    graded = [(t, p) for p in previous if isinstance(p, dict) and _graded(p)
              for t in [_when(p.get("submission_time"))] if t is not None and t <= now]
    inside = sorted(t for t, _p in graded if now - window < t)
    if len(inside) < limit.submissions:
        return Verdict(True, len(inside))
    score = _score(max(graded, key=lambda tp: tp[0])[1].get("score"))
    if score is None:
        return Verdict(True, len(inside))    # never replace a score we cannot read with 0
    return Verdict(False, len(inside), inside[-limit.submissions] + window, score)


def refused_results(limit: Limit, verdict: Verdict) -> dict:
    """Gradescope results for a refused submission: the previous score, and when."""
    # Rounded up to the minute: "from 13:01", never a time at which it is still refused.
    up = verdict.next_at + timedelta(seconds=59, microseconds=999999) if verdict.next_at else None
    when = up.replace(second=0, microsecond=0).isoformat(timespec="minutes") if up else "later"
    text = (f"Not graded: this assignment grades at most {limit.submissions} submission"
            f"{'s' if limit.submissions != 1 else ''} per {limit.window_hours:g} hours, and you have "
            f"used {verdict.used}. Your next submission will be graded from {when}. This submission "
            f"keeps the score of your last graded one ({verdict.previous_score:g}). Meanwhile, "
            f"grade locally with the handout's grader: the same feedback on the visible cases.")
    return document(score=verdict.previous_score, execution_time=0.0, output=text, output_format="text",
                    tests=[test_entry(name="Rate limit", number="0", score=0.0, max_score=0.0, output=text,
                                      output_format="text", tags=[REFUSED_TAG], visibility="visible")])
