"""Rate limiting from submission_metadata.json (pure logic, no JAX)."""
import pytest

from autograder.feedback.results_format import validate
from autograder.gradescope import rate_limit

LIMIT = rate_limit.Limit(2, 24)


def _prev(time, score, tags=()):
    return {"submission_time": time, "score": score,
            "results": {"score": score, "tests": [{"name": "t", "score": score, "tags": list(tags)}]}}


def _meta(*previous, now="2026-12-03T12:00:00.000000-08:00"):
    return {"id": 9, "created_at": now, "previous_submissions": list(previous)}


def test_under_the_limit_is_graded():
    v = rate_limit.judge(LIMIT, _meta(_prev("2026-12-03T09:00:00-08:00", 3.0)))
    assert v.allowed and v.used == 1


def test_at_the_limit_keeps_the_previous_score_and_says_when():
    v = rate_limit.judge(LIMIT, _meta(_prev("2026-12-02T08:00:00-08:00", 1.0),   # outside the window
                                      _prev("2026-12-02T13:00:00-08:00", 5.0),
                                      _prev("2026-12-03T09:00:00-08:00", 7.0)))
    assert not v.allowed and v.used == 2 and v.previous_score == 7.0
    assert v.next_at.isoformat() == "2026-12-03T13:00:00-08:00"
    doc = rate_limit.refused_results(LIMIT, v)
    assert validate(doc) == [] and doc["score"] == 7.0
    assert "graded from 2026-12-03T13:00-08:00" in doc["output"] and doc["tests"][0]["tags"] == ["rate-limited"]


def test_errors_and_refusals_do_not_count():
    v = rate_limit.judge(LIMIT, _meta(_prev("2026-12-03T08:00:00-08:00", 0.0, ["autograder-error"]),
                                      _prev("2026-12-03T09:00:00-08:00", 4.0, ["rate-limited"]),
                                      _prev("2026-12-03T10:00:00-08:00", 4.0)))
    assert v.allowed and v.used == 1


def test_unreadable_metadata_never_refuses():
    assert rate_limit.judge(LIMIT, {}).allowed
    assert rate_limit.judge(LIMIT, _meta(now="not a time")).allowed
    with pytest.raises(ValueError, match="submissions must be an integer >= 1; got 0"):
        rate_limit.Limit(0, 24)


def test_gradescope_shapes_of_the_metadata_are_read():
    # A score written as a string, a top-level autograder_error, a time without a zone.
    err = {**_prev("2026-12-03T10:00:00-08:00", 0.0), "autograder_error": True}
    v = rate_limit.judge(rate_limit.Limit(1, 24), _meta(err, {**_prev("2026-12-03T19:30:00", 0), "score": "7.5"}))
    assert not v.allowed and v.used == 1 and v.previous_score == 7.5
    unreadable = {**_prev("2026-12-03T11:00:00-08:00", 0), "score": "n/a"}
    assert rate_limit.judge(rate_limit.Limit(1, 24), _meta(unreadable)).allowed, "never a score of 0 instead"
    with pytest.raises(ValueError, match="window_hours"):
        rate_limit.Limit(1, float("inf"))
