"""results.json: spec conformance, capping, atomic writes, catastrophic results."""
import json

import pytest

from autograder.feedback import results_format as gradescope


def _doc(**over):
    t = gradescope.test_entry(name="t", number="1.1", score=1, max_score=2, output="o",
                              output_format="md", tags=["wrong-result"], visibility="visible")
    return {**gradescope.document(score=1, execution_time=2.5, output="x", output_format="md",
                                  tests=[t]), **over}


def test_built_document_is_valid_and_failed_tests_carry_status():
    doc = _doc()
    assert gradescope.validate(doc) == []
    assert doc["tests"][0]["status"] == "failed" and doc["tests"][0]["tags"] == ["wrong-result"]
    assert set(doc) >= {"score", "execution_time", "output", "output_format", "visibility",
                        "stdout_visibility", "tests"}
    assert set(doc["tests"][0]) >= {"name", "number", "score", "max_score", "status", "output",
                                    "output_format", "tags", "visibility"}


@pytest.mark.parametrize("over,needle", [
    ({"visibility": "secret"}, "visibility"),
    ({"output_format": "rtf"}, "output_format"),
    ({"score": "10"}, "score"),
    ({"score": True}, "score"),
    ({"score": float("nan")}, "finite"),
    ({"bogus": 1}, "unknown field"),
    ({"leaderboard": [{"name": "time"}]}, "leaderboard[0]"),
])
def test_validate_rejects_bad_fields(over, needle):
    problems = gradescope.validate(_doc(**over))
    assert any(needle in p for p in problems), problems


def test_validate_rejects_bad_test_status_and_tags():
    doc = _doc()
    doc["tests"][0]["status"] = "ok"
    doc["tests"][0]["tags"] = [1]
    problems = gradescope.validate(doc)
    assert any("status" in p for p in problems) and any("tags" in p for p in problems)


def test_leaderboard_rows_validate():
    doc = _doc(leaderboard=[{"name": "runtime", "value": 1.5, "order": "asc"}])
    assert gradescope.validate(doc) == []


def test_output_is_capped_with_a_notice():
    text = gradescope.cap("a" * 200_000)
    assert len(text) <= gradescope.OUTPUT_CAP and "truncated" in text


def test_catastrophic_results_are_valid_with_visible_and_hidden_tests():
    try:
        raise RuntimeError("boom")
    except RuntimeError as e:
        doc = gradescope.catastrophic(e)
    assert gradescope.validate(doc) == []
    vis = {t["visibility"] for t in doc["tests"]}
    assert vis == {"visible", "hidden"}
    assert "not your fault" in doc["tests"][0]["name"]
    assert "boom" in doc["tests"][1]["output"] and "boom" not in doc["output"]


def test_write_is_atomic_and_replaces_an_invalid_document(tmp_path):
    path = tmp_path / "results" / "results.json"
    gradescope.write(_doc(), path)
    assert json.loads(path.read_text())["score"] == 1
    written = gradescope.write(_doc(visibility="nope"), path)
    loaded = json.loads(path.read_text())
    assert loaded == written and loaded["tests"][0]["tags"] == ["autograder-error"]
    assert "visibility" in loaded["tests"][1]["output"]
    assert [p.name for p in path.parent.iterdir()] == ["results.json"]
