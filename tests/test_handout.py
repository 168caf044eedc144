"""`handout` through the real CLI: nothing secret in any file, the kit grades like
Gradescope on the visible cases, and the notebook runs top to bottom in a fresh
Jupyter kernel (nbclient) with the starter filled in from the solution."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, corpus, run_cli, tags

from autograder.grading import assignments
from autograder.instructor import notebook, starter

pytestmark = [pytest.mark.jax, pytest.mark.grading]


def _on_gradescope(tmp_path, student: Path, slug: str) -> dict:
    """``student`` graded as Gradescope grades it (the `gradescope` verb, every case): its results.json."""
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    shutil.copyfile(student, root / "submission" / f"{slug}.py")
    proc = run_cli("gradescope", "--root", str(root), "--assignment", slug)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads((root / "results" / "results.json").read_text())


def _secrets(slug):
    """Grepped independently of the grader's own leak check."""
    a = assignments.find(slug)
    solution = (REPO / "solutions" / f"{slug}.py").read_text()
    shown = starter.starter_for(REPO / "solutions" / f"{slug}.py")
    lines = [ln for ln in starter.solution_lines(solution) if len(ln) >= 12 and ln not in shown]
    hidden = [c for c in a.cases if not c.visible]

    def shapes_of(case):
        return {a.shape(i.shape, case) for i in a.inputs if i.kind == "array"} | {a.output_shape(case)}
    shown = set().union(*(shapes_of(c) for c in a.cases if c.visible))
    secret = set().union(*(shapes_of(c) for c in hidden)) - shown
    shapes = [f(s) for s in secret for f in (str, lambda s: "x".join(map(str, s)))]
    return lines, [c.name for c in hidden], shapes, [str(c.seed) for c in hidden]


