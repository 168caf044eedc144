"""The built zip, unpacked into a temporary AUTOGRADER_ROOT, run by the real
setup.sh and run_autograder, gives a spec-valid results.json."""
import json
import os
import shutil
import subprocess
import tomllib
import zipfile

import pytest
from conftest import REPO, corpus, fresh_root, run_cli, tags

from autograder.feedback.results_format import validate
from autograder.gradescope import build
from autograder.pallas_surface import release

pytestmark = [pytest.mark.jax, pytest.mark.grading]   # grades through real JAX in a child process


def test_zip_holds_one_assignment_and_the_package(tmp_path):
    zpath = tmp_path / "add.zip"
    proc = run_cli("build", "add", "-o", str(zpath))
    assert proc.returncode == 0, proc.stderr
    assert "self-test: the solution got full marks from the zip" in proc.stdout
    with zipfile.ZipFile(zpath) as zf:
        names = set(zf.namelist())
    assert {"setup.sh", "run_autograder", f"requirements/jax-{release.NEWEST}.txt", "assignment.txt",
            "assignments/add/spec.toml", "solutions/add.py", "autograder/cli.py",
            "autograder/templates/test.j2"} <= names
    assert not any(n.startswith("assignments/matmul") for n in names)


@pytest.mark.parametrize("jax", [v for v in release.SUPPORTED if v != release.NEWEST])
def test_build_for_another_release_self_tests_its_zip_on_that_release(jax, tmp_path):
    """`build --jax`: the zip pins that release, its spec says so, and the self-test's
    grading ran on it (the grader's child reports its release; the self-test checks it)."""
    try:
        build.prefix_for(jax)
    except build.SelfTestFailed as e:     # CI has one: ./setup.sh --test makes .venv-jax-<other>
        pytest.skip(str(e))
    zpath = tmp_path / f"add-{jax}.zip"
    proc = run_cli("build", "add", "--jax", jax, "-o", str(zpath))
    assert proc.returncode == 0, proc.stderr
    assert f"(self-test: the solution got full marks from the zip), grading on jax {jax}" in proc.stdout
    with zipfile.ZipFile(zpath) as zf:
        names = zf.namelist()
        spec = tomllib.loads(zf.read("assignments/add/spec.toml").decode("utf-8"))
    assert [n for n in names if n.startswith("requirements/")] == [f"requirements/jax-{jax}.txt"]
    assert spec["jax"] == jax


@pytest.fixture
def autograder_root(gradescope_install, tmp_path):
    return fresh_root(gradescope_install, tmp_path)


def _run(root, submission):
    sub = root / "submission"
    shutil.rmtree(sub, ignore_errors=True)
    sub.mkdir()
    shutil.copy(submission, sub / "add.py")
    shutil.rmtree(root / "results", ignore_errors=True)
    proc = subprocess.run([str(root / "source" / "run_autograder")], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "AUTOGRADER_ROOT": str(root)})
    doc = json.loads((root / "results" / "results.json").read_text())
    assert validate(doc) == [], validate(doc)
    return proc, doc


def test_run_autograder_grades_a_correct_submission(autograder_root):
    proc, doc = _run(autograder_root, REPO / "solutions" / "add.py")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert doc["score"] == sum(t["max_score"] for t in doc["tests"]) > 10
    assert all(t["status"] == "passed" for t in doc["tests"])
    assert doc["extra_data"]["jax"] == release.INSTALLED      # the grader's child's own word
    # Secret cases are visible tests (Gradescope's hidden tests would also hide the total),
    # named by position only.
    secret = [t for t in doc["tests"] if "secret case" in t["name"]]
    assert secret and all(t["visibility"] == "visible" for t in doc["tests"])


# What the one-bug add kernel's feedback held on Gradescope at 15eeab9 (before issue 38),
# measured with benchmarks/feedback_size.py: 11,991 characters, 6.6 K of them the evidence,
# snippets and commands of the four checks that kept their points.
ONE_BUG_BEFORE = 11_991


