"""The instructors' and TAs' guides' commands, run verbatim as a new user would: a fresh
clone of the committed repository, the README Quickstart's first command (``./setup.sh``,
a regular install, then a grading), then every command of the ```bash blocks of
docs/guides/instructors.md and docs/guides/tas.md, in that order, with the fresh venv
first on PATH. Each must exit 0 (or the status ``EXIT`` says the guide documents). A
command a guide shows but that must not run here goes in another fence (```text) or in
``SKIP``. Slow (several minutes): marked ``guides``."""
import os
import re
import shutil
import subprocess
import textwrap
import time
import zipfile
from pathlib import Path

import pytest
from conftest import REPO, corpus

pytestmark = [pytest.mark.guides, pytest.mark.jax, pytest.mark.grading]

GUIDES = ("docs/guides/instructors.md", "docs/guides/tas.md")
# Commands the guides show that need what a test machine cannot have. None today: the
# Dask/Slurm example is a Python block (not run), and the TPU stage's commands are in its
# own guide. Add a command here, verbatim, with the reason, e.g.
#   "pallas-autograder review export.zip -a matmul -o review/ --dask tcp://...": "a Dask cluster"
SKIP: dict[str, str] = {}
# Exit statuses the guides document for a command other than 0 (none today).
EXIT: dict[str, int] = {}
# What the TAs' guide takes as given, which the test provides before the commands run: the TA's
# `export.zip` is Gradescope's "Export Submissions" download (written here: the matmul
# solution, and two corpus kernels with known bugs).
PROVIDED = ("export.zip",)
# What each command's comment in the guide promises, checked once it ran (paths in the clone).
LEAVES = {
    "new relu": ("assignments/relu/spec.toml", "solutions/relu.py", "assignments/relu/corpus/expectations.toml"),
    "new mm2 --like matmul": ("assignments/mm2/spec.toml", "assignments/mm2/reference.py"),
    "handout relu": ("handout/relu.py", "handout/relu.ipynb", "handout/README.md", "handout/requirements.txt"),
    "build relu": ("relu.zip",),
    "build matmul": ("matmul.zip",),
    "review export.zip": ("review/index.html", "review/grades.csv"),
}


def sections(text: str, names: tuple[str, ...]) -> dict[str, str]:
    """Each named ``## `` section's text (its ``###`` subsections included)."""
    found, name, lines = {}, None, []
    for line in text.splitlines():
        if line.startswith("## "):
            if name in names:
                found[name] = "\n".join(lines)
            name, lines = line[3:].strip(), []
        else:
            lines.append(line)
    if name in names:
        found[name] = "\n".join(lines)
    return found


def bash_commands(section: str) -> list[str]:
    """The commands of a section's ```bash blocks (indented blocks in list items too), in
    order: one per line, a trailing backslash joining the next; blank and comment lines dropped."""
    commands = []
    for body in re.findall(r"(?m)^[ \t]*```bash[ \t]*\n(.*?)^[ \t]*```[ \t]*$", section, re.S):
        pending = ""
        for line in textwrap.dedent(body).splitlines():
            line = pending + line.lstrip() if pending else line
            if line.rstrip().endswith("\\"):
                pending = line.rstrip()[:-1].rstrip() + " "
                continue
            pending = ""
            if line.strip() and not line.lstrip().startswith("#"):
                commands.append(line.strip())
    return commands


def guide_commands() -> list[str]:
    """Every command of the guides' ```bash blocks, the instructors' first."""
    commands = []
    for guide in GUIDES:
        found = bash_commands((REPO / guide).read_text(encoding="utf-8"))
        assert found, f"{guide} has no ```bash block: nothing of it would be run"
        commands += found
    return commands


