"""The speed estimate on every bundled solution and corpus kernel, at each
assignment's first [speed] size: `python benchmarks/estimate_all.py`.

Prints one row per file (estimated time, bound, grid steps, HBM traffic over
the minimum, or why there is no estimate) and how long each estimate took.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder import spec  # noqa: E402
from autograder.grading import assignments  # noqa: E402
from autograder.instructor.check import corpus_folder  # noqa: E402
from autograder.tpu import estimate  # noqa: E402


def files(slug: str) -> list[Path]:
    a = assignments.find(slug)
    out = [REPO / "solutions" / f"{slug}.py"]
    folder = corpus_folder(a)
    if folder is not None:
        out += sorted(p for p in folder.iterdir() if p.suffix in (".py", ".ipynb") or p.is_dir())
    return [p for p in out if p.exists() and not p.name.startswith(("_", "."))]


def main() -> int:
    slugs = sys.argv[1:] or spec.available()
    rows, failures = 0, 0
    for slug in slugs:
        a = assignments.find(slug)
        size = a.speed.sizes[0]
        print(f"## {slug} at {', '.join(f'{k}={v}' for k, v in size.dims)} {size.dtype}")
        for path in files(slug):
            t0 = time.monotonic()
            result, why, _case = estimate.estimated(a, path)
            took = time.monotonic() - t0
            rows += 1
            if result is None:
                failures += 1
                print(f"{path.name:42s} no estimate: {why[:90]}  [{took:.1f} s]")
            else:
                print(f"{path.name:42s} {result.seconds * 1e3:10.3f} ms  {result.bound:18s} "
                      f"{result.grid_steps:>9,} steps  traffic {result.hbm_bytes / max(result.min_hbm_bytes, 1):5.2f}x "
                      f"min  [{took:.1f} s]")
    print(f"{rows} files, {rows - failures} estimated, {failures} without an estimate (each says why)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
