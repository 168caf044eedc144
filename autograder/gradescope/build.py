"""The `build` verb: the Gradescope autograder zip for one assignment.

Layout (Gradescope unpacks it into /autograder/source): setup.sh and
run_autograder at the root, the package, pinned requirements, the one
assignment folder, its solution, and assignment.txt naming the slug.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ..grading import assignments
from ..instructor import check, checkout
from ..instructor.checkout import ROOT_FILES
from ..pallas_surface import release
from ..spec import Assignment, course_release
from .rate_limit import Limit

# The course's JAX release: its lock file (setup.sh installs the one it finds) and the
# spec's `jax` key (written into the zipped spec.toml; the grader reads it from there).
EXECUTABLE = {"setup.sh", "run_autograder"}


def _add(zf: zipfile.ZipFile, path: Path, arcname: str) -> None:
    info = zipfile.ZipInfo(arcname, date_time=(2026, 1, 1, 0, 0, 0))  # reproducible zips
    mode = 0o755 if Path(arcname).name in EXECUTABLE else 0o644
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, path.read_bytes())


def _add_text(zf: zipfile.ZipFile, text: str, arcname: str) -> None:
    info = zipfile.ZipInfo(arcname, date_time=(2026, 1, 1, 0, 0, 0))
    info.external_attr = (stat.S_IFREG | 0o644) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, text)


def _tree(folder: Path):
    for p in sorted(folder.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc":
            yield p


def build(assignment: Assignment, output: Path, self_test: bool = True, rate_limit=None) -> Path:
    """Write the zip; with ``self_test``, only after it graded the solution to
    full marks from a temporary Gradescope root (raises SelfTestFailed). With
    ``rate_limit`` (a ``rate_limit.Limit``), the zip refuses submissions beyond it."""
    output = Path(output)
    with tempfile.TemporaryDirectory(prefix="pallas-build-") as tmp:
        staged = _write(assignment, Path(tmp) / output.name, rate_limit)
        if self_test:
            self_test_zip(staged, assignment)
        output.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(staged, output)
    return output


class SelfTestFailed(RuntimeError):
    """The zip, installed into a temporary root, did not give the solution full marks."""


def self_test_zip(zip_path: Path, assignment: Assignment, timeout_s: float = 900) -> dict:
    """Unpack the zip as Gradescope does, with this Python's environment as its
    venv (the zip pins the same requirements), and grade the solution through
    its run_autograder. Returns the results document."""
    solution = assignment.solution
    if not solution.is_file():
        raise SelfTestFailed(f"no solution at {solution} to grade")
    with tempfile.TemporaryDirectory(prefix="pallas-selftest-") as tmp:
        root = Path(tmp) / "autograder"
        with zipfile.ZipFile(zip_path) as zf:
            zf.extractall(root / "source")
        for name in EXECUTABLE:
            os.chmod(root / "source" / name, 0o755)   # Gradescope keeps the modes; extractall does not
        venv = root / "source" / ".venv"
        prefix = prefix_for(assignment.jax)
        if (prefix / "bin" / "python").exists():
            venv.symlink_to(prefix)
        else:                         # a system Python with only python3: link the interpreter itself
            (venv / "bin").mkdir(parents=True)
            (venv / "bin" / "python").symlink_to(sys.executable)
        (root / "submission").mkdir(parents=True)
        shutil.copy(solution, root / "submission" / assignment.entry_file)
        try:
            proc = subprocess.run([str(root / "source" / "run_autograder")], capture_output=True, text=True,
                                  timeout=timeout_s, env={**os.environ, "AUTOGRADER_ROOT": str(root)})
        except subprocess.TimeoutExpired:
            raise SelfTestFailed(f"grading the solution from the zip took longer than {timeout_s:g} s") from None
        try:
            doc = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise SelfTestFailed(f"run_autograder left no readable results.json ({e}); "
                                 f"stderr: {proc.stderr[-1500:]}") from None
    graded_on = (doc.get("extra_data") or {}).get("jax")
    if graded_on != assignment.jax:
        raise SelfTestFailed(f"the zip's grading ran on jax {graded_on}, not the course's {assignment.jax}")
    most = sum(t.get("max_score", 0) for t in doc.get("tests", []))
    failed = [t.get("name") for t in doc.get("tests", []) if t.get("status") == "failed"]
    if failed or most == 0 or not math.isclose(float(doc.get("score", 0)), most, abs_tol=1e-6):
        raise SelfTestFailed(f"the solution got {doc.get('score')}/{most} from the zip; failed: {failed[:5]}; "
                             f"stderr: {proc.stderr[-800:]}")
    return doc


def prefix_for(jax: str) -> Path:
    """An environment with exactly the course's JAX release, for the self-test: this
    Python's, else the checkout's ``.venv`` or ``.venv-jax-<release>`` (``./setup.sh
    --jax`` or ``--test`` makes them). Raises SelfTestFailed saying how to get one."""
    try:
        repo = checkout.find()
    except checkout.NoCheckout:
        repo = None
    candidates = [Path(sys.prefix)] + ([repo / ".venv", repo / f".venv-jax-{jax}"] if repo else [])
    probe = "import importlib.metadata as m; print(m.version('jax'))"
    for prefix in candidates:
        python = prefix / "bin" / "python"
        if not python.exists():
            continue
        try:
            seen = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        if seen.strip() == jax:
            return prefix
    raise SelfTestFailed(f"the self-test grades with jax {jax}, and no environment here has it (looked in "
                         f"{', '.join(str(c) for c in candidates)}): run ./setup.sh --jax {jax} in a checkout, "
                         f"or build with --no-self-test")


def _write(assignment: Assignment, output: Path, rate_limit=None) -> Path:
    # The grader's own files are the checkout's: a regular install's site-packages has
    # none of setup.sh, run_autograder, the lock files (raises checkout.NoCheckout).
    repo = checkout.find()
    solution = assignment.solution
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(output, "w") as zf:
        for name in ROOT_FILES:
            _add(zf, repo / name, name)
        lock = checkout.lock(assignment.jax)
        _add(zf, repo / lock, lock)
        for p in _tree(repo / "autograder"):
            _add(zf, p, str(p.relative_to(repo)))
        for p in _tree(assignment.folder):
            if p.relative_to(assignment.folder).parts[0] == "corpus":
                continue    # the instructor's regression corpus: `check` reads it, grading never does
            arcname = f"assignments/{assignment.slug}/{p.relative_to(assignment.folder)}"
            if p.name == "spec.toml":
                _add_text(zf, course_release.with_release(p.read_text(encoding="utf-8"), assignment.jax), arcname)
            else:
                _add(zf, p, arcname)
        if solution.is_file():
            _add(zf, solution, f"solutions/{assignment.slug}.py")
        info = zipfile.ZipInfo("assignment.txt", date_time=(2026, 1, 1, 0, 0, 0))
        info.external_attr = (stat.S_IFREG | 0o644) << 16
        zf.writestr(info, assignment.slug + "\n")
        if rate_limit is not None:
            info = zipfile.ZipInfo("rate_limit.json", date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            zf.writestr(info, json.dumps({"submissions": rate_limit.submissions,
                                          "window_hours": rate_limit.window_hours}) + "\n")
    return output


def add_arguments(p) -> None:
    p.add_argument("slug")
    p.add_argument("-o", "--output", type=Path, required=True, help="zip file to write")
    p.add_argument("--rate-limit", type=int, metavar="N",
                   help="grade at most N submissions per student per window (see --rate-window-hours)")
    p.add_argument("--rate-window-hours", type=float, default=24.0, help="the rate limit's window (default 24)")
    p.add_argument("--jax", choices=release.SUPPORTED, default=None, metavar="RELEASE",
                   help="the JAX release the course grades on (default: the spec's `jax`, else the newest, "
                        f"{release.NEWEST}; one of {', '.join(release.SUPPORTED)})")
    p.add_argument("--no-self-test", action="store_true",
                   help="skip installing the zip into a temporary root and grading the solution with it")


def run(args) -> int:
    assignment = assignments.find(args.slug, args.assignments)
    if args.jax:
        assignment = dataclasses.replace(assignment, jax=args.jax)
    try:
        checkout.find()
    except checkout.NoCheckout as e:
        args.parser.exit(1, f"pallas-autograder build: not writing {args.output}: {e}\n")
    rows = check.quick(assignment)
    if not all(r.ok for r in rows):
        # A zip that cannot grade would show every student "autograder error".
        args.parser.exit(1, f"pallas-autograder build: not writing {args.output}: the assignment "
                         f"cannot grade\n{check.table(rows)}\n")
    try:
        limit = (Limit(args.rate_limit, args.rate_window_hours)
                 if args.rate_limit is not None else None)
    except ValueError as e:
        args.parser.error(str(e))
    try:
        path = build(assignment, args.output, self_test=not args.no_self_test, rate_limit=limit)
    except SelfTestFailed as e:
        args.parser.exit(1, f"pallas-autograder build: not writing {args.output}: self-test failed: {e}\n")
    tested = "" if args.no_self_test else " (self-test: the solution got full marks from the zip)"
    print(f"wrote {path}{tested}, grading on jax {assignment.jax}: upload it as the autograder of a "
          "Gradescope programming assignment")
    return 0
