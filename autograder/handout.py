"""The `handout` verb: what students download, and nothing secret.

DIR/
  <entry>.py          the starter, generated from solutions/<slug>.py
  README.md           the assignment's handout
  <slug>.ipynb        a Jupyter/Colab notebook (see ``notebook``)
  requirements.txt    the grader's pinned dependencies
  autograder/         the grader itself (so `python -m autograder grade` works here)
  assignments/<slug>/ the public spec: no secret case's name, shape, seed or values

The solution and the secret cases never reach DIR; ``leaks`` says what of
them a folder holds, and the verb refuses to finish when it finds any.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from . import notebook, public_spec, starter
from .spec import Assignment

REPO = Path(__file__).resolve().parent.parent
PACKAGE = Path(__file__).resolve().parent


class HandoutError(RuntimeError):
    """The handout could not be written (or would have leaked): says what and where."""


def solution_path(assignment: Assignment) -> Path:
    return assignment.folder.parent.parent / "solutions" / f"{assignment.slug}.py"


def _copy_package(dest: Path) -> None:
    shutil.copytree(PACKAGE, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def write(assignment: Assignment, out: Path) -> list[Path]:
    """Write the handout into ``out`` (refusing a non-empty folder); returns the files."""
    sol = solution_path(assignment)
    if not sol.is_file():
        raise HandoutError(f"no solution at {sol}: the starter is generated from it")
    if out.exists() and any(out.iterdir()):
        raise HandoutError(f"{out} is not empty: give a new folder")
    text = starter.starter_for(sol)
    readme_path = assignment.folder / "README.md"
    readme = readme_path.read_text(encoding="utf-8") if readme_path.is_file() else f"# {assignment.title}\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / assignment.entry_file).write_text(text, encoding="utf-8")
    (out / "README.md").write_text(readme, encoding="utf-8")
    public = public_spec.write(assignment, out / "assignments" / assignment.slug)
    notebook.write(notebook.build(public, readme, text), out / f"{assignment.slug}.ipynb")
    if (REPO / "requirements.txt").is_file():
        shutil.copy(REPO / "requirements.txt", out / "requirements.txt")
    _copy_package(out / "autograder")
    found = leaks(assignment, out)
    if found:
        raise HandoutError("the handout would leak: " + "; ".join(found[:5]))
    return sorted(p for p in out.rglob("*") if p.is_file())


def secrets_of(assignment: Assignment) -> dict[str, list[str]]:
    """What no handout file may contain: solution lines, and each secret case's
    name, shapes (as 'MxN', '(M, N)' and '[M, N]') and seed."""
    sol = solution_path(assignment)
    lines = starter.solution_lines(sol.read_text(encoding="utf-8")) if sol.is_file() else []
    # What the instructor's stubs show on purpose (a hint quoting the solution) is no leak.
    shown_text = starter.starter_for(sol) if sol.is_file() else ""
    lines = [ln for ln in lines if ln not in shown_text]
    names, shapes, seeds = [], [], []

    def forms(case) -> list[str]:
        dims = [str(v) for _k, v in case.dims]
        return ["x".join(dims), f"({', '.join(dims)})", f"[{', '.join(dims)}]"]

    shown = {s for c in assignment.cases if c.visible for s in forms(c)}
    shown_seeds = {str(c.seed) for c in assignment.cases if c.visible}
    for case in assignment.cases:
        if case.visible:
            continue
        names.append(case.name)
        shapes += [s for s in forms(case) if s not in shown]
        seeds += [str(case.seed)] if str(case.seed) not in shown_seeds else []
    return {"solution line": [ln for ln in lines if len(ln) >= 12], "secret case name": names,
            "secret shape": shapes, "secret seed": seeds}


def leaks(assignment: Assignment, folder: Path) -> list[str]:
    """Each secret found in a file under ``folder``, as 'what in file'. Seeds are
    looked for as whole numbers in the kit's data (spec, calibration, notebook,
    README), where a number means a seed or a size; the grader's own code holds
    unrelated numbers."""
    import re
    found = []
    secret = secrets_of(assignment)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8", errors="replace")
        data = path.suffix in (".toml", ".json", ".ipynb", ".md") or path.name == assignment.entry_file
        for what, needles in secret.items():
            for needle in needles:
                if what == "secret seed":
                    hit = data and re.search(rf"(?<![\w.]){re.escape(needle)}(?![\w.])", text)
                else:
                    hit = needle in text
                if hit:
                    found.append(f"{what} {needle!r} in {path.relative_to(folder)}")
    return found