@pytest.mark.parametrize("slug", ["add", "matmul", "softmax", "dma_scale", "flash_attention"])
def test_no_handout_file_holds_a_solution_line_or_a_secret_case(slug, tmp_path):
    out = tmp_path / "handout"
    proc = run_cli("handout", slug, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    lines, names, shapes, seeds = _secrets(slug)
    assert names and lines
    for path in (p for p in out.rglob("*") if p.is_file()):
        text = path.read_text(errors="replace")
        assert not [ln for ln in lines if ln in text], path
        assert not [n for n in names + shapes if n in text], path
        if path.suffix in (".toml", ".json", ".ipynb"):
            assert not [s for s in seeds if re.search(rf"(?<![\w.]){s}(?![\w.])", text)], path
    assert run_cli("handout", slug, "-o", str(out)).returncode == 1, "refuses a non-empty folder"


def test_the_notebook_runs_in_a_fresh_kernel_and_the_kit_grades_locally(tmp_path):
    import nbclient
    import nbformat
    out = tmp_path / "handout"
    assert run_cli("handout", "add", "-o", str(out)).returncode == 0
    nb = nbformat.read(out / "add.ipynb", as_version=4)
    nbformat.validate(nb)
    kernel = next(c for c in nb.cells if notebook.KERNEL_CELL_TAG in c.metadata.get("tags", []))
    kernel.source = "%%writefile add.py\n" + (REPO / "solutions" / "add.py").read_text()
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(out)}}).execute()
    printed = ["".join(o.get("text", "") for o in c.get("outputs", [])) for c in nb.cells
               if c.cell_type == "code"]
    runs = [t for t in printed if "wrong elements:" in t]
    assert len(runs) == 2 and all("wrong elements: 0 of" in t for t in runs), runs
    assert "RACE DETECTED" not in "".join(printed)
    graded, on_chip = printed[-2], printed[-1]
    assert on_chip.startswith("No TPU here") and "The grade never needs one." in on_chip
    assert "Element-wise add with a grid of blocks: 10 / 10" in graded, graded[-2000:]
    # The kit holds the visible cases only: two cases on two rungs, as on Gradescope.
    assert len([t for t in graded.splitlines() if t.startswith("[PASS]") and " · " in t]) == 4
    # The instructor's tools are left out as a whole; the kit's CLI offers what it can run.
    assert not (out / "autograder" / "instructor").exists()
    listed = subprocess.run([sys.executable, "-m", "autograder", "--help"], cwd=out, capture_output=True,
                            text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    verbs = set(re.findall(r"^    (\w+)", listed.stdout, re.M))
    assert {"grade", "estimate", "list"} <= verbs and not verbs & {"new", "check", "calibrate", "handout", "build"}


def test_new_then_check_passes_end_to_end(tmp_path):
    # The scaffolded assignment is consistent before the instructor edits it: the
    # solution is clean, its cases expose tiling bugs, its corpus file is caught.
    root = tmp_path / "assignments"
    assert run_cli("new", "relu", "--assignments", str(root)).returncode == 0
    proc = run_cli("check", "relu", "--assignments", str(root), "--estimate-container", "--run-keys", "4")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    for claim in ("solution clean on every rung and probe", "every case exposes tiling bugs",
                  "fits Gradescope's default container", "corpus grid_one_step_too_long.py",
                  "solution full marks on 4 run keys"):
        assert claim in proc.stdout
    assert "full marks on every one of 4 run keys" in proc.stdout
    assert "11 of 11 hold" in proc.stdout
    assert "estimated (not measured: --estimate-container)" in proc.stdout
    # A solution that is wrong: build's self-test grades it from the zip and refuses.
    solution = tmp_path / "solutions" / "relu.py"
    solution.write_text(solution.read_text().replace("jnp.maximum(x_ref[...], 0.0)", "x_ref[...]"))
    zip_path = tmp_path / "relu.zip"
    build = run_cli("build", "relu", "-o", str(zip_path), "--assignments", str(root))
    assert build.returncode == 1 and "self-test failed" in build.stderr and not zip_path.exists()



def test_a_replay_of_a_test_tied_to_another_cases_evidence_shows_the_same_problem_and_fix(tmp_path):
    # Issue 45: flash attention's accumulators reset on the query axis. On the generic rung a
    # sequential run writes every scratch before reading it, so test 3.1 fails with a wrong
    # result of its own; the whole grading ties it to the poisoning check's finding on case 1
    # (TPU interpret mode's fills against that case's test there). Its command replayed case 3
    # on the generic rung alone, which runs neither, and printed "Wrong result" with another
    # fix. The command now replays that evidence too: case 1 beside case 3, on every rung.
    student = corpus("flash_attention") / "reset_on_query_axis.py"
    doc = _on_gradescope(tmp_path, student, "flash_attention")
    tests = {t["number"]: t for t in doc["tests"]}
    key = doc["extra_data"]["run_key"]
    said = " ".join(tests["3.1"]["output"].split())
    assert tests["3.1"]["status"] == "failed" and ("Problem 1, Depends on uninitialized memory "
                                                   "[uninitialized-memory], explained under test 1.1") in said
    command = _commands(tests["3.1"]["output"])
    assert command == [f"python -m autograder grade flash_attention.py -a flash_attention --case f32-b2-s384-d64 "
                       f"--case logits-f32-b2-s384-d64 --run-key {key}"]
    fix = re.search(r"^Fix: (.+?)\.$", tests["1.1"]["output"], re.M).group(1).replace("\\", "")
    # No command names a secret case, and a secret case's test prints none.
    secret = [c.name for c in assignments.find("flash_attention").cases if not c.visible]
    assert not [n for t in doc["tests"] for c in _commands(t["output"]) for n in secret if n in c]
    assert not [t["number"] for t in doc["tests"] if t["name"].startswith("secret") and _commands(t["output"])]
    kit = tmp_path / "handout"
    assert run_cli("handout", "flash_attention", "-o", str(kit)).returncode == 0
    shutil.copyfile(student, kit / "flash_attention.py")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(command[0], shell=True, cwd=kit, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    flat = " ".join(done.stdout.split())
    # The same test number, the same problem explained under the same test, the same fix.
    assert "[FAIL] 3.1 logits-f32-b2-s384-d64 · generic interpreter (0/1): problem 1, see 1.1" in flat
    assert "Depends on uninitialized memory [uninitialized-memory], problem 1:" in flat and f"Fix: {fix}." in flat
    assert "1. Depends on uninitialized memory [uninitialized-memory]: cost" in flat and "Problems found: 1 " in flat
    # (The test that explains it says what it saw itself, as the whole grading's does: no problem of its own.)
    assert "Wrong result [wrong-result], problem" not in flat and "2. Wrong result" not in flat
    assert flat.count("[wrong-result]") == " ".join(tests["1.1"]["output"].split()).count("[wrong-result]")
    # A replay's score counts only what it ran: the tests of both cases, named as such.
    assert "A replay of tests 1.1, 1.2, 3.1, 3.2 only" in flat and "This replay is not your grade." in flat

def _commands(text: str) -> list[str]:
    """The grader commands a feedback text prints (a code block's line, or 'reproduce:')."""
    return re.findall(r"^(?:    |    reproduce: )?(python -m autograder grade [^\n`]+?)\s*$", text, re.M)


def test_every_reproduce_command_works_verbatim_in_the_kit(tmp_path):
    # Gradescope grades the upload with every case (secret ones too); the student pastes its
    # feedback's commands in the handout kit, beside their file, with the course's Python as
    # `python`. Each must run there as printed and replay the very data Gradescope used.
    kit = tmp_path / "handout"
    assert run_cli("handout", "add", "-o", str(kit)).returncode == 0
    readme = (kit / "README.md").read_text()
    assert "pallas-autograder" not in readme and "`python -m autograder grade add.py -a add`" in readme
    assert "[GLOSSARY.md](GLOSSARY.md)" in readme and "| P4 | Memory poisoning" in (kit / "GLOSSARY.md").read_text()
    student = corpus("add") / "wrong_formula.py"
    doc = _on_gradescope(tmp_path, student, "add")
    assert {tuple(t) for t in tags(doc)} == {("wrong-result",)}
    tests = {t["number"]: t for t in doc["tests"]}
    shown = {n: _commands(tests[n]["output"]) for n in ("1.1", "2.2")}
    key = doc["extra_data"]["run_key"]
    assert shown == {"1.1": [f"python -m autograder grade add.py -a add --case small --rung generic --run-key {key}"],
                     "2.2": [f"python -m autograder grade add.py -a add --case odd-rows --rung tpu-interpret "
                             f"--run-key {key}"]}
    evidence = re.search(r"\*\*Max abs error\*\*: (\S+)", tests["1.1"]["output"]).group(1).replace("\\", "")
    shutil.copyfile(student, kit / "add.py")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}

    def pasted(command: str) -> str:
        done = subprocess.run(command, shell=True, cwd=kit, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout
    first = pasted(shown["1.1"][0])
    # The same data: the same largest error, to the digit Gradescope showed; the same test
    # number and the same fix (a replay runs the checks that explain its test).
    assert "[FAIL] 1.1 small · generic interpreter (0/1)" in first and f"Max abs error: {evidence}" in first
    fix = re.search(r"^Fix: (.+?)\.$", tests["1.1"]["output"], re.M).group(1).replace("\\", "")
    assert f"Fix: {fix}." in " ".join(first.split()) and "A replay of test 1.1 only" in " ".join(first.split())
    assert "[FAIL] 2.2 odd-rows · TPU interpret mode" in pasted(shown["2.2"][0])
    # The kit's own grading prints commands that work there too (the same form).
    local = pasted("python -m autograder grade add.py -a add")
    again = [c for c in _commands(local) if "--case odd-rows" in c]
    assert again and again[0].startswith("python -m autograder grade add.py -a add --case odd-rows")
    assert "[FAIL] 2." in pasted(again[0])


def test_a_replay_in_the_kit_keeps_the_tests_number_and_fix_and_passes_no_check_it_ran_in_part(tmp_path):
    # Issue 45: test 1.2's command from Gradescope (matmul's K axis marked parallel), run
    # in the kit, printed 1.2 and its fix, but P5 and P6 as "[PASS]" where Gradescope said
    # "[SAME BUG]": poisoning had run on one case and grid order without the generic test
    # it compares with. Such a check says it was not run in full; and on Gradescope every
    # check that keeps its points names the test the problem is charged in (P5 said 3.2).
    student = corpus("matmul") / "k_axis_parallel.py"
    doc = _on_gradescope(tmp_path, student, "matmul")
    tests = {t["number"]: t for t in doc["tests"]}
    assert [n for n, t in tests.items() if t["status"] == "failed"] == ["1.2", "2.2", "3.2", "4.2"]
    charged = {n: tests[n]["extra_data"]["charged_in"] for n in ("P1", "P5", "P6")}
    assert charged == {"P1": "1.2", "P5": "1.2", "P6": "1.2"}
    assert "which already cost points in test 1.2." in " ".join(tests["P5"]["output"].split())
    command = _commands(tests["1.2"]["output"])
    assert command == [f"python -m autograder grade matmul.py -a matmul --case f32-256x384x256 --rung tpu-interpret "
                       f"--run-key {doc['extra_data']['run_key']}"]
    fix = re.search(r"^Fix: (.+?)\.$", tests["1.2"]["output"], re.M).group(1).replace("\\", "")
    kit = tmp_path / "handout"
    assert run_cli("handout", "matmul", "-o", str(kit)).returncode == 0
    shutil.copyfile(student, kit / "matmul.py")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(command[0], shell=True, cwd=kit, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    flat = " ".join(out.split())
    assert "[FAIL] 1.2 f32-256x384x256 · TPU interpret mode (0/1.5)" in out and f"Fix: {fix}." in flat
    assert "A replay of test 1.2 only" in flat
    for number, title in (("P5", "Memory poisoning: NaN and random fills"),
                          ("P6", "Grid order: shuffled parallel axes, two cores")):
        assert f"[PASS] {number}" not in out
        assert (f"[NOT RUN] {number} {title} (not counted): not run in full in this replay (the whole grading "
                "also gives it 1 other case and the generic interpreter test it compares with); it found nothing "
                "here") in flat
    # Nothing a replay did not see passes: the static checks ran on one case of the kit's two.
    assert "[PASS] P" not in out and "[SAME BUG] P1 Static: index maps over the whole grid (1/1): problem 1 " \
        "again (charged in 1.2)" in flat
    # A replay is no grade: its score counts what it ran (issue 45, D8).
    assert ("Its score, 1 / 2.5, counts only the 2 tests it ran (1.2, P1): 1 failed, 1 passed (1 the same bug, "
            "not charged again). Not counted, as this replay did not run them in full: P2, P3, P4, P5, P6, P7, P8 "
            "(7 points).") in flat
