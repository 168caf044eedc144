"""The TPU guide's TPU route, made ready on this (CPU) machine for a TPU host: a folder
holding only what "The TPU stage" tells an instructor to copy there:

    review-site/   the class and the instructor solution graded here (`review`)
    export.zip     Gradescope's export of the class
    wheels/        the grader's wheel and its needs beyond what the host provides
    assignments/   the assignments folder

``python benchmarks/chip/route.py OUT [--slug add] [--python-version 3.11]`` makes
OUT/{review-site,export.zip,wheels,assignments} with the commands the TPU guide
gives (the grading under this interpreter's JAX release: run it with the host's,
`.venv-jax-0.10.2/bin/python`). The chip call then runs the TPU guide's install and
`speed` commands in a copy of OUT holding nothing else (CHIP_CALL.md).
"""
from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
# The wheels the TPU guide's `pip download` names: the grader's needs a TPU host does not ship
# (its JAX image brings jax, jaxlib, libtpu, numpy, scipy and ml_dtypes).
NEEDS = ("jinja2", "markupsafe", "pyyaml", "markdown-it-py", "mdurl", "datasketch", "gradescope-utils")
# The class: a kernel the solution's way, two in other styles, and one the interpreters fail.
CLASS = {"add": ("flat_grid.py", "unrolled_column_loop.py", "swizzled_grid.py", "wrong_formula.py")}


def export_zip(path: Path, slug: str, files: list[Path]) -> Path:
    """A Gradescope "Export Submissions" zip: metadata and one folder per submission."""
    import tomllib
    entry = tomllib.loads((REPO / "assignments" / slug / "spec.toml").read_text())["entry_file"]
    sids = [f"submission_{301 + i}" for i in range(len(files))]
    meta = "".join(f"{sid}:\n  :submitters:\n  - :name: Student {sid[-3:]}\n    :sid: '{sid[-3:]}'\n"
                   f"    :email: s{sid[-3:]}@example.edu\n  :created_at: 2026-12-01 10:00:00.000000000 -08:00\n"
                   for sid in sids)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"assignment_{slug}_export/submission_metadata.yml", meta)
        for sid, src in zip(sids, files):
            zf.writestr(f"assignment_{slug}_export/{sid}/{entry}", src.read_text(encoding="utf-8"))
    return path


def grader_wheel(out: Path, repo: Path = REPO) -> Path:
    """The grader's wheel, built from a copy of the files git sees (tracked, and untracked
    ones it does not ignore). Built in the checkout, setuptools reuses its build/ folder, and
    a module moved or deleted since the last build would still ship (and change the
    grader's hash, so a host would find no grading of its own)."""
    import tempfile
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=repo,
                            check=True, capture_output=True).stdout.decode().split("\0")
    with tempfile.TemporaryDirectory() as tmp:
        for name in filter(None, listed):
            src = repo / name
            if src.is_file() and (name.startswith("autograder/") or "/" not in name):
                (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, Path(tmp) / name)
        out.mkdir(parents=True, exist_ok=True)
        # With setuptools already here (the test extra), build in this environment: an isolated
        # build installs setuptools afresh each time (about 50 s a wheel on 2 cores).
        isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-isolation"]
        subprocess.run([sys.executable, "-m", "build", "--wheel", *isolation, "--outdir", str(out), tmp],
                       check=True, capture_output=True)
    (wheel,) = sorted(out.glob("pallas_autograder-*.whl"))
    return wheel


def wheels(out: Path, python_version: str) -> None:
    """The TPU guide's two wheel commands: the grader's wheel, and its needs for the host's Python."""
    grader_wheel(out)
    subprocess.run([sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--no-deps",
                    "--python-version", python_version, "--platform", "manylinux2014_x86_64", "-d", str(out),
                    *NEEDS], check=True, capture_output=True)


def prepare(out: Path, slug: str = "add", python_version: str = "3.11") -> Path:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    corpus = REPO / "assignments" / slug / "corpus"
    export_zip(out / "export.zip", slug, [corpus / f for f in CLASS[slug]])
    # Graded from the checkout, whose solutions/ holds the solution: review grades it into the site.
    subprocess.run([sys.executable, "-m", "autograder", "review", str(out / "export.zip"), "-a", slug, "-o",
                    str(out / "review-site")], cwd=REPO, check=True)
    wheels(out / "wheels", python_version)
    shutil.copytree(REPO / "assignments", out / "assignments", ignore=shutil.ignore_patterns("__pycache__"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output", type=Path)
    ap.add_argument("--slug", default="add", choices=sorted(CLASS))
    ap.add_argument("--python-version", default="3.11", help="the TPU host's Python (its wheels' tags)")
    args = ap.parse_args()
    prepare(args.output, args.slug, args.python_version)
    print(f"wrote {args.output}: {', '.join(sorted(p.name for p in args.output.iterdir()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