def quickstart_setup() -> str:
    """The Quickstart's first command: ./setup.sh (a regular install) and a grading."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    first = bash_commands(sections(text, ("Quickstart",))["Quickstart"])[0]
    assert first.startswith("./setup.sh && "), first
    return first


def test_the_command_extraction_reads_blocks_continuations_and_comments():
    section = "text\n```bash\n# a comment\nprog a \\\n  --flag   # why\n\nprog b\n```\n- item\n\n  ```bash\n" \
              "  prog c\n  ```\n```python\nnot_bash()\n```\n"
    assert bash_commands(section) == ["prog a --flag   # why", "prog b", "prog c"]
    commands = guide_commands()
    assert any(c.startswith("pallas-autograder new ") for c in commands)
    assert any(c.startswith("pallas-autograder review ") for c in commands)


def _export(clone: Path) -> None:
    """A Gradescope export zip: metadata and one folder per submission."""
    files = {"submission_201": (REPO / "solutions" / "matmul.py").read_text(encoding="utf-8"),
             "submission_202": (corpus("matmul") / "wrong_formula.py").read_text(encoding="utf-8"),
             "submission_203": (corpus("matmul") / "unzeroed_accumulator.py").read_text(encoding="utf-8")}
    meta = "".join(f"{sid}:\n  :submitters:\n  - :name: Student {sid[-1]}\n    :sid: '{sid[-3:]}'\n"
                   f"    :email: s{sid[-1]}@example.edu\n  :created_at: 2026-11-30 10:0{sid[-1]}:00.000000000 -08:00\n"
                   for sid in files)
    with zipfile.ZipFile(clone / "export.zip", "w") as zf:
        zf.writestr("assignment_1_export/submission_metadata.yml", meta)
        for sid, text in files.items():
            zf.writestr(f"assignment_1_export/{sid}/matmul.py", text)


def _run(command: str, cwd: Path, env: dict, timeout: float = 1200) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    return proc, time.monotonic() - t0


def test_every_instructor_and_ta_command_works_in_a_fresh_clone_after_setup(tmp_path):
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout: nothing to clone")
    commands = guide_commands()
    clone = tmp_path / "pallas-autograder"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, capture_output=True,
                   timeout=300)
    for name in PROVIDED:
        assert not (clone / name).exists(), f"{name} is committed: the guide should not need it provided"
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PALLAS_AUTOGRADER_ASSIGNMENTS")}
    # What a terminal is not: no colour codes in what the test reads.
    env["NO_COLOR"] = "1"
    setup, seconds = _run(quickstart_setup(), clone, env, timeout=1800)
    assert setup.returncode == 0, f"Quickstart: {setup.stdout[-3000:]}\n{setup.stderr[-3000:]}"
    assert "out-of-bounds" in setup.stdout, setup.stdout[-3000:]
    env["PATH"] = f"{clone / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    where = subprocess.run(["pallas-autograder", "--version"], env=env, cwd=clone, capture_output=True, text=True)
    assert where.returncode == 0 and shutil.which("pallas-autograder", path=env["PATH"]) == \
        str(clone / ".venv" / "bin" / "pallas-autograder")
    # A regular install: the package lives in the fresh venv's site-packages, not the clone.
    located = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-I", "-c",
                              "import autograder; print(autograder.__file__)"], capture_output=True, text=True)
    assert "site-packages" in located.stdout, located.stdout + located.stderr
    _export(clone)
    failures, log = [], [f"Quickstart ({seconds:.0f} s)"]
    for command in commands:
        if command in SKIP:
            log.append(f"skipped: {command} ({SKIP[command]})")
            continue
        proc, seconds = _run(command, clone, env)
        want = EXIT.get(command, 0)
        log.append(f"{proc.returncode} ({seconds:.0f} s): {command}")
        if proc.returncode != want:
            failures.append(f"{command}\n  exit {proc.returncode}, the guide says {want}\n  stdout: "
                            f"{proc.stdout[-2500:]}\n  stderr: {proc.stderr[-2500:]}")
            continue
        for key, paths in LEAVES.items():
            if f"pallas-autograder {key}" in command:
                missing = [p for p in paths if not (clone / p).exists()]
                if missing:
                    failures.append(f"{command}\n  left no {', '.join(missing)}")
    print("\n".join(log))
    assert not failures, "\n\n".join(failures)
    ran = " ".join(commands)
    assert all(f"pallas-autograder {key}" in ran for key in LEAVES), "a guide command this test checks is gone"
