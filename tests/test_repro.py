"""Every shown reproduction reproduces: the plain-JAX snippet of a failed test,
taken from the real results.json and run beside the student's file, shows the
same failure (an exception, or wrong elements under the grader's tolerance)."""
import re
import subprocess
import sys

import pytest
from conftest import CORPUS

pytestmark = pytest.mark.jax


def _snippet(test: dict) -> str:
    m = re.search(r"with plain JAX:\n\n(`{3,})\n(.*?)\n\1", test["output"], re.S)
    assert m, test["output"][-1500:]
    return m.group(2)


def _run(snippet: str, student: str, entry: str, tmp_path):
    (tmp_path / entry).write_text(student)
    (tmp_path / "repro.py").write_text(snippet)
    return subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("name,number,shows", [
    # TPU interpret mode raises on the block past the end (the generic rung clamps it).
    ("grid_one_step_too_long.py", "1.2", "Out-of-bounds block index (0, 2)"),
    # A wrong formula: the snippet counts wrong elements with the grader's own tolerance.
    ("wrong_formula.py", "1.1", "wrong elements:"),
])
def test_the_shown_snippet_reproduces_the_failure(grade_cli, tmp_path, name, number, shows):
    student = (CORPUS / "add" / name).read_text()
    doc, _ = grade_cli(CORPUS / "add" / name, "add", "--run-key", "11")
    test = next(t for t in doc["tests"] if t["number"] == number)
    assert test["status"] == "failed" and "# Case 'small' on the" in test["output"]
    # Tests that point at this explanation carry their own case's command.
    second = next(t for t in doc["tests"] if t["number"] == "2" + number[1:])
    assert "explained under test " + number in second["output"]
    assert f"--case odd-rows --rung {'generic' if number.endswith('1') else 'tpu-interpret'} --run-key 11" \
        in second["output"]
    proc = _run(_snippet(test), student, "add.py", tmp_path)
    text = proc.stdout + proc.stderr
    assert shows in text, text[-2000:]
    if shows == "wrong elements:":
        wrong = int(re.search(r"wrong elements: (\d+) of (\d+)", text).group(1))
        assert proc.returncode == 0 and wrong > 0
    else:
        assert proc.returncode != 0


def test_the_snippet_of_a_correct_kernel_finds_nothing_wrong(tmp_path):
    # The same snippet on the instructor's solution: zero wrong elements (the
    # snippet's tolerance is the grader's, not a stricter or looser one).
    from conftest import REPO

    from autograder import plan as planning, repro, spec
    a = spec.find("matmul")
    case = a.cases[1]                      # bfloat16: the tolerance matters
    run = planning.build(a, a.cases, a.rungs, 4, with_probes=False).test_run(case.name, "tpu-interpret")
    text = repro.snippet(a, case, "tpu-interpret", {}, run.draw.seed)
    proc = _run(text, (REPO / "solutions" / "matmul.py").read_text(), "matmul.py", tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert re.search(r"wrong elements: 0 of \d+", proc.stdout), proc.stdout
