"""The `build` verb: the Gradescope autograder zip for one assignment.

Layout (Gradescope unpacks it into /autograder/source): setup.sh and
run_autograder at the root, the package, pinned requirements, the one
assignment folder, its solution, and assignment.txt naming the slug.
"""
from __future__ import annotations

import stat
import zipfile
from pathlib import Path

from .spec import Assignment

REPO = Path(__file__).resolve().parent.parent
ROOT_FILES = ("setup.sh", "run_autograder", "requirements.txt", "pyproject.toml", "README.md")
EXECUTABLE = {"setup.sh", "run_autograder"}


def _add(zf: zipfile.ZipFile, path: Path, arcname: str) -> None:
    info = zipfile.ZipInfo(arcname, date_time=(2026, 1, 1, 0, 0, 0))  # reproducible zips
    mode = 0o755 if Path(arcname).name in EXECUTABLE else 0o644
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, path.read_bytes())


def _tree(folder: Path):
    for p in sorted(folder.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc":
            yield p


def build(assignment: Assignment, output: Path) -> Path:
    missing = [f for f in ROOT_FILES if not (REPO / f).is_file()]
    if missing:
        raise FileNotFoundError(f"build needs a checkout of pallas-autograder; missing {missing} in {REPO}")
    solution = REPO / "solutions" / f"{assignment.slug}.py"
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(output, "w") as zf:
        for name in ROOT_FILES:
            _add(zf, REPO / name, name)
        for p in _tree(REPO / "autograder"):
            _add(zf, p, str(p.relative_to(REPO)))
        for p in _tree(assignment.folder):
            if p.relative_to(assignment.folder).parts[0] == "corpus":
                continue    # the instructor's regression corpus: `check` reads it, grading never does
            _add(zf, p, f"assignments/{assignment.slug}/{p.relative_to(assignment.folder)}")
        if solution.is_file():
            _add(zf, solution, f"solutions/{assignment.slug}.py")
        info = zipfile.ZipInfo("assignment.txt", date_time=(2026, 1, 1, 0, 0, 0))
        info.external_attr = (stat.S_IFREG | 0o644) << 16
        zf.writestr(info, assignment.slug + "\n")
    return output
