"""Every shown reproduction reproduces: the plain-JAX snippet of a failed test,
taken from the real results.json and run beside the student's file, shows the
same failure (an exception, or wrong elements under the grader's tolerance)."""
import re
import subprocess
import sys

import pytest
from conftest import corpus

pytestmark = [pytest.mark.jax, pytest.mark.grading]


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
    # Wrong results are run for 13 corpus bugs by the test below, without grading each.
])
def test_the_shown_snippet_reproduces_the_failure(grade_cli, tmp_path, name, number, shows):
    student = (corpus("add") / name).read_text()
    doc, _ = grade_cli(corpus("add") / name, "add", "--run-key", "11")
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

    from autograder.feedback import repro
    from autograder.grading import assignments
    from autograder.grading.run import plan as planning
    a = assignments.find("matmul")
    case = a.cases[1]                      # bfloat16: the tolerance matters
    run = planning.build(a, a.cases, a.rungs, 4).test_run(case.name, "tpu-interpret")
    text = repro.snippet(a, case, "tpu-interpret", {}, run.draw.seed)
    proc = _run(text, (REPO / "solutions" / "matmul.py").read_text(), "matmul.py", tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert re.search(r"wrong elements: 0 of \d+", proc.stdout), proc.stdout


# One failed test per corpus bug that a correctness test shows (probe-only bugs show
# the interpreter switches instead; hangs reproduce by hanging): (assignment, file,
# case, rung, what the snippet prints). "wrong": it counts wrong elements > 0.
SHOWN = [
    ("add", "nan_output.py", "small", "generic", "wrong"),
    ("add", "wrong_formula.py", "odd-rows", "tpu-interpret", "wrong"),
    ("add", "raises_in_kernel.py", "small", "generic", "raises"),
    ("matmul", "k_axis_parallel.py", "f32-256x384x256", "tpu-interpret", "wrong"),
    ("matmul", "unzeroed_accumulator.py", "f32-256x384x256", "generic", "wrong"),
    ("matmul", "bf16_accumulator.py", "bf16-256x384x256", "generic", "wrong"),
    ("softmax", "softmax_wrong_axis.py", "rows-20x256", "generic", "wrong"),
    ("softmax", "softmax_global_block_max.py", "rows-20x256", "tpu-interpret", "wrong"),
    ("softmax", "softmax_unstable.py", "logits100-37x128", "generic", "wrong"),
    ("dma_scale", "dma_missing_wait.py", "f32-192x256", "tpu-interpret", "wrong"),
    ("dma_scale", "dma_refill_before_use.py", "f32-192x256", "generic", "wrong"),
    ("dma_scale", "dma_oob_chunk.py", "f32-192x256", "tpu-interpret", "raises"),
    ("dma_scale", "dma_shared_semaphore.py", "f32-192x256", "tpu-interpret", "wrong"),
]


def test_every_corpus_bug_reproduces_with_the_snippet_its_test_shows(tmp_path):
    # The snippet a failed correctness test shows is repro.snippet on that test's own
    # run (case, rung, seed; render._snippet); each is run beside the buggy file, in
    # parallel processes, and must show the failure the grader charged.
    from concurrent.futures import ThreadPoolExecutor

    from autograder.feedback import repro
    from autograder.grading import assignments
    from autograder.grading.run import plan as planning

    def one(item):
        slug, name, case_name, rung, expect = item
        a = assignments.find(slug)
        case = a.case(case_name)
        run = planning.build(a, a.cases, a.rungs, 5).test_run(case.name, rung)
        folder = tmp_path / f"{slug}-{name}"
        folder.mkdir()
        proc = _run(repro.snippet(a, case, rung, {}, run.draw.seed), (corpus(slug) / name).read_text(),
                    a.entry_file, folder)
        text = proc.stdout + proc.stderr
        if expect == "raises":
            return item, proc.returncode != 0 and "Traceback" in text, text
        wrong = re.search(r"wrong elements: (\d+) of", text)
        return item, proc.returncode == 0 and wrong is not None and int(wrong.group(1)) > 0, text

    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(one, SHOWN))
    failed = [(item, text[-600:]) for item, ok, text in results if not ok]
    assert not failed, failed


def test_a_compile_reject_snippet_lowers_for_a_tpu_and_raises_what_the_check_quoted(tmp_path):
    # Running an interpreter cannot reproduce a compiler's refusal: the compile
    # check's snippet lowers for a TPU on the CPU, as the check does. It raises on
    # the corpus kernel with K blocks of 64 and lowers the solution cleanly.
    from conftest import REPO

    from autograder.feedback import repro
    from autograder.grading import assignments
    a = assignments.find("matmul")
    case = a.cases[0]
    text = repro.lowering_snippet(a, case, [case.seed])
    compiled = lambda src: src.replace("interpret=True", "interpret=False")
    (tmp_path / "bad").mkdir()
    (tmp_path / "good").mkdir()
    bad = _run(text, compiled((corpus("matmul") / "k_block_64.py").read_text()), "matmul.py", tmp_path / "bad")
    assert bad.returncode != 0 and "divisible by 8 and 128" in bad.stderr, bad.stderr[-2000:]
    good = _run(text, compiled((REPO / "solutions" / "matmul.py").read_text()), "matmul.py", tmp_path / "good")
    assert good.returncode == 0, good.stderr[-2000:]
    # Index maps with // and % (a flattened grid) lower too: the snippet asks a TPU's
    # rules, not the CPU's ("Unsupported TPU device kind: cpu").
    add = assignments.find("add")
    (tmp_path / "flat").mkdir()
    flat = _run(repro.lowering_snippet(add, add.cases[0], [add.cases[0].seed]),
                compiled((corpus("add") / "flat_grid.py").read_text()), "add.py", tmp_path / "flat")
    assert flat.returncode == 0, flat.stderr[-2000:]
