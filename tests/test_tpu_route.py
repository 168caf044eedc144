"""The TPU guide's route as written (docs/guides/tpu.md, "On a TPU host"): on the CPU
machine the class and the solution are graded into a review site and the grader is
built as wheels; the host is given only ``review-site/``, ``export.zip``, ``wheels/``
and ``assignments/``, installs the grader from the wheels with pip's ``--no-index
--find-links wheels`` beside the JAX it already has, and runs `speed` there. The
instructor solution is not among the four: `speed` takes the copy the site graded
(``.solution/<slug>/``), checks by its content hash that the site's grading is of
that very file, and says so; where something is truly missing, it names what and
where. The host is a fresh virtual environment whose only packages are JAX and what
a TPU image ships with it, on PYTHONPATH as on the v5e that was lent (the grader's
other needs come from the wheels); `--device fake` times the class here."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from conftest import REPO, corpus

from benchmarks.chip.route import grader_wheel

# The packages a TPU image ships beside JAX (the v5e lent had these; the grader's other needs
# come from the wheels the TPU guide downloads).
HOST_SHIPS = ("jax", "jaxlib", "libtpu", "numpy", "scipy", "ml_dtypes", "opt_einsum")
# What the TPU guide's `pip download` line names (the wheels the host lacks).
GUIDE_NEEDS = ("jinja2", "markupsafe", "pyyaml", "markdown-it-py", "mdurl", "datasketch", "gradescope-utils")


def _run(cmd, timeout=900, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _export(path: Path) -> Path:
    sys.path.insert(0, str(REPO))
    from benchmarks.chip.route import export_zip
    return export_zip(path, "add", [corpus("add") / f for f in ("flat_grid.py", "wrong_formula.py")])


def _host_packages(dest: Path) -> Path:
    """What a TPU image ships, from this interpreter's site-packages (links, not copies)."""
    import importlib.metadata as md
    dest.mkdir()
    wanted = {n.replace("-", "_").lower() for n in HOST_SHIPS}
    for dist in md.distributions():
        name = (dist.metadata["Name"] or "").replace("-", "_").lower()
        if name not in wanted:
            continue
        root = Path(dist.locate_file(""))
        tops = {Path(f).parts[0] for f in dist.files or ()} - {"..", "bin"}
        for top in tops:
            src = root / top
            if src.exists() and not (dest / top).exists():
                (dest / top).symlink_to(src)
    return dest


def _readme_route() -> tuple[str, str]:
    """The TPU guide's install and speed commands for the host, verbatim."""
    text = (REPO / "docs" / "guides" / "tpu.md").read_text(encoding="utf-8")
    section = text.split("### On a TPU host", 1)[1]
    install = next(line for line in section.splitlines() if "pip install --user --no-index" in line)
    speed = next(line for line in section.splitlines() if line.startswith("python3 -m autograder speed "))
    return install.strip(), speed.strip()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    """On the CPU machine: the review site (the class and the solution) and the wheels."""
    work = tmp_path_factory.mktemp("cpu-machine")
    _export(work / "export.zip")
    _run([sys.executable, "-m", "autograder", "review", str(work / "export.zip"), "-a", "add", "-o",
          str(work / "review-site")], cwd=REPO, timeout=1200)
    grader_wheel(work / "wheels")
    _run([sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--only-binary=:all:",
          "--no-deps", "-d", str(work / "wheels"), *GUIDE_NEEDS])
    return work


