"""Instructor verbs without JAX: `new`, the spec reference page, `check --quick`,
and `build` refusing an assignment that cannot grade (through the real CLI)."""
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import REPO, run_cli, trimmed_add

from autograder import spec
from autograder.grading import assignments
from autograder.instructor import reference_page, scaffold
from autograder.spec import mistakes


def test_new_scaffolds_an_assignment_that_loads_and_never_overwrites(tmp_path):
    root = tmp_path / "assignments"
    proc = run_cli("new", "relu", "--assignments", str(root))
    assert proc.returncode == 0, proc.stderr
    for name in ("spec.toml", "reference.py", "README.md", "corpus/expectations.toml"):
        assert (root / "relu" / name).is_file(), name
    assert (tmp_path / "solutions" / "relu.py").is_file()
    a = assignments.load(root / "relu")
    assert a.entry_function == "relu" and [c.name for c in a.cases if not c.visible] == ["hidden-wide"]
    again = run_cli("new", "relu", "--assignments", str(root))
    assert again.returncode == 1 and "already exists: new never overwrites" in again.stderr
    bad = run_cli("new", "Relu-2", "--assignments", str(root))
    assert bad.returncode == 1 and "lowercase Python identifier" in bad.stderr
    shadow = run_cli("new", "numpy", "--assignments", str(root))
    assert shadow.returncode == 1 and "would shadow it" in shadow.stderr and not (root / "numpy").exists()


def test_new_like_an_existing_assignment_takes_its_spec(tmp_path):
    root = tmp_path / "assignments"
    made = scaffold.new("mm", root, like="matmul")
    a = assignments.load(root / "mm")
    assert (root / "mm" / "spec.toml") in made and a.entry_file == "mm.py" and a.reference == "reference.py:mm"
    assert [c.name for c in a.cases] == [c.name for c in assignments.find("matmul").cases]
    with pytest.raises(scaffold.ScaffoldError, match="--like: no assignment 'nope'"):
        scaffold.new("zz", root, like="nope")
    assert not (root / "zz").exists() and not (tmp_path / "solutions" / "zz.py").exists()


def test_an_unknown_key_names_the_closest_known_one(tmp_path):
    folder = tmp_path / "add"
    shutil.copytree(REPO / "assignments" / "add", folder)
    text = (folder / "spec.toml").read_text().replace("entry_function =", "entry_functon =")
    (folder / "spec.toml").write_text(text)
    with pytest.raises(spec.SpecError, match="did you mean 'entry_function'"):
        assignments.load(folder)


def test_the_spec_reference_page_is_the_readers_own_account():
    page = reference_page.page()
    assert (REPO / "docs" / "spec-reference.md").read_text() == page, \
        "regenerate: python -m autograder.instructor.reference_page > docs/spec-reference.md"
    for key in ("`entry_function`", "`cases[].secret`", "`probes.grid-order.seeds`", "`dims.<dim>.multiple_of`"):
        assert key in page


def test_check_quick_and_build_refuse_a_reference_that_does_not_resolve(tmp_path):
    root = tmp_path / "assignments"
    scaffold.new("relu", root)
    ok = run_cli("check", "relu", "--quick", "--assignments", str(root))
    assert ok.returncode == 0 and "5 of 5 hold" in ok.stdout, ok.stdout + ok.stderr   # with its checks
    spec_file = root / "relu" / "spec.toml"
    spec_file.write_text(spec_file.read_text().replace('"reference.py:relu"', '"reference.py:relux"'))
    bad = run_cli("check", "relu", "--quick", "--assignments", str(root))
    assert bad.returncode == 1 and "reference resolves" in bad.stdout and "NO" in bad.stdout
    assert "AttributeError" in bad.stdout and "relux" in bad.stdout
    zip_path = tmp_path / "relu.zip"
    build = run_cli("build", "relu", "-o", str(zip_path), "--assignments", str(root))
    assert build.returncode == 1 and "cannot grade" in build.stderr and not zip_path.exists()


