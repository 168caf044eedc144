"""Wall time and peak memory of grading one submission through the real CLI.

    python benchmarks/grade_bench.py solutions/matmul.py matmul [--repeat 3]

Peak memory is the maximum resident set of the grader (parent) and of its
children (the kernel runs), read from getrusage after each run: RUSAGE_CHILDREN
covers the whole process tree below this script.
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("submission")
    p.add_argument("assignment")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    walls = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            results = Path(tmp) / "results.json"
            t = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "autograder", "grade", args.submission,
                                   "--assignment", args.assignment, "--results", str(results)],
                                  capture_output=True, text=True)
            walls.append(time.perf_counter() - t)
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return 1
            doc = json.loads(results.read_text())
    peak_children_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps({
        "submission": args.submission, "assignment": args.assignment, "runs": args.repeat,
        "wall_s_median": round(statistics.median(walls), 2), "wall_s_min": round(min(walls), 2),
        "score": doc["score"], "tests": len(doc["tests"]),
        "peak_rss_mb_largest_process": round(peak_children_mb, 1),
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
