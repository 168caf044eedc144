"""The package as users install it: a wheel built from this checkout, installed
into a fresh virtual environment (no editable link to the repository), grades
a submission with its own console script."""
import json
import subprocess
import venv

import pytest
from conftest import REPO, corpus

from benchmarks.chip.route import grader_wheel

pytestmark = [pytest.mark.jax, pytest.mark.grading]


def _run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    base = tmp_path_factory.mktemp("wheel")
    wheel = grader_wheel(base / "dist")
    venv.create(base / "venv", with_pip=True)
    py = base / "venv" / "bin" / "python"
    proc = _run([str(py), "-m", "pip", "install", "--disable-pip-version-check", str(wheel)])
    assert "setuptools" not in proc.stderr.lower()
    return base, wheel, py


def test_the_wheel_holds_every_subpackage_and_template(installed):
    import zipfile
    _base, wheel, _py = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {str(p.parent.relative_to(REPO)) for p in (REPO / "autograder").rglob("__init__.py")}
    # Every folder of the tree is a package in the wheel (a spot check that the moves are seen).
    assert {"autograder/grading/run", "autograder/pallas_surface/release", "autograder/findings",
            "autograder/tpu/chip", "autograder/feedback/blockmaps"} <= packages
    for pkg in packages:
        assert f"{pkg}/__init__.py" in names, pkg
    templates = {str(p.relative_to(REPO)) for p in (REPO / "autograder").rglob("*.j2")}
    assert any(t.startswith("autograder/findings/templates/") for t in templates) and templates <= names
    assert not any(n.startswith(("assignments/", "solutions/", "tests/")) for n in names)


def test_the_installed_grader_grades_with_an_assignments_folder(installed, tmp_path):
    base, _wheel, py = installed
    cli = base / "venv" / "bin" / "pallas-autograder"
    # Outside the checkout: nothing of the repository is importable or found by default.
    where = _run([str(py), "-c", "import autograder; print(autograder.__file__)"], cwd=tmp_path)
    assert str(base / "venv") in where.stdout
    missing = subprocess.run([str(cli), "list"], capture_output=True, text=True, cwd=tmp_path)
    assert missing.returncode == 1 and "no assignments found" in missing.stderr
    results = tmp_path / "results.json"
    _run([str(cli), "grade", str(corpus("add") / "wrong_formula.py"), "-a", "add", "--assignments",
          str(REPO / "assignments"), "--case", "small", "--results", str(results)], cwd=tmp_path)
    doc = json.loads(results.read_text())
    # A --case run grades correctness only: no probes, no speed estimate, nothing else listed.
    assert [t["tags"] for t in doc["tests"]] == [["wrong-result"], ["wrong-result"]]