@pytest.mark.parametrize("slug", ["add", "matmul", "softmax", "dma_scale", "flash_attention"])
def test_every_bundled_assignment_passes_the_quick_check_and_builds(slug, tmp_path):
    quick = run_cli("check", slug, "--quick")
    a = assignments.find(slug)
    # flash_attention has custom checks and declares mistakes beside its reference.
    rows = 4 + (a.checks is not None) + bool(mistakes.of(a))
    assert quick.returncode == 0 and f"{rows} of {rows} hold" in quick.stdout, quick.stdout + quick.stderr
    zip_path = tmp_path / f"{slug}.zip"
    build = run_cli("build", slug, "-o", str(zip_path), "--no-self-test")
    assert build.returncode == 0, build.stderr
    with zipfile.ZipFile(zip_path) as zf:
        names = zf.namelist()
    assert f"assignments/{slug}/spec.toml" in names and f"solutions/{slug}.py" in names
    # Every bundled assignment keeps its corpus in its own folder, as an instructor's does; build leaves it out.
    assert (REPO / "assignments" / slug / "corpus" / "expectations.toml").is_file()
    assert not any("/corpus/" in n for n in names), "the corpus is the instructor's, not the grader's"
    if assignments.find(slug).checks is not None:
        assert f"assignments/{slug}/checks.py" in names     # the custom checks run on Gradescope


def test_build_from_a_regular_install_finds_the_checkout_or_says_where_it_looked(tmp_path, monkeypatch):
    """A regular install's site-packages holds no setup.sh or run_autograder: build takes them
    (and the package's source) from the checkout, found from the running package, the current
    folder and its parents, or the folder pip installed from."""
    from autograder.instructor import checkout
    assert checkout.find() == REPO
    cli = Path(sys.executable).parent / "pallas-autograder"     # the installed copy's console script
    if not cli.exists():
        pytest.skip(f"no installed console script at {cli} (run ./setup.sh)")
    out = tmp_path / "elsewhere"
    out.mkdir()
    proc = subprocess.run([str(cli), "build", "add", "-o", "add.zip", "--no-self-test", "--assignments",
                           str(REPO / "assignments")], capture_output=True, text=True, timeout=300, cwd=out)
    assert proc.returncode == 0, proc.stderr
    names = zipfile.ZipFile(out / "add.zip").namelist()
    assert {"setup.sh", "run_autograder", "requirements/jax-0.12.0.1.txt", "autograder/cli.py"} <= set(names)
    assert [n for n in names if n.startswith("requirements/")] == ["requirements/jax-0.12.0.1.txt"]
    # Nowhere to be found: the error says what it looked for, and where.
    monkeypatch.setattr(checkout, "PACKAGE", tmp_path / "site-packages" / "autograder")
    monkeypatch.setattr(checkout, "installed_from", lambda: None)
    monkeypatch.chdir(out)
    with pytest.raises(checkout.NoCheckout) as e:
        checkout.find()
    for needle in ("pyproject.toml names 'pallas-autograder'", "run_autograder", str(out),
                   str(tmp_path / "site-packages"), "run this from your pallas-autograder checkout"):
        assert needle in str(e.value), needle


def test_handout_of_a_new_assignment_is_written_and_still_refuses_a_secret_seed(tmp_path):
    """The template's secret case has seed 3: "Python 3" in the notebook's kernelspec is
    the format's own, not a leak; a 3 in a cell is."""
    import json

    from autograder.instructor import handout
    scaffold.new("relu", tmp_path / "assignments")
    a = assignments.load(tmp_path / "assignments" / "relu")
    assert "3" in handout.secrets_of(a)["secret seed or value"]
    files = handout.write(a, tmp_path / "handout")
    notebook = tmp_path / "handout" / "relu.ipynb"
    assert notebook in files and "Python 3" in notebook.read_text()
    doc = json.loads(notebook.read_text())
    doc["cells"][0]["source"] = ["seed = 3\n"]
    notebook.write_text(json.dumps(doc))
    assert handout.leaks(a, tmp_path / "handout") == ["secret seed or value '3' in relu.ipynb"]


def test_check_finds_input_data_that_repeats_a_block():
    """Non-periodic data: random inputs never repeat one of the solution's blocks;
    integers drawn with a scale that rounds to zero do, and `check` says which input."""
    from dataclasses import replace

    from autograder.instructor import check
    a = assignments.find("add")
    from autograder.pallas_surface.static.facts import decode
    op = {"array_shape": [16, 256], "block_shape": [8, 128], "grid": [2, 2], "out_of_bounds": [],
          "out_of_bounds_count": 0, "partial_blocks": [], "partial_count": 0}
    calls = decode("index-maps", {"calls": [{"grid": [2, 2], "dimension_semantics": ["parallel"] * 2, "skipped": [],
                                             "operands": [{**op, "operand": "input 0", "is_output": False},
                                                          {**op, "operand": "output 0", "is_output": True}]}]}).calls
    assert check._repeated_blocks(a, a.cases[0], calls) == []
    coarse = replace(a, inputs=tuple(replace(i, dtype="int32", scale=0.001) for i in a.inputs))
    assert check._repeated_blocks(coarse, a.cases[0], calls) == [
        f"small: input {name} repeats a (8, 128) block (periodic data lets a kernel that reads the wrong "
        "block pass)" for name in ("x", "y")]


