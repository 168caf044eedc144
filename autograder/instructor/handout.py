"""The `handout` verb: what students download, and nothing secret.

DIR/
  <entry>.py          the starter, generated from solutions/<slug>.py
  README.md           the assignment's handout (its commands as the kit runs them)
  GLOSSARY.md         what the feedback's numbers and words mean
  <slug>.ipynb        a Jupyter/Colab notebook (see ``notebook``)
  requirements.txt    the grader's pinned dependencies, on the course's JAX release
  autograder/         the grader itself (so `python -m autograder grade` works here)
  assignments/<slug>/ the public spec: no secret case's name, shape, seed or values

The solution and the secret cases never reach DIR; ``leaks`` says what of
them a folder holds, and the verb refuses to finish when it finds any.
"""
from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import shutil
import tempfile
from pathlib import Path

from .. import spec
from ..feedback import glossary
from ..grading import assignments
from ..pallas_surface import release
from ..spec import Assignment
from . import checkout, notebook, public_spec, starter

PACKAGE = Path(__file__).resolve().parents[1]


class HandoutError(RuntimeError):
    """The handout could not be written (or would have leaked): says what and where."""


# Left out of the student kit: the instructor's tools as a whole (`new`'s
# template is a working solution of its example assignment; `check` knows where
# the corpus is). The kit's CLI offers only the verbs its folders allow.
INSTRUCTOR_ONLY = ("instructor",)


