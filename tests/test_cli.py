"""The real CLI on correct, buggy and broken submissions: exact finding IDs."""
import json

import pytest
from conftest import REPO, corpus, probe_tags, run_cli, tags

pytestmark = [pytest.mark.jax, pytest.mark.grading]   # grades through real JAX in a child process

ADD = corpus("add")
MATMUL = corpus("matmul")
OK = []


def _all(doc, tag_list):
    return tags(doc) == [tag_list] * len(tags(doc))


# Every solution gets full marks (every probe) under load: tests/test_load.py.


@pytest.mark.parametrize("path,slug", [
    (ADD / "nested_control_flow.py", "add"),
    # Index maps read a scalar-prefetched order table (built with jnp.arange outside the
    # kernel: bookkeeping, not work); a run_scoped buffer inside.
    (ADD / "scalar_prefetch_order.py", "add"),
    (ADD / "colab_notebook.ipynb", "add"),
    (MATMUL / "accumulate_in_output.py", "matmul"),
    # Traced as for a TPU (emit_pipeline reads the chip's tiling while tracing), then graded.
    (MATMUL / "emit_pipeline_k.py", "matmul"),
    # Glue outside the kernels that only moves data (docs/guides/security.md, "Work outside the kernel"): transposes,
    # a constant pad, chained kernels, slices, custom_vjp and jit; a fori_loop placing each
    # row block's kernel output at the counter's rows; astype before the call.
    (ADD / "glue_outside_kernels.py", "add"),
    (ADD / "kernel_per_row_block.py", "add"),
    (MATMUL / "astype_outside.py", "matmul"),
])
def test_correct_corpus_submissions_get_full_marks(grade_cli, path, slug):
    doc, _ = grade_cli(path, slug)
    assert _all(doc, []) and doc["score"] == sum(t["max_score"] for t in doc["tests"])


# add's wrong_formula is graded (every test wrong-result) through the gradescope verb by test_handout.
@pytest.mark.parametrize("path,slug,cases", [
    (MATMUL / "wrong_formula.py", "matmul", ("f32-256x384x256", "hidden-bf16-256x640x384")),
])
def test_wrong_formula_is_wrong_result_everywhere(grade_cli, path, slug, cases):
    # A visible and a hidden case, both dtypes; --case skips the probes (not under test here).
    doc, out = grade_cli(path, slug, *[a for c in cases for a in ("--case", c)])
    assert _all(doc, ["wrong-result"]) and all(t["score"] == 0 for t in doc["tests"]
                                                if not t["number"].startswith("P"))
    assert "outputs are wrong" in out


def test_bf16_accumulation_is_numerics_on_bf16_cases_only(grade_cli):
    doc, _ = grade_cli(MATMUL / "bf16_accumulator.py", "matmul")
    assert tags(doc) == [[], [], ["numerics"], ["numerics"], [], [], ["numerics"], ["numerics"]]
    # The stress probe's long bfloat16 reduction reads it as lost precision, charged once:
    # one line, pointing at the test that explains it.
    stress = next(t for t in doc["tests"] if t["name"].startswith("Numerics: stress"))
    assert stress["tags"] == ["numerics"] and stress["score"] == stress["max_score"]
    assert stress["output"] == ("Same bug, not charged again: this check found problem 1, Numerical problem "
                                "[numerics], which already cost points in test 2.1.\n")


