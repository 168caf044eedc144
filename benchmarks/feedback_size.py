"""How much feedback a student reads on Gradescope for one submission.

    python benchmarks/feedback_size.py                                  # add's one-bug kernel
    python benchmarks/feedback_size.py assignments/matmul/corpus/k_axis_parallel.py matmul
    python benchmarks/feedback_size.py FILE SLUG --source /path/to/another/checkout   # before/after

Grades FILE as Gradescope does (the `gradescope` verb on a /autograder-like
root whose submission is FILE under the handout's name), with the grader of
``--source`` (default: this checkout) and the Python running this script,
and prints the characters of results.json's top-level output and of each
test's output, and their sum (what the student's page holds). Run keys are
drawn fresh by the grader, so numbers in the text (and so the size) vary by a
few characters between runs.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def measure(submission: Path, slug: str, source: Path) -> dict:
    entry = f"{slug}.py"
    with tempfile.TemporaryDirectory(prefix="feedback-size-") as tmp:
        root = Path(tmp)
        (root / "submission").mkdir()
        (root / "results").mkdir()
        shutil.copyfile(submission, root / "submission" / entry)
        proc = subprocess.run([sys.executable, "-m", "autograder", "gradescope", "--root", str(root),
                               "--assignment", slug], cwd=source, capture_output=True, text=True, timeout=900)
        results = root / "results" / "results.json"
        if not results.is_file():
            raise SystemExit(f"no results.json: {proc.stderr[-2000:]}")
        doc = json.loads(results.read_text(encoding="utf-8"))
    tests = [(t["number"], t["status"], len(t["output"])) for t in doc["tests"]]
    return {"top": len(doc["output"]), "tests": tests, "total": len(doc["output"]) + sum(n for *_x, n in tests),
            "score": doc["score"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("submission", nargs="?", type=Path,
                   default=REPO / "assignments" / "add" / "corpus" / "grid_one_step_too_long.py")
    p.add_argument("slug", nargs="?", default="add")
    p.add_argument("--source", type=Path, default=REPO, help="the checkout whose grader runs (default: this one)")
    args = p.parse_args(argv)
    m = measure(args.submission.resolve(), args.slug, args.source.resolve())
    print(f"{args.submission.name} ({args.slug}), grader from {args.source}: score {m['score']:g}")
    print(f"  top-level output: {m['top']} characters")
    for number, status, n in m["tests"]:
        print(f"  {number:>4} {status:<6} {n:>6}")
    print(f"  total: {m['total']} characters")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
