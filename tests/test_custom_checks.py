"""Custom checks (``[checks]``): the result class that keeps what gradescope-utils
drops, the parent's reading of what the child sent (no JAX), and the checks
run for real against rebuilt kernels through the CLI (jax)."""
import json
import shutil
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, corpus, run_cli, trimmed_add
from gradescope_utils.autograder_utils.json_test_runner import JSONTestRunner

from autograder import spec
from autograder.children import check_suite
from autograder.feedback.results_format import validate
from autograder.grading import assignments
from autograder.grading.run import custom_checks

SUITE = '''
import unittest
from gradescope_utils.autograder_utils.decorators import (
    hide_errors, leaderboard, number, partial_credit, tags, visibility, weight)


class Plain(unittest.TestCase):
    @weight(2)
    @number("7.1")
    def test_pass(self):
        """passes"""
        print("said something")

    @weight(1)
    @tags("rows")
    def test_subtests(self):
        """each row"""
        for i in range(3):
            with self.subTest(row=i):
                self.assertLess(i, 1)

    @weight(1)
    @unittest.skip("not today")
    def test_skipped(self):
        pass

    @partial_credit(4)
    def test_partial(self, set_score=None):
        set_score(2.5)

    @leaderboard("speed", "asc")
    def test_board(self, set_leaderboard_value=None):
        set_leaderboard_value(3.5)

    @weight(1)
    @visibility("after_due_date")
    @hide_errors("hidden reason")
    def test_hidden_error(self):
        self.assertEqual(1, 2)

    @weight(1)
    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(1, 2)

    @weight(1)
    @unittest.expectedFailure
    def test_unexpected_success(self):
        pass

    @weight(1)
    def test_raises(self):
        raise KeyError("boom")


class Broken(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("no setup")

    @weight(3)
    def test_never(self):
        pass
'''


@pytest.fixture
def suite_folder(tmp_path):
    (tmp_path / "checks.py").write_text(SUITE)
    return tmp_path


def _by_name(entries):
    return {e["name"]: e for e in entries}


def test_every_test_gets_one_entry_saying_what_gradescope_utils_would_drop(suite_folder):
    suite = check_suite.load(suite_folder, "checks.py")
    tests = check_suite.flatten(suite)
    results, board = check_suite.run(suite, tests)
    got = _by_name(results)
    assert len(results) == len(tests) - 1 == 9        # every test but the leaderboard column
    assert board == [{"name": "speed", "value": 3.5, "order": "asc"}]
    assert (got["passes"]["score"], got["passes"]["status"], got["passes"]["number"]) == (2, "passed", "7.1")
    assert "said something" in got["passes"]["output"]
    sub = got["each row"]
    assert (sub["score"], sub["max_score"], sub["status"], sub["tags"]) == (0.0, 1, "failed", ("rows",))
    # Each failed subTest apart (the feedback says a repeated message once); no kernel called.
    assert [(f["label"], f["signature"], f["rung"]) for f in sub["subtests"]] == [
        ("subTest (row=1) failed", None, None), ("subTest (row=2) failed", None, None)]
    assert sub["subtests"][0]["message"] == "1 not less than 1"
    skipped = got["Plain.test_skipped"]
    assert (skipped["score"], skipped["max_score"], skipped["status"]) == (0.0, 1, "failed")
    assert "Skipped: not today" in skipped["output"]
    assert (got["Plain.test_partial"]["score"], got["Plain.test_partial"]["status"]) == (2.5, "failed")
    hidden = got["Plain.test_hidden_error"]
    assert hidden["visibility"] == "after_due_date" and hidden["output"] == "hidden reason"
    assert got["Plain.test_expected_failure"]["status"] == "passed"
    unexpected = got["Plain.test_unexpected_success"]
    assert unexpected["status"] == "failed" and "expectedFailure, but it passed" in unexpected["output"]
    assert got["Plain.test_raises"]["status"] == "failed" and "KeyError" not in got["Plain.test_raises"].get(
        "tags", ()) and "'boom'" in got["Plain.test_raises"]["output"]
    never = got["Broken.test_never"]
    assert (never["score"], never["max_score"], never["status"]) == (0.0, 3, "failed")
    assert "setUpClass (assignment_checks.Broken) raised RuntimeError: no setup" in never["output"]