def test_grid_one_step_too_long_passes_generic_but_not_tpu_interpret(grade_cli):
    doc, out = grade_cli(ADD / "grid_one_step_too_long.py", "add")
    assert tags(doc) == [[], ["out-of-bounds"]] * 4
    assert "Out-of-bounds block index" in " ".join(out.split())
    # The static scan names the grid point and block, and says the generic interpreter clamped it.
    index_maps = next(t for t in doc["tests"] if t["name"].startswith("Static: index maps"))
    assert index_maps["tags"] == ["out-of-bounds"] and index_maps["score"] == index_maps["max_score"]
    # The scan saw the same bug: one line, not charged again (its evidence is test 1.2's).
    assert index_maps["output"] == ("Same bug, not charged again: this check found problem 1, Out-of-bounds "
                                    "access [out-of-bounds], which already cost points in test 1.2.\n")
    # The rung ladder is explained once, under the first test the problem cost, with the
    # fix in the kernel's terms: the scan's grid axis, the input, its dimension, the line.
    first = next(t for t in doc["tests"] if t["number"] == "1.2")
    assert "clamps" in first["output"] and "caught here" in first["output"]
    fix = ("grid axis 1 runs 3 steps on case small, but x has pl.cdiv(N, 128) = 2 blocks along N: make that axis "
           "pl.cdiv(N, 128) long")
    # At the line that holds the fault (the grid=, not the call's line above it), quoted as written.
    assert ("At grid_one_step_too_long.py:15:\n\n```\ngrid=(x.shape[0] // 8, x.shape[1] // 128 + 1),\n```\n\n"
            "- **Inputs**") in first["output"]
    assert f"Fix: {fix}." in " ".join(first["output"].split())
    fix += " (at grid_one_step_too_long.py:15)"
    # The terminal report ends with the score and the problem (its last 80 x 24 screen),
    # and says what each kept point is: the same bug, or a check the bug kept from running.
    lines = out.splitlines()
    last = " ".join(" ".join(lines[-24:]).split())
    assert "Element-wise add with a grid of blocks: 11 / 16" in last and "Problems found: 1" in last
    assert (f"1. Out-of-bounds access [out-of-bounds]: cost 5 points in tests 1.2, 2.2, 3.2, 4.2. Fix: {fix}. "
            "Explained under test 1.2.") in last
    assert ("14 tests, as Gradescope lists them: 4 failed, 10 passed (6 clean; 1 the same bug, not charged again; "
            "3 not run).") in last and len(doc["tests"]) == 14
    # One line while a test fails: no figure, since the grid misses the arrays at the speed size.
    assert "Speed estimate (TPU v5e): none at M=4096, N=4096: at this size input 0" in last
    assert out.count("Speed estimate") == 1
    flat = " ".join(out.split())
    assert "[SAME BUG] P1 Static: index maps over the whole grid (1/1): problem 1 again (charged in 1.2), " \
        "not charged again" in flat and "[PASS] P1" not in out
    assert flat.count("(1/1): stopped by problem 1 (charged in 1.2), not charged") == 3
    # Everything fits 80 columns (prose wraps at 79) but the commands, kept whole to paste.
    assert all(len(line) <= 80 or "autograder grade" in line for line in lines), \
        [line for line in lines if len(line) > 80]
    # The dynamic probes' TPU runs raise the same IndexError: one bug, charged once (in test 1.2).
    probes = [t for t in doc["tests"] if t["number"].startswith("P")]
    assert {tuple(t["tags"]) for t in probes} == {("out-of-bounds",), ()}
    assert all(t["score"] == t["max_score"] for t in probes)
    assert {t["extra_data"]["charged_in"] for t in probes if t["tags"]} == {"1.2"}
    # One block map, under test 1.2, at its own case: the block asked for outside the array
    # and the window the generic interpreter reads instead; and the one-bug report fits a screen.
    maps = [t["number"] for t in doc["tests"] if "X asked for outside the array" in t["output"]]
    assert maps == ["1.2"] and t_map_lines(first["output"]) == [
        '    0  1| 2', '0   .  =| X', '1   .  .|']
    assert [t["number"] for t in doc["tests"] if (t.get("extra_data") or {}).get("block_maps")] == ["1.2"]
    # (The tests first, then the summary: about as long as when the summary led, and the
    # line that holds the fault quoted.)
    assert out.count("X asked for outside the array") == 1 and len(out.splitlines()) < 130