@pytest.fixture(scope="module")
def installed(prepared, tmp_path_factory) -> tuple[Path, dict, Path]:
    """The TPU host: a folder holding only the four things the TPU guide names, a fresh Python
    with JAX on PYTHONPATH, and the grader installed from the wheels as the TPU guide says
    (one test does both parts of the route: a second would build all of this again on
    another worker)."""
    root = tmp_path_factory.mktemp("tpu-host")
    host = root / "host"
    host.mkdir()
    for name in ("review-site", "export.zip", "wheels"):
        (shutil.copytree if (prepared / name).is_dir() else shutil.copy)(prepared / name, host / name)
    shutil.copytree(REPO / "assignments", host / "assignments", ignore=shutil.ignore_patterns("__pycache__"))
    assert sorted(p.name for p in host.iterdir()) == ["assignments", "export.zip", "review-site", "wheels"]
    venv.create(root / "py", with_pip=True)
    bindir = root / "py" / "bin"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME",
                                                             "PALLAS_AUTOGRADER_ASSIGNMENTS")}
    env.update(PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(_host_packages(root / "jax")),
               NO_COLOR="1")
    install, _speed = _readme_route()
    # A virtual environment has no user site: the guide's --user is for the host's own Python.
    _run(["bash", "-c", install.replace("--user ", "")], cwd=host, env=env)
    where = _run([str(bindir / "python3"), "-c", "import autograder, jax; print(autograder.__file__)"],
                 cwd=host, env=env)
    assert str(root / "py") in where.stdout, where.stdout
    return host, env, bindir


@pytest.mark.jax
@pytest.mark.grading
def test_the_readme_route_times_a_class_from_the_four_things_it_names_and_names_what_is_missing(prepared, installed):
    host, env, _bindir = installed
    _install, speed = _readme_route()
    speed = speed.replace("-a matmul", "-a add")
    # On a machine with no TPU the guide's command reaches the chip and stops there: every grading,
    # the solution's included, was found in the site (nothing is graded on a TPU host).
    tpu = subprocess.run(["bash", "-c", speed], cwd=host, env=env, capture_output=True, text=True, timeout=600)
    assert tpu.returncode != 0
    assert "taken from the review site" in tpu.stderr, tpu.stderr[-3000:]
    assert "the file the site's grading of the solution was made from" in tpu.stderr
    assert "no TPU is visible" in tpu.stderr, tpu.stderr[-3000:]
    assert "holds no grading" not in tpu.stderr
    fake = _run(["bash", "-c", f"{speed} --device fake"], cwd=host, env=env)
    doc = json.loads((host / "speed-out" / "speed.json").read_text())
    source = doc["solution_source"]
    assert source["from_site"] and source["graded"], source
    assert source["path"].endswith("review-site/.solution/add/add.py")
    import hashlib
    assert source["sha256"] == hashlib.sha256((REPO / "solutions" / "add.py").read_bytes()).hexdigest()
    statuses = sorted(r["status"] for r in doc["results"])
    assert statuses == ["not-queued", "timed"], statuses
    assert doc["solution"]["status"] == "timed"
    assert "1 timed" in fake.stdout
    # Nothing was graded on the host: the site's store is what the CPU machine left.
    assert sorted(p.name for p in (host / "review-site" / ".review-cache").iterdir()) == \
        sorted(p.name for p in (prepared / "review-site" / ".review-cache").iterdir())
    _names_what_is_missing_and_where(host, env, speed)


def _names_what_is_missing_and_where(host: Path, env: dict, speed: str) -> None:
    # The site's solution edited after its grading: it is not the file that was graded.
    copy = host / "review-site" / ".solution" / "add" / "add.py"
    copy.write_text(copy.read_text() + "\n# edited after the grading\n")
    edited = subprocess.run(["bash", "-c", speed], cwd=host, env=env, capture_output=True, text=True, timeout=600)
    assert edited.returncode != 0
    assert "holds no grading of" in edited.stderr and "another version of the file" in edited.stderr, \
        edited.stderr[-2000:]
    # No copy in the site and none beside the assignments: both places are named.
    shutil.rmtree(host / "review-site" / ".solution")
    gone = subprocess.run(["bash", "-c", speed], cwd=host, env=env, capture_output=True, text=True, timeout=600)
    assert gone.returncode != 0
    assert "solutions/add.py" in gone.stderr and ".solution/add/add.py" in gone.stderr, gone.stderr[-2000:]
    assert "the site was made without it" in gone.stderr