def test_gradescope_utils_own_runner_does_drop_them(suite_folder, capsys):
    """The reason the result class exists: upstream loses the subTest failure and
    the skip, and crashes on the setUpClass error. If this starts failing,
    upstream changed: reread check_suite.GradingResult."""
    suite = check_suite.load(suite_folder, "checks.py")
    broken = [t for t in check_suite.flatten(suite) if type(t).__name__ == "Broken"]
    plain = [t for t in check_suite.flatten(suite) if type(t).__name__ == "Plain"]
    import io
    out = io.StringIO()
    JSONTestRunner(stream=out).run(__import__("unittest").TestSuite(plain))
    names = {t["name"] for t in json.loads(out.getvalue())["tests"]}
    assert "each row" not in names and not any("skipped" in n for n in names)
    with pytest.raises(AttributeError):
        JSONTestRunner(stream=io.StringIO()).run(__import__("unittest").TestSuite(broken))


def test_the_parent_bounds_and_types_what_the_child_sent():
    done = {"status": "ok", "checks": [
        {"name": "a", "score": 7, "max_score": 2, "status": "passed", "visibility": "nope", "number": "1"},
        {"name": "b", "score": float("nan"), "max_score": -1, "status": "weird", "output": "x" * 50_000},
        {"name": 3}, "junk", {"name": "c", "tags": ["t", 4], "visibility": "hidden"}],
        "leaderboard": [{"name": "speed", "value": "fast"}, {"name": "n", "value": float("inf")}, 7]}
    suite = custom_checks.read(done, None, None)
    a, b, c = suite.checks
    assert (a.score, a.max_score, a.passed, a.visibility) == (2.0, 2.0, True, "visible")
    assert (b.score, b.max_score, b.status, len(b.output)) == (0.0, 0.0, "failed", custom_checks.MAX_TEXT)
    assert (c.tags, c.visibility) == (("t",), "hidden")
    assert suite.leaderboard == (custom_checks.LeaderboardEntry("speed", "fast", "desc"),)
    assert (suite.score, suite.max_score) == (2.0, 2.0)


def test_failed_subtests_are_read_typed_and_a_repeated_one_is_said_once():
    from autograder.grading.judge.instructor import Said, said_once
    done = {"status": "ok", "checks": [{"name": "a", "max_score": 1, "status": "failed", "subtests": [
        {"label": "subTest (rung='generic') failed", "message": "\nNot equal\n", "signature": 0, "rung": "generic"},
        {"label": "subTest (rung='tpu-interpret') failed", "message": "\nNot equal\n", "signature": True,
         "rung": "mosaic"},
        {"label": "subTest (i=2) failed", "message": "other"}, {"label": 5}, "junk"]}]}
    (check,) = custom_checks.read(done, None, None).checks
    assert check.failures == (
        custom_checks.SubFailure("subTest (rung='generic') failed", "\nNot equal\n", 0, "generic"),
        custom_checks.SubFailure("subTest (rung='tpu-interpret') failed", "\nNot equal\n", None, None),
        custom_checks.SubFailure("subTest (i=2) failed", "other"))
    # No graded test ran signature 0 here: the repeat names the first failure by its label.
    assert said_once(check.failures, (), ()) == (
        Said("subTest (rung='generic') failed", "Not equal"),
        Said("subTest (rung='tpu-interpret') failed", None, "subTest (rung='generic') failed", False,
             "subTest (rung='generic')"),
        Said("subTest (i=2) failed", "other"))


def test_a_suite_that_did_not_finish_lists_its_planned_tests_as_failed():
    planned = {"tests": [{"name": "one", "number": "", "weight": 2, "visibility": "visible", "leaderboard": False},
                         {"name": "col", "weight": None, "leaderboard": True}]}
    suite = custom_checks.read(None, planned, "timeout")
    assert [(c.name, c.score, c.max_score, c.status) for c in suite.checks] == [("one", 0.0, 2.0, "failed")]
    assert suite.checks[0].output == "Not finished: the checks ran out of time." and suite.problem


