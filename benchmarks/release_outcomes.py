"""Every bundled solution and corpus kernel graded on each supported JAX release:
the score and the finding IDs each test got, side by side, and where they differ.

    python benchmarks/release_outcomes.py [-o docs/release-outcomes.md] [--run-key 1]
        [--python 0.12.0.1=.venv/bin/python --python 0.10.2=.venv-jax-0.10.2/bin/python]
        [--add-missing]

``--add-missing`` grades only the kernels the output file has no row for and writes
the table with the old rows kept (a corpus that grew since the last whole run).

Each grading goes through the real CLI of that release's venv (``grade FILE -a SLUG
--results``), one at a time, with one run key for every release (the draws, fills and
grid orders are then the same). Writes a Markdown table; exits 1 when a kernel's
outcome differs between releases. Takes about 15 s per kernel per release on 2 cores.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_PYTHONS = {"0.12.0.1": REPO / ".venv" / "bin" / "python",
                   "0.10.2": REPO / ".venv-jax-0.10.2" / "bin" / "python"}


def kernels() -> list[tuple[str, Path]]:
    """(slug, file): each bundled assignment's solution, then its corpus."""
    out = []
    for spec in sorted((REPO / "assignments").glob("*/spec.toml")):
        slug = spec.parent.name
        solution = REPO / "solutions" / f"{slug}.py"
        if solution.is_file():
            out.append((slug, solution))
        out += [(slug, p) for p in sorted((spec.parent / "corpus").glob("*.py"))]
    return out


def outcome(python: Path, slug: str, path: Path, run_key: int) -> str:
    """'score/most: ID, ID' with the IDs of every failed test (number and ID)."""
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.json"
        proc = subprocess.run([str(python), "-m", "autograder", "grade", str(path), "-a", slug,
                               "--results", str(results), "--run-key", str(run_key)],
                              capture_output=True, text=True, cwd=REPO, timeout=900)
        try:
            doc = json.loads(results.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return f"no results (exit {proc.returncode}): {proc.stderr.strip()[-200:]}"
    most = sum(t.get("max_score", 0) for t in doc["tests"])
    ids = [f"{t['number']} {tag}" for t in doc["tests"] if t.get("score", 0) < t.get("max_score", 0)
           for tag in t.get("tags", []) if re.fullmatch(r"[a-z0-9-]+", tag)]
    return f"{doc['score']:g}/{most:g}" + (f": {', '.join(ids)}" if ids else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", type=Path, default=None, help="Markdown file to write")
    ap.add_argument("--run-key", type=int, default=1)
    ap.add_argument("--python", action="append", default=[], metavar="RELEASE=PATH")
    ap.add_argument("--add-missing", action="store_true", help="grade only kernels the output has no row for")
    args = ap.parse_args(argv)
    pythons = dict(DEFAULT_PYTHONS)
    for item in args.python:
        release, _, path = item.partition("=")
        pythons[release] = Path(path)
    releases = sorted(pythons)
    old = _rows(args.output) if args.add_missing and args.output and args.output.is_file() else {}
    rows, differ, added, start = [], 0, [], time.monotonic()
    for slug, path in kernels():
        name = str(path.relative_to(REPO))
        if name in old:
            rows.append(old[name])
            differ += old[name].endswith("| **differs** |")
            continue
        got = {r: outcome(pythons[r], slug, path, args.run_key) for r in releases}
        same = len(set(got.values())) == 1
        differ += not same
        added.append(name)
        verdict = "same" if same else "**differs**"
        rows.append(f"| `{name}` | " + " | ".join(got[r] for r in releases) + f" | {verdict} |")
        print(rows[-1], flush=True)
    took = f"{time.monotonic() - start:.0f} s" + (f" for the {len(added)} kernels added" if old else "")
    head = [f"Every bundled solution and corpus kernel on each release (run key {args.run_key}; "
            f"`python benchmarks/release_outcomes.py{' --add-missing' if old else ''}`, {took}). A cell is "
            "score/most, then each failed test's number and finding ID.", "",
            "| kernel | " + " | ".join(f"jax {r}" for r in releases) + " | |",
            "|---|" + "---|" * len(releases) + "---|"]
    text = "\n".join(head + rows) + f"\n\n{len(rows)} kernels, {differ} differ.\n"
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    print(f"{len(rows)} kernels, {differ} differ; added: {', '.join(added) or 'none'}", file=sys.stderr)
    return 1 if differ else 0


def _rows(path: Path) -> dict[str, str]:
    """The table rows a previous run wrote, by kernel path."""
    return {m[1]: m[0] for m in re.finditer(r"^\| `([^`]+)` \|.*\|$", path.read_text(encoding="utf-8"), re.M)}


if __name__ == "__main__":
    sys.exit(main())