def test_run_autograder_grades_a_one_bug_submission_in_half_the_feedback(autograder_root):
    proc, doc = _run(autograder_root, corpus("add") / "grid_one_step_too_long.py")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert tags(doc) == [[], ["out-of-bounds"]] * 4 and doc["score"] == 11
    tests = {t["number"]: t for t in doc["tests"]}
    # Checks that keep their points say so in one line: no evidence, snippet or command.
    assert tests["P1"]["output"] == ("Same bug, not charged again: this check found problem 1, Out-of-bounds "
                                     "access [out-of-bounds], which already cost points in test 1.2.\n")
    for n in ("P4", "P5", "P6"):
        assert tests[n]["output"] == ("Not run, not charged: problem 1, Out-of-bounds access [out-of-bounds], "
                                      "charged in test 1.2, stops this check before it can run.\n")
    # No green 0/0 test: neither the unscored estimate nor the unscored TPU timing is a
    # test; the estimate is the summary's one line while a correctness test fails.
    assert not {"S1", "T1"} & set(tests) and list(tests)[-1] == "P6"
    assert "Speed estimate (TPU v5e): none at M=4096, N=4096" in doc["output"]
    # The counts are Gradescope's own: 14 tests listed, 4 red, 10 green.
    failed = sum(t["status"] == "failed" for t in doc["tests"])
    assert (len(doc["tests"]), failed) == (14, 4)
    assert ("14 tests, as Gradescope lists them: 4 failed, 10 passed (6 clean; 1 the same bug, not charged "
            "again; 3 not run).") in doc["output"]
    # The reproduce command is the kit's (tests/test_handout.py runs it there).
    key = doc["extra_data"]["run_key"]
    assert (f"python -m autograder grade add.py -a add --case odd-rows --rung tpu-interpret --run-key {key}"
            in tests["2.2"]["output"])
    total = len(doc["output"]) + sum(len(t["output"]) for t in doc["tests"])
    assert total <= ONE_BUG_BEFORE / 2, total


def test_setup_is_idempotent(gradescope_install):
    again = subprocess.run(["bash", str(gradescope_install / "source" / "setup.sh")],
                           capture_output=True, text=True, timeout=900)
    assert again.returncode == 0 and "ready" in again.stdout, again.stdout[-2000:] + again.stderr[-2000:]


def test_a_grader_crash_still_writes_valid_results(autograder_root):
    spec_file = autograder_root / "source" / "assignments" / "add" / "spec.toml"
    saved = spec_file.read_text()
    spec_file.write_text(saved.replace("seed = 101", 'seed = "broken"'))
    try:
        proc, doc = _run(autograder_root, REPO / "solutions" / "add.py")
    finally:
        spec_file.write_text(saved)
    assert proc.returncode != 0
    assert doc["tests"][0]["name"].startswith("Autograder error")
    assert "seed" in doc["tests"][1]["output"] and doc["tests"][1]["visibility"] == "hidden"


def test_a_rate_limited_submission_keeps_its_previous_score(autograder_root):
    # What `build --rate-limit 1` puts in the zip, and Gradescope's metadata: one graded
    # submission an hour ago. The new one is not graded and keeps that score.
    (autograder_root / "source" / "rate_limit.json").write_text('{"submissions": 1, "window_hours": 24}\n')
    (autograder_root / "submission_metadata.json").write_text(json.dumps({
        "id": 2, "created_at": "2026-12-03T12:00:00-08:00",
        "previous_submissions": [{"submission_time": "2026-12-03T11:00:00-08:00", "score": 6.5,
                                  "results": {"score": 6.5, "tests": []}}]}))
    proc, doc = _run(autograder_root, corpus("add") / "wrong_formula.py")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert doc["score"] == 6.5 and doc["tests"][0]["tags"] == ["rate-limited"]
    assert "graded from 2026-12-04T11:00-08:00" in doc["output"]


def test_without_the_venv_the_results_format_still_writes_valid_results(autograder_root):
    """setup.sh never finished: run_autograder has no venv, and the system
    Python writes the catastrophic results with the package's own writer."""
    (autograder_root / "source" / ".venv").unlink()
    proc, doc = _run(autograder_root, REPO / "solutions" / "add.py")
    assert proc.returncode != 0
    assert doc["tests"][0]["name"].startswith("Autograder error")
    assert "no venv python found" in doc["tests"][1]["output"] and doc["tests"][1]["visibility"] == "hidden"


def test_a_grader_that_cannot_start_still_leaves_valid_results(autograder_root):
    """The grader dies before its own guard exists (an import fails): run_autograder
    writes the catastrophic results itself, with the same writer."""
    run = autograder_root / "source" / "autograder" / "gradescope" / "run.py"
    run.write_text("raise ImportError('a broken install')\n")
    proc, doc = _run(autograder_root, REPO / "solutions" / "add.py")
    assert proc.returncode != 0 and "a broken install" in proc.stderr
    assert doc["tests"][0]["name"].startswith("Autograder error")
    assert "exited with status" in doc["tests"][1]["output"]