def test_a_check_file_that_does_not_load_is_the_graders_error_not_the_students():
    suite = custom_checks.read({"status": "error", "type": "ImportError", "message": "no module x"}, None, None)
    shown, staff = suite.checks
    assert suite.max_score == 0 and "not your fault" in shown.name and shown.visibility == "visible"
    assert staff.visibility == "hidden" and "ImportError: no module x" in staff.output


def test_a_checks_table_must_name_a_file_in_the_assignment_folder(tmp_path):
    folder = tmp_path / "add"
    shutil.copytree(REPO / "assignments" / "add", folder)
    with open(folder / "spec.toml", "a") as f:
        f.write('\n[checks]\nfile = "../checks.py"\n')
    with pytest.raises(spec.SpecError, match=r"key 'checks.file': must name a \.py file"):
        assignments.load(folder)


# --- real gradings (jax) --------------------------------------------------------------------

CHECKS = '''
import numpy as np
from gradescope_utils.autograder_utils.decorators import leaderboard, number, visibility, weight

from autograder import KernelTestCase
from reference import add as expected_add


class AddChecks(KernelTestCase):
    @weight(2)
    @number("C1")
    def test_matches_the_reference_on_both_rungs(self):
        """ones plus twos, on both interpreters"""
        (shape, dtype), _ = self.signatures[0]
        x, y = np.ones(shape, dtype), np.full(shape, 2.0, dtype)
        for rung in self.rungs:
            with self.subTest(rung=rung):
                np.testing.assert_allclose(self.kernel(x, y, rung=rung), expected_add(x, y))

    @weight(1)
    @number("C2")
    @visibility("hidden")
    def test_a_shape_no_case_has(self):
        x = np.ones((8, 8), np.float32)
        self.kernel(x, x)

    @leaderboard("checks ran")
    def test_board(self, set_leaderboard_value=None):
        set_leaderboard_value(1)
'''


@pytest.fixture
def with_checks(tmp_path):
    """`add` with one visible case, no probes, and a check file (fast gradings)."""
    folder = trimmed_add(tmp_path / "assignments", textwrap.dedent('''
        [[cases]]
        name = "small"
        dims = { M = 16, N = 256 }
        seed = 101
        points = 2
        '''), '\n[checks]\nfile = "checks.py"\nlimit_s = 60\n')
    (folder / "checks.py").write_text(CHECKS)
    return folder.parent


def _grade(root: Path, submission: Path, tmp_path: Path) -> tuple[dict, str]:
    results = tmp_path / "results.json"
    proc = run_cli("grade", str(submission), "-a", "add", "--assignments", str(root), "--results", str(results))
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(results.read_text())
    assert validate(doc) == []
    return doc, proc.stdout