def t_map_lines(output: str) -> list[str]:
    """The rows of the block map in a test's Markdown output, under its title line."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('input "x_ref" (16, 256) in 8 x 128 blocks'))
    return lines[start + 1:start + 4]


def test_nan_output_is_numerics(grade_cli):
    doc, _ = grade_cli(ADD / "nan_output.py", "add")
    assert _all(doc, ["numerics"])
    assert all(not v for v in probe_tags(doc).values())


@pytest.mark.parametrize("name,problem,needle", [
    ("syntax_error.py", "syntax-error", "syntax error at syntax_error.py:6"),
    ("missing_function.py", "function-missing", "does not define add(x, y)"),
    ("wrong_arity.py", "wrong-arity", "add(x, y, z)"),
    ("import_error.py", "import-error", "pallas_helpers_that_do_not_exist"),
    ("exits_at_import.py", "exit-at-import", "exit(0)"),
    ("memory_hog.py", "memory-limit", "600 MB"),
    ("raises_in_kernel.py", "exception", "scale_factor"),
    ("wrong_shape.py", "wrong-shape", "expected (16, 256)"),
    ("returns_tuple.py", "wrong-type", "tuple"),
    ("wrong_dtype.py", "wrong-dtype", "returned dtype bfloat16; expected float32"),
    ("os_exit_in_call.py", "killed", "ended abruptly (exit code 3)"),
])
def test_broken_submissions_are_clear_submission_errors(grade_cli, name, problem, needle):
    # A replay of case small's tests, with the checks that run on it.
    doc, out = grade_cli(ADD / name, "add", "--case", "small")
    correctness = [t for t in doc["tests"] if not t["number"].startswith("P")]
    assert [t["number"] for t in correctness] == ["1.1", "1.2"] and all(t["score"] == 0 for t in correctness)
    assert all(t["tags"] == ["submission-error"] and t["status"] == "failed" for t in correctness)
    assert needle in " ".join(out.split()), out[-2000:]
    assert {t["extra_data"]["problem"] for t in correctness} == {problem}


def test_infinite_loop_is_a_timeout_and_grading_stays_bounded(grade_cli):
    # The function loops while being traced: one run per case hangs, and the other
    # rung's run of that case (the same trace) is not started (no probes: --case selects).
    doc, out = grade_cli(ADD / "infinite_loop.py", "add", "--case-timeout", "5", "--case", "small",
                         "--case", "odd-rows", "--case", "hidden-wide")
    assert _all(doc, ["submission-error"])
    assert {t["extra_data"]["problem"] for t in doc["tests"] if t["number"][0].isdigit()} == {"timeout"}
    # Two visible cases say so (explained once, pointed to once); the secret one only
    # that it timed out.
    outputs = "".join(t["output"] for t in doc["tests"])
    assert outputs.count("did not finish within 5 s, while tracing") == 2
    assert outputs.count("not run: tracing the same call already hung") == 2
    assert "Problems found: 1" in out and " ".join(out.split()).count("Look for a loop that never ends") == 1
    # The tracer says where the student's code was when it was stopped: the loop's line, as written.
    assert "At infinite_loop.py:8:\n\n    while True:\n" in out
    assert "(at infinite_loop.py:8)" in " ".join(out.split())
    # The checks the hang kept from running point there in one line each (no explanation,
    # snippet or command of their own: issue 45's report of this kernel was 294 lines).
    assert out.count("default_rng") == 1 and all(
        t["output"].startswith("Problem 1, Submission cannot be graded [submission-error], explained under test 1.1")
        for t in doc["tests"] if t["number"].startswith("P"))
    # Each hang takes its tracer down; after two hangs and no finished trace the
    # third signature is not tried, and with nothing traced no grader child starts.
    assert doc["extra_data"]["children"] == 2
    assert doc["execution_time"] < 40


def test_missing_file_lists_what_was_uploaded(grade_cli, tmp_path):
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "notes.txt").write_text("hi")
    (sub / "my_add.py").write_text("def add(x, y): return x + y\n")
    (sub / "helpers.py").write_text("X = 1\n")   # two Python files: which one is the kernel?
    doc, out = grade_cli(sub, "add")
    assert _all(doc, ["submission-error"])
    assert "expected a file named add.py" in out and "my_add.py" in out and "notes.txt" in out


def test_folder_submission_finds_the_entry_file(grade_cli, tmp_path):
    sub = tmp_path / "submission" / "nested"
    sub.mkdir(parents=True)
    (sub / "add.py").write_text((REPO / "solutions" / "add.py").read_text())
    doc, _ = grade_cli(tmp_path / "submission", "add", "--case", "small")
    assert _all(doc, [])


def test_rung_and_case_selection_with_a_relative_path(grade_cli):
    # run_cli works in the repo root, so this path is relative to the grader's cwd.
    # A replay of test 1.2 keeps its number, with the checks that run on its case (numbered
    # as the whole grading numbers them), and without the speed estimate.
    doc, out = grade_cli("solutions/add.py", "add", "--case", "small", "--rung", "tpu-interpret")
    assert [(t["number"], t["name"]) for t in doc["tests"]][:1] == [("1.2", "small · TPU interpret mode")]
    assert [t["number"] for t in doc["tests"]] == ["1.2", "P1", "P2", "P3", "P4", "P5", "P6"]
    assert doc["score"] == sum(t["max_score"] for t in doc["tests"]) and "A replay of test 1.2 only" in out


def test_html_format_through_the_cli(tmp_path):
    # Each format's structure is checked from findings in test_render; here the CLI's
    # --format reaches both what it prints and results.json.
    results = tmp_path / "r.json"
    proc = run_cli("grade", str(ADD / "wrong_formula.py"), "-a", "add", "--case", "small",
                   "--format", "html", "--results", str(results))
    assert proc.returncode == 0 and proc.stdout.startswith("<!DOCTYPE html>")
    assert "<h3>Wrong result [wrong-result], problem 1</h3>" in proc.stdout and "####" not in proc.stdout
    doc = json.loads(results.read_text())
    assert {t["output_format"] for t in doc["tests"]} == {"html"} and doc["output_format"] == "html"


@pytest.mark.parametrize("args,needle", [
    (["grade", "x.py", "--assignment", "nope"], "valid: add, dma_scale, flash_attention, matmul, softmax"),
    (["grade", "does-not-exist.py", "--assignment", "add"], "does not exist"),
    (["grade", "solutions/add.py", "--assignment", "add", "--case", "zzz"], "valid cases: small, odd-rows;"),
    (["grade", "solutions/add.py", "--assignment", "add", "--format", "pdf"], "invalid choice"),
])
def test_bad_arguments_exit_nonzero_saying_what_is_valid(args, needle):
    proc = run_cli(*args)
    assert proc.returncode == 2 and needle in proc.stderr
    assert "hidden-" not in proc.stderr, "secret case names are never listed"


def test_list_verb():
    proc = run_cli("list")
    assert proc.returncode == 0 and proc.stdout.split() == ["add", "dma_scale", "flash_attention", "matmul", "softmax"]


def test_k_axis_outermost_is_an_output_block_revisit_on_tpu_interpret_only(grade_cli):
    doc, out = grade_cli(MATMUL / "k_axis_outermost.py", "matmul", "--case", "f32-256x384x256")
    assert tags(doc) == [[], ["output-block-revisit"]]
    assert "Revisited block" in out


def test_debug_prints_are_shown_for_visible_cases_only(grade_cli):
    # jax.debug.print and pl.debug_print are rebuilt from their format strings and
    # run in the grader's child; what they print for a hidden case is dropped.
    doc, out = grade_cli(ADD / "debug_prints.py", "add", "--case", "small", "--case", "hidden-wide")
    assert doc["score"] == sum(t["max_score"] for t in doc["tests"]) and _all(doc, [])
    text = json.dumps(doc)
    assert "ROWS 16 COLS 256" in out and "KERNEL-BLOCK 1" in out and "ROWS 16 COLS 256" in text
    assert "ROWS 40" not in out and "ROWS 40" not in text


def test_the_shipped_starter_says_so_once(grade_cli, tmp_path):
    from autograder.instructor.starter import starter_for
    starter = tmp_path / "add.py"
    starter.write_text(starter_for(REPO / "solutions" / "add.py"))
    doc, out = grade_cli(starter, "add")
    assert doc["score"] == 0 and _all(doc, ["submission-error"])
    assert out.count("still raises NotImplementedError") == 1
    assert "add(x, y) in add.py still raises NotImplementedError" in doc["output"]
    assert all(t["extra_data"]["problem"] == "not-implemented" for t in doc["tests"]
               if t["number"][0].isdigit())
    # Nothing traced, nothing to estimate and no TPU points at stake: no speed entries at all.
    assert not {"S1", "T1"} & {t["number"] for t in doc["tests"]} and "Speed estimate" not in out


def test_a_single_file_is_graded_as_that_file_uploaded_alone(grade_cli, tmp_path):
    # Gradescope grades a folder holding the upload; locally a file argument is graded the
    # same way: same findings, same points, same maximum, and a note on the file's name.
    upload = tmp_path / "upload"
    upload.mkdir()
    source = (corpus("add") / "grid_one_step_too_long.py").read_text()
    (upload / "my_add.py").write_text(source)
    alone, out = grade_cli(upload / "my_add.py", "add", "--run-key", "5")
    folder, _ = grade_cli(upload, "add", "--run-key", "5")
    for doc in (alone, folder):
        assert doc["score"] == 11 and sum(t["max_score"] for t in doc["tests"]) == 16
        assert "Graded my_add.py as add.py" in doc["output"] and "name it that" in doc["output"]
    assert [(t["number"], t["score"], t["tags"], t["status"]) for t in alone["tests"]] == \
        [(t["number"], t["score"], t["tags"], t["status"]) for t in folder["tests"]]
    # Status agrees with score: a check that keeps its points under charge-once passes.
    assert all((t["status"] == "passed") == (t["score"] >= t["max_score"]) for t in alone["tests"])
    assert "Problems found: 1" in out and out.count("Which rung catches it") == 1


def test_terminal_progress_colour_interrupt_and_closed_pipe(tmp_path):
    import os
    import pty
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path
    cmd = [sys.executable, "-m", "autograder", "grade", str(ADD / "grid_one_step_too_long.py"), "-a", "add",
           "--case", "small"]
    # Progress on a terminal's stderr; no colour in a pipe.
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, cwd=REPO)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    out = proc.communicate()[0].decode()
    assert proc.returncode == 0 and b"\rgrading: small \xc2\xb7 TPU interpret mode" in seen
    assert "\033[" not in out and "[FAIL] 1.2" in out
    # A closed pipe: no traceback.
    head = subprocess.run(f"{' '.join(cmd)} | head -2", shell=True, capture_output=True, text=True, cwd=REPO)
    assert "Traceback" not in head.stderr and len(head.stdout.splitlines()) == 2
    # Ctrl-C: one line, exit 130. Interrupted while a kernel that never returns runs
    # (a fixed sleep raced the grading once grading got fast enough to finish first).
    hang = [*cmd[:4], str(ADD / "infinite_loop.py"), *cmd[5:]]
    proc = subprocess.Popen(hang, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not children.read_text().strip():
        time.sleep(0.1)
    time.sleep(1)
    assert proc.poll() is None, "the grading ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.strip() == "pallas-autograder: interrupted; nothing was written"


def test_a_replays_score_counts_only_what_it_ran_in_every_form(grade_cli, tmp_path):
    # Issue 45 (D8): a replay of one failed test printed "6 / 7": the checks it ran in part
    # ("not run in full, costs nothing here") counted as earned. A replay is no grade: its
    # score counts the test it replays and the checks that ran (P1 found the same bug,
    # charged in 1.2: kept, as in the whole grading); the others count neither way.
    args = ("--case", "small", "--rung", "tpu-interpret", "--run-key", "5")
    doc, out = grade_cli(ADD / "grid_one_step_too_long.py", "add", *args)
    flat = " ".join(out.split())
    head = "Element-wise add with a grid of blocks: 1 / 2 of what the replay of test 1.2 ran (not a grade)"
    assert flat.startswith(head) and flat.count(head) == 2          # at the top and on the last screen
    assert "[SAME BUG] P1 Static: index maps over the whole grid (1/1)" in flat
    assert ("[NOT RUN] P2 Static: TPU compile readiness (not counted): not run in full in this replay (the whole "
            "grading also gives it 3 other cases); it found nothing here [NOT RUN] P3") in flat
    assert "[NOT RUN] P4 Memory poisoning: NaN and random fills (not counted): stopped by problem 1 (charged in " \
        "1.2) [NOT RUN] P5" in flat
    assert flat.endswith(
        "This replay is not your grade. Its score, 1 / 2, counts only the 2 tests it ran (1.2, P1): 1 failed, "
        "1 passed (1 the same bug, not charged again). Not counted, as this replay did not run them in full: P2, "
        "P3, P4, P5, P6 (5 points). The whole grading also runs the other tests, the speed estimate and any "
        "instructor checks.")
    # results.json adds up to the same: what did not run is 0 of 0, and says why.
    scores = {t["number"]: (t["score"], t["max_score"]) for t in doc["tests"]}
    assert scores == {"1.2": (0, 1), "P1": (1, 1), **{f"P{i}": (0, 0) for i in range(2, 7)}}
    assert doc["score"] == 1 and doc["extra_data"]["replay"] == {
        "tests": ["1.2"], "counted": ["1.2", "P1"], "not_counted": ["P2", "P3", "P4", "P5", "P6"],
        "not_counted_points": 5}
    assert doc["output"].startswith(f"#### {head}")
    assert "Not counted in this replay's score: not run in full" in next(t["output"] for t in doc["tests"]
                                                                       if t["number"] == "P2")
    # The page says the same.
    proc = run_cli("grade", str(ADD / "grid_one_step_too_long.py"), "-a", "add", *args, "--format", "html")
    assert proc.returncode == 0 and f"<title>{head}</title>" in proc.stdout
    assert '<p class="score">Replay of test 1.2: 1 / 2 of what it ran (not a grade)</p>' in proc.stdout
    assert 'P4 Memory poisoning: NaN and random fills <span class="pts">(not counted)</span>' in proc.stdout