@pytest.mark.jax
@pytest.mark.grading
def test_check_measures_the_grading_in_gradescopes_default_container(tmp_path):
    """Where cgroups can be written (as root), `check` grades the solution again at
    half a CPU and 768 MB and reports what it measured."""
    from autograder.instructor import check
    from autograder.isolation import container
    if container.available() is not None:
        pytest.skip(f"no emulated container here: {container.available()}")
    folder = trimmed_add(tmp_path / "assignments", '[[cases]]\nname = "small"\ndims = { M = 16, N = 256 }\n'
                         'seed = 101\npoints = 2\n')
    (tmp_path / "solutions").mkdir(exist_ok=True)
    shutil.copy(REPO / "solutions" / "add.py", tmp_path / "solutions" / "add.py")
    row = check._container_row(assignments.load(folder))
    assert row.ok and row.detail.startswith("measured: ") and "at 0.5 CPU, peak" in row.detail, row
    assert "of 768 MB; budget 540 s" in row.detail and row.seconds > 0


@pytest.mark.jax
@pytest.mark.grading
def test_check_refuses_a_solution_that_loses_a_point_on_some_run_keys(tmp_path):
    # A "solution" that is wrong only where an input exceeds 4.4 (one element in about
    # 185,000; the case has 67,584 per draw): right on some draws, wrong on others. The
    # sweep grades it on every key and the row refuses the spec, naming the keys.
    from autograder.grading import sweep
    from autograder.instructor import check
    root = tmp_path / "assignments"
    folder = trimmed_add(root, '[[cases]]\nname = "tall"\ndims = { M = 264, N = 256 }\nseed = 7\npoints = 2\n')
    shutil.rmtree(folder / "corpus", ignore_errors=True)
    (folder / "corpus").mkdir()
    (folder / "corpus" / "expectations.toml").write_text("[files]\n")
    (tmp_path / "solutions").mkdir(exist_ok=True)
    (tmp_path / "solutions" / "add.py").write_text(
        (REPO / "solutions" / "add.py").read_text().replace(
            "o_ref[...] = x_ref[...] + y_ref[...]",
            "o_ref[...] = jnp.where(x_ref[...] > 4.4, 0.0, x_ref[...] + y_ref[...])").replace(
            "import jax\n", "import jax\nimport jax.numpy as jnp\n", 1))
    a = assignments.find("add", root)
    keys = list(range(1, 7))
    s = sweep.sweep(a, a.solution, keys)
    assert [r.run_key for r in s.results] == keys and not s.problem
    assert s.losing and len(s.losing) < len(keys), [(r.run_key, r.score) for r in s.results]
    assert all(lost[1] == "wrong-result" for r in s.losing for lost in r.lost)
    rows = check._sweep_rows(a, 6, lambda m: None)
    assert len(rows) == 1 and not rows[0].ok and "loses points on" in rows[0].detail
    assert f"--run-key {s.losing[0].run_key}" in rows[0].detail


@pytest.mark.jax
@pytest.mark.grading
def test_check_refuses_a_speed_size_the_solutions_vmem_does_not_fit(tmp_path):
    """dma_scale's solution keeps its whole output block in VMEM. At the speed size its spec once had
    (4096x4096: a 64 MiB block) a real v5e refused to compile it, so nothing could be timed; `check`
    says so, naming the file, the size and why. At the bundled size (1024x1024) it fits."""
    from autograder.instructor import check
    folder = tmp_path / "assignments" / "dma_scale"
    shutil.copytree(REPO / "assignments" / "dma_scale", folder, ignore=shutil.ignore_patterns("corpus"))
    (tmp_path / "solutions").mkdir(exist_ok=True)
    shutil.copy(REPO / "solutions" / "dma_scale.py", tmp_path / "solutions" / "dma_scale.py")
    text = (folder / "spec.toml").read_text()
    assert 'dims = { M = 1024, N = 1024 }' in text
    a = assignments.load(folder)
    _row, _s, report = check._clean_row(a)
    assert check._fits_row(a, report).ok
    (folder / "spec.toml").write_text(text.replace('dims = { M = 1024, N = 1024 }', 'dims = { M = 4096, N = 4096 }'))
    a = assignments.load(folder)
    _row, _s, report = check._clean_row(a)
    row = check._fits_row(a, report)
    assert not row.ok and "spec.toml: [[speed.sizes]] 'speed-1024x1024'" in row.detail
    assert "the TPU compiler would refuse it at this size" in row.detail and "16 MiB scoped limit" in row.detail