@pytest.mark.jax
@pytest.mark.grading
def test_checks_run_against_the_rebuilt_kernel_and_merge_into_results(with_checks, tmp_path):
    doc, out = _grade(with_checks, REPO / "solutions" / "add.py", tmp_path)
    custom = {t["number"]: t for t in doc["tests"] if t.get("extra_data", {}).get("custom_check")}
    assert (custom["C1"]["score"], custom["C1"]["status"]) == (2.0, "passed")
    # A shape no graded case has: the kernel call fails, and the message names no case shape.
    assert (custom["C2"]["score"], custom["C2"]["visibility"]) == (0.0, "hidden")
    assert "no traced program takes inputs" in custom["C2"]["output"] and "16, 256" not in custom["C2"]["output"]
    assert doc["leaderboard"] == [{"name": "checks ran", "value": 1.0, "order": "desc"}]
    assert doc["score"] == 2.0 + 2.0 and "Instructor checks: 1 of 1 passed." in out

    wrong, out = _grade(with_checks, corpus("add") / "wrong_formula.py", tmp_path)
    c1 = next(t for t in wrong["tests"] if t["number"] == "C1")
    assert (c1["score"], c1["status"]) == (0.0, "failed")
    # Its points are no finding's: the summary says what the failed checks cost.
    flat = " ".join(out.split())
    assert "Instructor checks: 0 of 1 passed (cost 2 points in C1)." in flat
    assert "[FAIL] C1 ones plus twos, on both interpreters (0/2)" in out
    # Issue 45: one bug, said once. The check's assertion prints once (the other rung's
    # failure, word for word the same, names the first and its test), and the grader's own
    # problem on that test's case and rung is named beside it, the check's points untouched.
    for text in (out, c1["output"]):
        assert text.count("Mismatched elements: 4096 / 4096 (100%)") == 1
        flat = " ".join(text.replace("\\", "").split())
        assert ("Likely another view of problem 1, Wrong result [wrong-result] (see test 1.1); this check's points "
                "stand as the instructor's rubric scores them.") in flat
        assert ("subTest (rung='tpu-interpret') failed: the same failure as subTest (rung='generic') above, on the "
                "kernel of test 1.1.") in flat
    assert "subTest (rung='generic') failed:\n\n    Not equal to tolerance rtol=1e-07, atol=0\n" in out
    assert wrong["score"] == 0 and c1["max_score"] == 2
    # The TA site links both references in the check's Markdown, as it does a test's.
    from autograder.review import testlinks
    assert [n for *_, n in testlinks.spans(c1["output"], frozenset({"1.1", "1.2", "C1"}))] == ["1.1", "1.1"]
    # On the page, each test it names is a link to that test.
    proc = run_cli("grade", str(corpus("add") / "wrong_formula.py"), "-a", "add", "--assignments",
                   str(with_checks), "--format", "html")
    assert ('<p>subTest (rung=&#39;tpu-interpret&#39;) failed: the same failure as subTest (rung=&#39;generic&#39;) '
            'above, on the kernel of <a href="#test-1.1">test 1.1</a>.</p>') in proc.stdout
    assert '(see <a href="#test-1.1">test 1.1</a>)' in proc.stdout


@pytest.mark.jax
@pytest.mark.grading
def test_a_kernel_that_raises_fails_the_checks_that_call_it(with_checks, tmp_path):
    # Clamped by the generic interpreter, an IndexError in TPU interpret mode.
    doc, _ = _grade(with_checks, corpus("add") / "grid_one_step_too_long.py", tmp_path)
    c1 = next(t for t in doc["tests"] if t["number"] == "C1")
    assert (c1["score"], c1["max_score"], c1["status"]) == (0.0, 2.0, "failed")
    assert c1["output"].startswith("subTest (rung='tpu-interpret') failed:\n\n```\nthe kernel raised IndexError")
    assert "Traceback" not in c1["output"]
    assert "rung='generic'" not in c1["output"]
    # Only the TPU interpret run fails: the grader's problem there is named beside it.
    assert c1["output"].endswith("\n```\n\nLikely another view of problem 1, Out-of-bounds access [out-of-bounds] "
                                 "(see test 1.2); this check's points stand as the instructor's rubric scores "
                                 "them.\n")
    # Nothing traced: every check is still listed, and fails saying why.
    doc, _ = _grade(with_checks, corpus("add") / "raises_in_kernel.py", tmp_path)
    c1 = next(t for t in doc["tests"] if t["number"] == "C1")
    assert (c1["score"], c1["status"]) == (0.0, "failed")
    assert "did not trace on this graded case's inputs" in c1["output"]


def test_numpys_printout_of_both_whole_arrays_is_left_out_of_a_failed_check():
    from autograder.grading.judge.instructor import without_arrays
    message = ("\nNot equal to tolerance rtol=0.0001, atol=0.0001\n\nMismatched elements: 49024 / 49152 (99.7%)\n"
               "Max absolute difference among violations: 0.21045707\n"
               " ACTUAL: array([[[-0.058411,  0.036972, ...,  0.051275,\n          0.105935],\n"
               "        [-0.058411,  0.036972, ...,  0.051275,...\n"
               " DESIRED: array([[[-0.033073,  0.023063, ..., -0.007109,\n          0.094215],\n"
               "        [-0.033073,  0.023063, ..., -0.007109,...\n")
    assert without_arrays(message) == (
        "\nNot equal to tolerance rtol=0.0001, atol=0.0001\n\nMismatched elements: 49024 / 49152 (99.7%)\n"
        "Max absolute difference among violations: 0.21045707\n\n(the two whole arrays numpy printed are left out)")
    assert without_arrays("AssertionError: 3 != 4") == "AssertionError: 3 != 4"      # nothing to leave out