def _copy_package(dest: Path) -> None:
    shutil.copytree(PACKAGE, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", *INSTRUCTOR_ONLY))


def write(assignment: Assignment, out: Path) -> list[Path]:
    """Write the handout into ``out`` (refusing a non-empty folder); returns the files.
    Everything is written to a folder beside it first and renamed only once the
    leak check found nothing: a refused handout leaves nothing behind."""
    sol = assignment.solution
    if not sol.is_file():
        raise HandoutError(f"no solution at {sol}: the starter is generated from it")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise HandoutError(f"{out} is not an empty folder: give a new one")
    if not any(c.visible for c in assignment.cases):
        raise HandoutError("every case is secret: the student kit would have no case to grade")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        _write_into(assignment, sol, staging)
        found = leaks(assignment, staging)
        if found:
            raise HandoutError("the handout would leak: " + "; ".join(found[:5]))
        if out.exists():
            out.rmdir()
        staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return sorted(p for p in out.rglob("*") if p.is_file())


def _write_into(assignment: Assignment, sol: Path, out: Path) -> None:
    text = starter.starter_for(sol)
    readme_path = assignment.folder / "README.md"
    readme = readme_path.read_text(encoding="utf-8") if readme_path.is_file() else f"# {assignment.title}\n"
    out.chmod(0o755)
    (out / assignment.entry_file).write_text(text, encoding="utf-8")
    (out / "README.md").write_text(kit_readme(readme, assignment), encoding="utf-8")
    (out / glossary.FILE).write_text(glossary.text(assignment), encoding="utf-8")
    public = public_spec.write(assignment, out / "assignments" / assignment.slug)
    notebook.write(notebook.build(public, readme, text), out / f"{assignment.slug}.ipynb")
    (out / "requirements.txt").write_text(_requirements(assignment.jax), encoding="utf-8")
    _copy_package(out / "autograder")


# The kit has no console script: the grader runs as a module, in the kit's folder.
KIT_COMMAND = "python -m autograder"


def kit_readme(readme: str, assignment: Assignment) -> str:
    """The handout's README as the kit runs it: the `pallas-autograder` commands it
    names as `python -m autograder` (the kit has no console script, and a pasted
    command must work there), and how to grade locally, with the glossary."""
    readme = readme.replace("pallas-autograder ", f"{KIT_COMMAND} ")
    return (readme.rstrip("\n") + "\n\n## Grading locally with this kit\n\n"
            f"In this folder, after `pip install -r requirements.txt`: `{KIT_COMMAND} grade "
            f"{assignment.entry_file} -a {assignment.slug}`. It gives the feedback Gradescope gives, on the visible "
            "cases; every reproduce command in the feedback (yours, or Gradescope's) works pasted here. "
            f"[{glossary.FILE}]({glossary.FILE}) explains the feedback's numbers and words (test numbers, run "
            "keys, seeds, rungs, poisoning, the roofline floor).\n")


def _requirements(jax: str) -> str:
    """The grader's pinned dependencies on the course's JAX release: the checkout's lock
    file (see ``checkout``), else, from an install without one (a wheel), the installed
    package's own requirements with that release's jax and jaxlib."""
    try:
        name = checkout.lock(jax)
        return (checkout.find(needs=(name,)) / name).read_text(encoding="utf-8")
    except checkout.NoCheckout:
        required = [r for r in importlib.metadata.requires(checkout.NAME) or [] if "extra ==" not in r
                    and not r.startswith(("jax>", "jax=", "jaxlib"))]
        return "".join(f"{r}\n" for r in [f"jax=={jax}", f"jaxlib=={jax}", *required])


def secrets_of(assignment: Assignment) -> dict[str, list[str]]:
    """What no handout file may contain: solution lines, and each secret case's
    name, shapes (as 'MxN', '(M, N)' and '[M, N]') and seed."""
    sol = assignment.solution
    lines = starter.solution_lines(sol.read_text(encoding="utf-8")) if sol.is_file() else []
    # What the instructor's stubs show on purpose (a hint quoting the solution) is no leak.
    shown_text = starter.starter_for(sol) if sol.is_file() else ""
    lines = [ln for ln in lines if ln not in shown_text]
    names, shapes, seeds = [], [], []

    def forms(case) -> list[str]:
        """Each input's and the output's shape, and the dims in declaration order,
        as 'AxB', '(A, B)' and '[A, B]'."""
        shapes = [assignment.shape(i.shape, case) for i in assignment.inputs if i.kind == "array"]
        shapes += [assignment.output_shape(case), tuple(dict(case.dims)[d.name] for d in assignment.dims)]
        out = []
        for shape in shapes:
            dims = [str(v) for v in shape]
            out += ["x".join(dims), f"({', '.join(dims)})", f"[{', '.join(dims)}]"]
        return out

    shown = {s for c in assignment.cases if c.visible for s in forms(c)}
    shown_seeds = {str(c.seed) for c in assignment.cases if c.visible}
    for case in assignment.cases:
        if case.visible:
            continue
        names.append(case.name)
        shapes += [s for s in forms(case) if s not in shown]
        seeds += [str(case.seed)] if str(case.seed) not in shown_seeds else []
        # A secret case's input scales and parameters are its data too.
        shown_values = {repr(float(v)) for c in assignment.cases if c.visible for _k, v in (*c.scale, *c.params)}
        seeds += [repr(float(v)) for _k, v in (*case.scale, *case.params) if repr(float(v)) not in shown_values]
    return {"solution line": [ln for ln in lines if len(ln) >= 12], "secret case name": names,
            "secret shape": sorted(set(shapes)), "secret seed or value": seeds}


def _cells_text(text: str) -> str:
    """A notebook's cells (their sources and outputs) as text; the whole file if it is
    not a notebook's JSON."""
    try:
        cells = json.loads(text).get("cells")
    except (ValueError, AttributeError):
        return text
    return json.dumps(cells) if isinstance(cells, list) else text


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
        # GLOSSARY.md is the grader's own text (test numbers, visible case names): its small
        # numbers are no data, like the package's code; names and shapes are still looked for.
        data = (path.suffix in (".toml", ".json", ".ipynb", ".md") and path.name != glossary.FILE) \
            or path.name == assignment.entry_file
        # A notebook's numbers that mean data are in its cells; its metadata is the format's
        # own ("Python 3" in the kernelspec would read as a secret seed 3).
        numbers = _cells_text(text) if path.suffix == ".ipynb" else text
        for what, needles in secret.items():
            for needle in needles:
                if what == "secret seed or value":
                    hit = data and re.search(rf"(?<![\w.]){re.escape(needle)}(?![\w.])", numbers)
                else:
                    hit = needle in text
                if hit:
                    found.append(f"{what} {needle!r} in {path.relative_to(folder)}")
    return found


def add_arguments(p) -> None:
    p.add_argument("slug")
    p.add_argument("-o", "--output", type=Path, required=True, help="a new (or empty) folder to write")
    p.add_argument("--jax", choices=release.SUPPORTED, default=None, metavar="RELEASE",
                   help="the JAX release the course grades on, which the notebook installs (default: the "
                        f"spec's `jax`, else the newest, {release.NEWEST})")


def run(args) -> int:
    assignment = assignments.find(args.slug, args.assignments)
    if args.jax:
        assignment = dataclasses.replace(assignment, jax=args.jax)
    try:
        files = write(assignment, args.output)
    except (HandoutError, starter.StarterError, spec.SpecError, RuntimeError, OSError) as e:
        args.parser.exit(1, f"pallas-autograder handout: {e}\n")
    print(f"wrote {len(files)} files to {args.output}: {assignment.entry_file} (the starter), README.md, "
          f"{glossary.FILE}, {assignment.slug}.ipynb, and the local grader ({KIT_COMMAND} grade "
          f"{assignment.entry_file} -a {assignment.slug}, run in that folder)")
    return 0
