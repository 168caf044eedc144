"""What grading costs, against its floor.

    python benchmarks/grade_bench.py                     # every instructor solution
    python benchmarks/grade_bench.py solutions/matmul.py matmul [--repeat 3] [--container]
    python benchmarks/grade_bench.py solutions/matmul.py matmul --container --repeat 4 --against ../before

For each submission: a grading through the real CLI (``pallas-autograder
grade``), then its floor (``benchmarks/floor.py``: the same interpreter
executions, bare, in one process), both with the same run key. Reported for
each: wall time, CPU time of the whole process tree, and the peak of the whole
tree's resident memory (sampled every 20 ms, the grader and its child summed);
``overhead`` is grading wall / floor wall; and seconds per check (correctness
runs and each probe) for both. ``--container`` runs both inside Gradescope's
default limits (half a CPU, 768 MB) emulated with cgroups, where this machine
allows it (then also the container's own CPU and peak memory counters).
``--against CHECKOUT`` also runs another checkout's grader and floor on the same
file, in turn with this one's, repeat by repeat (a before-and-after on a machine
whose speed drifts), and reports each checkout's medians.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
from autograder.isolation import container  # noqa: E402

SOLUTIONS = ("add", "matmul", "softmax", "dma_scale", "flash_attention")
RUN_KEY = 12345


def _tree_rss_kb(root: int) -> int:
    """Resident memory of ``root`` and every descendant (Linux /proc)."""
    parent, rss = {}, {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().decode("ascii", "replace").rsplit(")", 1)[1].split()
            parent[int(entry.name)], rss[int(entry.name)] = int(fields[1]), int(fields[21])
        except (OSError, ValueError, IndexError):
            continue
    tree, frontier = {root}, [root]
    while frontier:
        p = frontier.pop()
        for pid, ppid in parent.items():
            if ppid == p and pid not in tree:
                tree.add(pid)
                frontier.append(pid)
    return sum(rss.get(p, 0) for p in tree) * (os.sysconf("SC_PAGE_SIZE") // 1024)


def measure(cmd: list[str], box: container.Container | None = None, cwd: Path = REPO) -> dict:
    """Run ``cmd``: wall time and the peak of its whole tree's resident memory."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                            preexec_fn=box.enter if box else None)
    peak, done = [0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
            time.sleep(0.02)
    threading.Thread(target=sample, daemon=True).start()
    out, err = proc.communicate()     # reaps it: its tree's CPU lands in os.times().children_*
    done.set()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed: {err.decode()[-2000:]}")
    return {"wall_s": wall, "peak_mb": peak[0] / 1024, "stdout": out.decode()}


def _run_both(sub: str, slug: str, box_factory, repo: Path = REPO) -> dict:
    """The grading and the floor of ``repo``'s grader (its code, its floor.py) on ``sub``."""
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.json"
        grading_cmd = [sys.executable, "-m", "autograder", "grade", sub, "-a", slug, "--run-key",
                       str(RUN_KEY), "--results", str(results)]
        floor_cmd = [sys.executable, str(repo / "benchmarks" / "floor.py"), sub, slug, "--run-key", str(RUN_KEY)]
        out = {}
        for name, cmd in (("grading", grading_cmd), ("floor", floor_cmd)):
            c0 = os.times()
            with box_factory() as box:
                m = measure(cmd, box, repo)
                if box is not None:
                    m.update(container_cpu_s=box.cpu_s, container_peak_mb=box.peak_mb,
                             oom_kills=box.oom_kills)
            c1 = os.times()
            m["cpu_s"] = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
            out[name] = m
        doc = json.loads(results.read_text())
        out["grading"]["by_check"] = doc["extra_data"]["seconds_by_check"]
        out["grading"]["score"] = f"{doc['score']:g}/{sum(t['max_score'] for t in doc['tests']):g}"
        out["floor"]["by_check"] = json.loads(out["floor"]["stdout"])["seconds_by_check"]
        return out


class _NoBox:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


def bench(sub: str, slug: str, repeat: int, use_container: bool, against: Path | None = None) -> list[dict]:
    """One row per checkout (this one; and ``against``, another checkout of the grader,
    run in turn with this one, repeat by repeat: this machine's speed drifts, so only
    interleaved runs compare). Both grade this checkout's ``sub``."""
    factory = container.Container if use_container else _NoBox
    repos = [REPO] + ([against.resolve()] if against is not None else [])
    path = str((REPO / sub).resolve())
    runs: dict[Path, list[dict]] = {r: [] for r in repos}
    for _ in range(repeat):
        for repo in repos:
            runs[repo].append(_run_both(path, slug, factory, repo))
    return [_row(sub, slug, repeat, use_container, runs[r], r) for r in repos]


def _row(sub: str, slug: str, repeat: int, use_container: bool, runs: list[dict], repo: Path) -> dict:
    def med(part: str, key: str) -> float:
        return round(statistics.median(r[part][key] for r in runs), 2)

    row = {"submission": sub, "assignment": slug, "checkout": str(repo), "repeat": repeat,
           "container": use_container, "score": runs[-1]["grading"]["score"],
           "grading_wall_each_s": [round(r["grading"]["wall_s"], 1) for r in runs]}
    for part in ("grading", "floor"):
        for key in ("wall_s", "cpu_s", "peak_mb") + (("container_cpu_s", "container_peak_mb", "oom_kills")
                                                      if use_container else ()):
            row[f"{part}_{key}"] = med(part, key)
        row[f"{part}_by_check"] = runs[-1][part]["by_check"]
    row["overhead"] = round(row["grading_wall_s"] / row["floor_wall_s"], 2)
    return row


def _label(row: dict) -> str:
    return row["submission"] if row["checkout"] == str(REPO) else f"{row['submission']} ({row['checkout']})"


def _table(rows: list[dict]) -> str:
    head = ("| submission | score | grading wall | grading CPU | tree peak | floor wall | floor CPU | "
            "floor peak | overhead |\n|---|---|---|---|---|---|---|---|---|")
    lines = [head] + [
        f"| {_label(r)} | {r['score']} | {r['grading_wall_s']:.1f} s | {r['grading_cpu_s']:.1f} s | "
        f"{r['grading_peak_mb']:.0f} MB | {r['floor_wall_s']:.1f} s | {r['floor_cpu_s']:.1f} s | "
        f"{r['floor_peak_mb']:.0f} MB | {r['overhead']:.2f} |" for r in rows]
    for r in rows:
        checks = sorted(set(r["grading_by_check"]) | set(r["floor_by_check"]))
        lines.append(f"\n{_label(r)}, seconds per check (grading child / floor): " + ", ".join(
            f"{c} {r['grading_by_check'].get(c, 0):.2f}/{r['floor_by_check'].get(c, 0):.2f}" for c in checks))
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("submission", nargs="?")
    p.add_argument("assignment", nargs="?")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--container", action="store_true", help="half a CPU and 768 MB (cgroups)")
    p.add_argument("--json", action="store_true", help="one JSON object per submission")
    p.add_argument("--against", type=Path, metavar="CHECKOUT",
                   help="another checkout of the grader (a git worktree of the commit before a change): its "
                        "grading and floor of the same file, run in turn with this one's, each repeat")
    args = p.parse_args()
    if args.container and (why := container.available()):
        p.error(f"--container: {why}")
    pairs = [(args.submission, args.assignment)] if args.submission else \
        [(f"solutions/{s}.py", s) for s in SOLUTIONS]
    rows = [row for sub, slug in pairs for row in bench(sub, slug, args.repeat, args.container, args.against)]
    print("\n".join(json.dumps(r) for r in rows) if args.json else _table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
