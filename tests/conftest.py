"""Shared helpers: run the real CLI in a child process and read what it wrote."""
from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


# The longest tests (`--durations`: the TPU guide's route, the guides' commands in a fresh clone, the round trip
# of every kernel, the Gradescope install, gradings under load, the corpus), first: with
# xdist's worksteal (pyproject's addopts) the other workers share everything else while
# these run, so no worker ends the run alone on one of them.
LONGEST_FIRST = (
    "tests/test_tpu_route.py",
    "tests/test_guide_commands.py::test_every_",
    "tests/test_serial.py::test_every_corpus_kernel",
    "tests/test_coverage.py::test_every_public_call",
    "tests/test_gradescope_zip.py",
    "tests/test_load.py",
    "tests/test_cli.py::test_correct_corpus_submissions_get_full_marks",
    "tests/test_handout.py",
    "tests/test_probes.py",
    # The fast tier's longest (Chromium and axe-core on three pages at two widths).
    "tests/test_review.py::test_the_site_leads_to_the_students_who_need_help",
)


@pytest.hookimpl(optionalhook=True)     # a TPU host's pytest may have no xdist: the tpu tests still run
def pytest_xdist_auto_num_workers(config) -> int:
    """Workers for ``-n auto`` (pyproject's addopts): one and a half per core, at least
    two. A grading leaves part of its core idle (child start-up, the parent reading
    and comparing outputs while the child waits, timeouts that are the test's point):
    on 2 cores, 11 gradings took 130 s with 2 workers, 95 s with 3 and 84 s with 4
    (`pytest -m releases tests/test_probes.py -n N`, 2026-12-05). Three keeps a
    grading's share of a core above a third, inside the limits' 10x margin."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(2, cores * 3 // 2)


def pytest_collection_modifyitems(config, items):
    def rank(item) -> int:
        return next((i for i, prefix in enumerate(LONGEST_FIRST) if item.nodeid.startswith(prefix)),
                    len(LONGEST_FIRST))
    items.sort(key=rank)     # stable: each group keeps its own order


def corpus(slug: str) -> Path:
    """The bundled assignment's regression corpus (known-wrong and known-right
    submissions, expectations.toml): ``assignments/<slug>/corpus``, as an instructor's own."""
    return REPO / "assignments" / slug / "corpus"


def run_cli(*args: str, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO, env={**os.environ, **(env or {})})


@pytest.fixture
def grade_cli(tmp_path):
    """Grade a submission through the real CLI; returns (results dict, stdout)."""
    def grade(submission: Path, assignment: str, *extra: str):
        results = tmp_path / "results.json"
        proc = run_cli("grade", str(submission), "--assignment", assignment,
                       "--results", str(results), *extra)
        assert proc.returncode == 0, proc.stderr[-3000:]
        doc = json.loads(results.read_text())
        from autograder.feedback.results_format import validate
        assert validate(doc) == [], validate(doc)
        return doc, proc.stdout
    return grade


def tags(doc: dict) -> list[list[str]]:
    """Tags of the correctness tests (numbered case.rung), in order: not the
    probe checks (P), the speed estimate (S1) or the TPU timing (T1)."""
    return [t["tags"] for t in doc["tests"] if re.fullmatch(r"\d+\.\d+", t["number"])]


def speed_output(doc: dict) -> str:
    """What results.json says of the speed estimate: test S1's output where the
    spec scores it (or hides it until later), else the top-level output, where an
    unscored estimate goes (Gradescope would show a 0/0 test green, "passed")."""
    s1 = next((t for t in doc["tests"] if t["number"] == "S1"), None)
    return s1["output"] if s1 is not None else doc["output"]


def probe_tags(doc: dict) -> dict[str, list[str]]:
    """Tags of the probe checks, by check name."""
    return {t["name"]: t["tags"] for t in doc["tests"] if t["number"].startswith("P")}


@pytest.fixture(scope="session")
def gradescope_install(tmp_path_factory):
    """The `add` autograder zip, unpacked into a temporary AUTOGRADER_ROOT and
    installed by its real setup.sh: once per test run, shared by the parallel
    workers (the first to get here builds it, under a lock)."""
    import zipfile
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    base = tmp_path_factory.getbasetemp().parent if run else tmp_path_factory.getbasetemp()
    root = base / "gradescope-install"
    with open(base / "gradescope-install.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "installed").exists():
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir()
            zpath = root / "add.zip"
            proc = run_cli("build", "add", "-o", str(zpath), "--no-self-test")   # setup.sh installs it next
            assert proc.returncode == 0, proc.stderr
            with zipfile.ZipFile(zpath) as zf:
                zf.extractall(root / "source")
            for name in ("setup.sh", "run_autograder"):
                os.chmod(root / "source" / name, 0o755)   # Gradescope keeps the modes; extractall does not
            setup = subprocess.run(["bash", str(root / "source" / "setup.sh")], capture_output=True,
                                   text=True, timeout=900, cwd=root / "source")
            assert setup.returncode == 0, setup.stdout[-2000:] + setup.stderr[-3000:]
            (root / "installed").touch()
    return root


def fresh_root(install: Path, base: Path) -> Path:
    """A Gradescope root of its own for one test: the installed source copied
    (its venv linked, not copied), empty results. Tests that change the source
    or grade at once never see each other's files."""
    root = base / "autograder"
    shutil.copytree(install / "source", root / "source", symlinks=True,
                    ignore=shutil.ignore_patterns(".venv", "__pycache__", "*.zip", "build"))
    (root / "source" / ".venv").symlink_to(install / "source" / ".venv")
    (root / "results").mkdir()
    return root


def trimmed_add(root: Path, cases: str, extra: str = "") -> Path:
    """A copy of `add` under ``root`` with only the given [[cases]] TOML, no
    probes and no calibration (fast real gradings), plus ``extra`` tables."""
    folder = root / "add"
    shutil.copytree(REPO / "assignments" / "add", folder)
    text = (folder / "spec.toml").read_text()
    text = text[:text.index("[[cases]]")] + cases + extra
    (folder / "spec.toml").write_text(text.replace('probe_cases = ["odd-rows"]\n', ""))
    for old in folder.glob("calibration-*.json"):
        old.unlink()
    # The solution where an assignment expects it (spec.Assignment.solution): beside the assignments folder.
    solutions = root.parent / "solutions"
    solutions.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "solutions" / "add.py", solutions / "add.py")
    return folder
