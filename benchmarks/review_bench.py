"""Throughput and fidelity of `review` over a generated class of 40+ submissions.

    python benchmarks/review_bench.py [--out DIR] [--skip-dask] [--skip-singles]

The class (all for `add`): every file of its regression corpus, the solution,
block-size variants of the solution (each a different kernel, most of them
buggy on some case), a few hostile submissions, and two structurally identical
pairs under different names (the solution with every name changed; the
wrong-formula kernel likewise). It then measures:

- throughput at --jobs 1, --jobs 2 and on a local two-worker Dask cluster
  (submissions per minute, from a fresh site each time);
- an interrupted batch (SIGINT once 10 gradings are stored) resumed: how many
  it regrades (must be none of those stored);
- the clusters (must be exactly the two identical pairs);
- the site's scores against single `grade` runs with the same run keys.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "assignments" / "add" / "corpus"
HOSTILE = REPO / "tests" / "hostile" / "attacks"
RENAMES = (("add_kernel", "k"), ("x_ref", "a"), ("y_ref", "b"), ("o_ref", "c"), ("BLOCK", "TILE"))
BLOCKS = ((16, 128), (8, 256), (32, 128), (8, 384), (40, 128), (8, 640), (16, 256), (24, 128),
          (8, 512), (64, 128), (16, 384), (48, 128), (32, 256))
HOSTILE_PICK = ("deep_expression.py", "exit_at_import.py", "forge_events.py", "lying_output_object.py",
                "nan_wildcard.py", "fallback_to_jnp.py")


def _renamed(text: str, pairs=RENAMES) -> str:
    for old, new in pairs:
        text = text.replace(old, new)
    return text


def make_class(export: Path) -> dict[str, str]:
    """Folder name -> what it is. Two pairs are meant to be structurally identical."""
    made = {}

    def put(name: str, text: str | bytes, what: str, file: str = "add.py") -> None:
        (export / name).mkdir(parents=True)
        (export / name / file).write_bytes(text if isinstance(text, bytes) else text.encode())
        made[name] = what

    solution = (REPO / "solutions" / "add.py").read_text()
    wrong = (CORPUS / "wrong_formula.py").read_text()
    # The corpus's Colab notebook holds the solution's kernel: it would make a third,
    # legitimate member of pair A, so it stays out of a class meant to hold exactly two pairs.
    for p in sorted(CORPUS.glob("*.py")):
        put(f"corpus_{p.stem}", p.read_bytes(), f"corpus {p.name}")
    put("solution", solution, "the solution")
    put("pair_a_renamed_solution", _renamed(solution), "pair A: the solution renamed")
    pair_b = (("def kernel(", "def body("), ("pallas_call(kernel", "pallas_call(body"), ("x_ref", "p"),
              ("y_ref", "q"), ("o_ref", "r"), ("spec = ", "bs = "), ("[spec, spec]", "[bs, bs]"),
              ("out_specs=spec", "out_specs=bs"))
    put("pair_b_renamed_wrong", _renamed(wrong, pair_b), "pair B: wrong_formula renamed")
    for bm, bn in BLOCKS:
        put(f"blocks_{bm}x{bn}", solution.replace("BLOCK = (8, 128)", f"BLOCK = ({bm}, {bn})"),
            f"solution with ({bm}, {bn}) blocks")
    for name in HOSTILE_PICK:
        put(f"hostile_{Path(name).stem}", (HOSTILE / name).read_bytes(), f"hostile {name}")
        for helper in ("attack_kit.py", "honest_add.py", "wrong_add.py"):
            shutil.copy(REPO / "tests" / "hostile" / helper, export / f"hostile_{Path(name).stem}" / helper)
    return made


def review(export: Path, site: Path, *extra: str) -> tuple[float, str]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "autograder", "review", str(export), "-a", "add", "-o", str(site),
                           *extra], capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-3000:])
    return time.monotonic() - t0, proc.stdout.strip()


def interrupted(export: Path, site: Path) -> dict:
    # A background job of a non-interactive shell starts with SIGINT ignored: restore it,
    # as a terminal's Ctrl-C would find it.
    proc = subprocess.Popen([sys.executable, "-m", "autograder", "review", str(export), "-a", "add", "-o",
                             str(site), "--jobs", "2"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    cache = site / ".review-cache"
    while len(list(cache.glob("*.json"))) < 10:
        time.sleep(0.5)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate()
    stopped_s = time.monotonic() - t0
    stored = len(list(cache.glob("*.json")))
    _s, again = review(export, site, "--jobs", "2")
    return {"returncode": proc.returncode, "stopped_in_s": round(stopped_s, 1), "stored": stored,
            "message": err.strip().splitlines()[-1] if err.strip() else "", "resumed": again}


def clusters(site: Path) -> list[list[str]]:
    groups: dict[str, list[str]] = {}
    for f in (site / ".review-cache").glob("*.json"):
        g = json.loads(f.read_text())
        fp = ((g.get("results") or {}).get("extra_data") or {}).get("fingerprint")
        if fp:
            groups.setdefault(fp, []).append(g["submission_id"])
    return sorted(sorted(m) for m in groups.values() if len(m) > 1)


def singles(export: Path, site: Path) -> list[str]:
    """Each submission graded alone with the run key the review recorded: same score?"""
    keys = {}
    for f in (site / ".review-cache").glob("*.json"):
        g = json.loads(f.read_text())
        keys[g["submission_id"]] = ((g.get("results") or {}).get("extra_data") or {}).get("run_key")
    rows = {r["submission_id"]: r["score"] for r in csv.DictReader(io.StringIO((site / "grades.csv").read_text()))}

    def one(sid: str) -> str | None:
        if keys.get(sid) is None:
            return None
        out = site / f".single-{sid}.json"
        subprocess.run([sys.executable, "-m", "autograder", "grade", str(export / sid), "-a", "add",
                        "--run-key", str(keys[sid]), "--results", str(out)], capture_output=True, cwd=REPO)
        score = json.loads(out.read_text())["score"] if out.is_file() else None
        return None if score is not None and f"{score:g}" == rows.get(sid) else f"{sid}: review {rows.get(sid)}, " \
            f"single {score}"
    with ThreadPoolExecutor(2) as pool:
        return [d for d in pool.map(one, sorted(keys)) if d]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path, default=Path("/tmp/review-bench"))
    p.add_argument("--skip-dask", action="store_true")
    p.add_argument("--skip-singles", action="store_true")
    p.add_argument("--skip-throughput", action="store_true", help="grade once at --jobs 2 only")
    args = p.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    export = args.out / "export"
    made = make_class(export)
    n = len(made)
    print(f"class: {n} submissions in {export}")
    report = {"submissions": n}
    for jobs in ("2",) if args.skip_throughput else ("1", "2"):
        site = args.out / f"site-j{jobs}"
        seconds, said = review(export, site, "--jobs", jobs)
        report[f"jobs{jobs}"] = {"seconds": round(seconds, 1), "per_minute": round(60 * n / seconds, 1), "said": said}
        print(f"--jobs {jobs}: {seconds:.0f} s, {60 * n / seconds:.1f} submissions/min ({said})")
    if not args.skip_dask and not args.skip_throughput:
        from distributed import LocalCluster
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
            seconds, said = review(export, args.out / "site-dask", "--dask", cluster.scheduler_address)
        report["dask2"] = {"seconds": round(seconds, 1), "per_minute": round(60 * n / seconds, 1), "said": said}
        print(f"Dask, 2 workers: {seconds:.0f} s, {60 * n / seconds:.1f} submissions/min ({said})")
    report["interrupted"] = interrupted(export, args.out / "site-interrupted")
    print(f"interrupted: {report['interrupted']}")
    report["clusters"] = clusters(args.out / "site-j2")
    print(f"clusters: {report['clusters']}")
    if not args.skip_singles:
        report["single_grade_differences"] = singles(export, args.out / "site-j2")
        print(f"single-grade differences: {report['single_grade_differences'] or 'none'}")
    (args.out / "report.json").write_text(json.dumps(report, indent=1))
    ok = report["clusters"] == [["corpus_wrong_formula", "pair_b_renamed_wrong"],
                                ["pair_a_renamed_solution", "solution"]]
    print("clusters are exactly the two pairs" if ok else "CLUSTERS DIFFER FROM THE TWO PAIRS")
    return 0 if ok and not report.get("single_grade_differences") else 1


if __name__ == "__main__":
    sys.exit(main())
