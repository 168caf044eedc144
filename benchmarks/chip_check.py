"""The chip check: what a real TPU does with this project's kernels, in one command.

On a CPU machine with the JAX release of the TPU host (a v5e image: jax 0.10.2):

    .venv-jax-0.10.2/bin/python benchmarks/chip_check.py prepare [-o .chip] [-j 3]

grades every assignment's export (its corpus, and for add two kernels that halt
and hang the chip at the speed size) into review sites, so that nothing is
graded on the TPU host. Then on the TPU host, the chip check (the tests marked
``tpu`` and `speed` on all five assignments; under 9 minutes on a v5e):

    python3 benchmarks/chip_check.py run -o OUT [--prepared .chip] [--budget-s 520] [--device tpu|cpu]

and what the chip does with every corpus kernel (docs/chip-outcomes.md) and
the estimate's device-time points (docs/speed-validation.md), each its own call:

    python3 benchmarks/chip_check.py run -o OUT --phases env,outcomes
    python3 benchmarks/chip_check.py run -o OUT --phases env,points [--points blind|all|fit,heldout,blind]

Every phase runs its chip work in chip workers (``autograder.tpu.chip.worker``: one
process holds the chip; a kernel that halts the core or hangs is that job's
outcome, and a fresh worker takes the next) and writes its JSON to OUT as it
goes, so a run stopped at its budget keeps what it measured:

- ``env``: Python, JAX, libtpu, the device, the installed packages (env.json);
- ``tests``: the tests marked ``tpu`` (tests.json);
- ``speed``: ``pallas-autograder speed`` on every assignment, each with its
  solution as the baseline (speed-SLUG/speed.json, speed-runs.json);
- ``numerics``: the chip's transcendentals and products against float64 (numerics.json);
- ``points``: device time of the points of ``benchmarks/chip/points.py`` (points.json),
  the data of docs/speed-validation.md;
- ``outcomes``: every solution and corpus kernel at its assignment's visible
  cases: refused, halted, hung, wrong or right (outcomes.json).

Back on the CPU machine, ``python benchmarks/chip_check.py report OUT...``
writes docs/tpu-runs.md and docs/chip-outcomes.md and keeps the JSON in
docs/chip-data/. ``--device cpu`` rehearses ``run`` on JAX's CPU backend (the
generic interpreter in Mosaic's place; ``--small`` shrinks the points), which is
not a TPU measurement.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO)]

from autograder.tpu.chip.chipproc import ChipWorker, Limits, Unavailable  # noqa: E402
from benchmarks.chip import points as chip_points  # noqa: E402

PHASES = ("env", "numerics", "points", "outcomes")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Runner:
    """Jobs on one chip worker at a time; a worker that halted, hung or died is replaced."""

    def __init__(self, platform: str, limits: Limits):
        self.platform, self.limits = platform, limits
        self.worker: ChipWorker | None = None
        self.opens: list[float] = []

    def _worker(self) -> ChipWorker:
        if self.worker is None or not self.worker.alive:
            self.worker = ChipWorker(self.platform, self.limits)
            self.worker.open()
            self.opens.append(round(self.worker.open_s, 2))
            log(f"worker open in {self.worker.open_s:.1f} s ({self.worker.info.get('device_kind')})")
        return self.worker

    def run(self, job: str, args: dict) -> dict:
        try:
            w = self._worker()
        except Unavailable as e:
            return {"outcome": "unavailable", "message": str(e)[:2000]}
        o = w.call(job, args)
        if o.status == "result":
            return {"outcome": "result", "result": o.result, "seconds": round(o.seconds, 3)}
        if o.status in ("halt", "hang", "died"):
            w.kill()
        return {"outcome": o.status, **o.to_json()}

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()


def _save(out: Path, name: str, data) -> None:
    tmp = out / f".{name}.tmp"
    tmp.write_text(json.dumps(data, indent=1, default=str))
    tmp.replace(out / name)


def phase_points(r: Runner, out: Path, deadline: float, small: bool, which: str = "all") -> None:
    rows = []
    pool = (chip_points.all_points() + chip_points.fit2_points() + chip_points.blind_points()
            + chip_points.style_points_47())
    roles = {"fit", "heldout", "refusal", "blind", "styles"} if which == "all" else set(which.split(","))
    # "fit2": the microbenchmarks added after call A (role "fit", ids "fit2/..."); "s47": issue 47's
    # styles (ids "s47/...", roles "fit" and "styles").
    pts = [p for p in pool if p["role"] in roles or any(t in roles and p["id"].startswith(f"{t}/")
                                                        for t in ("fit2", "s47"))]
    for i, p in enumerate(pts):
        if small:
            p = chip_points.shrink(p)
        if time.monotonic() > deadline:
            rows.append({"point": p, "outcome": "skipped", "message": "the run's budget was spent"})
            continue
        got = r.run("benchmarks.chip.jobs:device_time", {**p, "calls": 10})
        rows.append({"point": p, **got})
        res = got.get("result") or {}
        med = sorted(res.get("device_s") or [0])[len(res.get("device_s") or [0]) // 2]
        log(f"point {i + 1}/{len(pts)} {p['id']}: {got['outcome']} {res.get('status', '')} "
            f"{med * 1e3:.4f} ms compile {res.get('compile_s', 0):.2f} s")
        _save(out, "points.json", rows)


# Corpus files its expectations.toml does not list: the test suite grades them (they hang, exit
# or exhaust memory on purpose); the chip runs them too (each in a worker of its own).
UNLISTED = "(not in expectations.toml: the test suite grades it)"


def outcome_files(unlisted: bool = False) -> list[tuple[str, str, str]]:
    """(slug, file, what the grader concludes) for every solution and listed corpus file
    (``unlisted``: the corpus's other kernel files too)."""
    out = []
    for slug in chip_points.SLUGS:
        out.append((slug, f"solutions/{slug}.py", "clean"))
        corpus = REPO / "assignments" / slug / "corpus"
        exp = tomllib.loads((corpus / "expectations.toml").read_text())["files"]
        out += [(slug, f"assignments/{slug}/corpus/{f}", v) for f, v in sorted(exp.items())]
        if unlisted:
            out += [(slug, f"assignments/{slug}/corpus/{p.name}", UNLISTED) for p in sorted(corpus.iterdir())
                    if p.suffix in (".py", ".ipynb") and p.name not in exp]
    return out


def phase_outcomes(r: Runner, out: Path, deadline: float, skip: Path | None = None) -> None:
    """Every solution and corpus file (``skip``: an earlier run's outcomes.json; the files it
    measured are not run again)."""
    rows = []
    done = {row["file"] for row in json.loads(skip.read_text())} if skip else set()
    files = [f for f in outcome_files(unlisted=True) if f[1] not in done]
    for i, (slug, file, grader) in enumerate(files):
        row = {"slug": slug, "file": file, "grader": grader}
        if time.monotonic() > deadline:
            rows.append({**row, "outcome": "skipped", "message": "the run's budget was spent"})
            continue
        got = r.run("benchmarks.chip.jobs:outcome", {"slug": slug, "file": file,
                                                      "assignments": str(REPO / "assignments")})
        rows.append({**row, **got})
        cases = (got.get("result") or {}).get("cases", [])
        log(f"outcome {i + 1}/{len(files)} {file}: {got['outcome']} "
            f"{[c.get('status') for c in cases]} {got.get('message', '')[:160]}")
        _save(out, "outcomes.json", rows)


def prepare(out: Path, jobs: int | None) -> int:
    """On a CPU machine, with the JAX release the TPU host runs: each assignment's export
    (every corpus kernel the expectations list, and for add the two kernels that halt and
    hang the chip at the speed size) and its review site, graded here (the instructor
    solution too), so that nothing is graded on the TPU host."""
    import shutil
    import subprocess
    for slug in chip_points.SLUGS:
        export = out / "exports" / slug
        shutil.rmtree(export, ignore_errors=True)
        for _slug, file, _grader in outcome_files():
            if _slug != slug or file.startswith("solutions/"):
                continue
            src = REPO / file
            entry = tomllib.loads((REPO / "assignments" / slug / "spec.toml").read_text())["entry_file"]
            dest = export / src.stem
            dest.mkdir(parents=True)
            shutil.copy(src, dest / (src.name if src.suffix == ".ipynb" else entry))
        if slug == "add":
            for src in sorted((REPO / "tests" / "tpu_fixtures").glob("*.py")):
                (export / src.stem).mkdir(parents=True)
                shutil.copy(src, export / src.stem / "add.py")
        cmd = [sys.executable, "-m", "autograder", "review", str(export), "-a", slug, "-o", str(out / "sites" / slug)]
        if jobs:
            cmd += ["-j", str(jobs)]
        log(" ".join(cmd))
        subprocess.run(cmd, cwd=REPO, check=True)
    return 0


def phase_tests(out: Path) -> dict:
    import subprocess
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                           "tests/test_tpu_stage.py", "-m", "tpu"], cwd=REPO, capture_output=True, text=True,
                          timeout=240)
    tail = (proc.stdout + proc.stderr)[-3000:]
    log(f"tests: exit {proc.returncode}: {tail.strip().splitlines()[-1] if tail.strip() else ''}")
    return {"returncode": proc.returncode, "tail": tail, "seconds": round(time.monotonic() - t0, 1)}


def phase_speed(prepared: Path, out: Path, deadline: float, device: str = "tpu",
                slugs: tuple[str, ...] = chip_points.SLUGS) -> dict:
    """`pallas-autograder speed` on every assignment's export, from its review site."""
    import subprocess
    runs = {}
    for slug in slugs:
        left = deadline - time.monotonic()
        if left < 30:
            runs[slug] = {"skipped": "the run's budget was spent"}
            continue
        t0 = time.monotonic()
        # A compile that takes 30 s is a kernel the compiler chokes on (matmul's whole-array
        # blocks at 8192^3 ran past 60 s on a v5e); a right one compiles in under 12 s there.
        cmd = [sys.executable, "-m", "autograder", "speed", str(prepared / "exports" / slug), "-a", slug,
               "--assignments", str(REPO / "assignments"), "-o", str(out / f"speed-{slug}"),
               "--review", str(prepared / "sites" / slug), "--call-timeout", "15", "--compile-timeout", "30",
               "--max-seconds", "4", "--device", device]
        log(" ".join(cmd[2:]))
        logfile = out / f"speed-{slug}.log"
        with logfile.open("w") as sink:     # the whole progress, as it comes (a cut run keeps it)
            try:
                code = subprocess.run(cmd, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT, timeout=left).returncode
            except subprocess.TimeoutExpired:
                code = "timeout"
        text = logfile.read_text(errors="replace")
        runs[slug] = {"returncode": code, "seconds": round(time.monotonic() - t0, 1), "tail": text[-4000:]}
        log(f"speed {slug}: exit {code} in {runs[slug]['seconds']} s")
        _save(out, "speed-runs.json", runs)
    return runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="verb", required=True)
    pp = sub.add_parser("prepare", help="on a CPU machine: exports and review sites (graded here) for `run`")
    pp.add_argument("-o", "--output", type=Path, default=REPO / ".chip")
    pp.add_argument("-j", "--jobs", type=int)
    rp = sub.add_parser("run", help="on a TPU host: every phase, writing JSON to OUT")
    rp.add_argument("-o", "--output", type=Path, required=True)
    rp.add_argument("--prepared", type=Path, default=REPO / ".chip", help="what `prepare` made")
    rp.add_argument("--phases", default="env,tests,speed", help="the chip check: env,tests,speed; also "
                    "outcomes, points, numerics")
    rp.add_argument("--points", default="blind", help="which points: all, or roles (fit, fit2, heldout, blind)")
    rp.add_argument("--device", choices=("tpu", "cpu"), default="tpu")
    rp.add_argument("--slugs", default=",".join(chip_points.SLUGS), help="the assignments the speed phase times")
    rp.add_argument("--budget-s", type=float, default=520.0)
    rp.add_argument("--small", action="store_true", help="shrink the points' sizes (a CPU rehearsal)")
    rp.add_argument("--call-s", type=float, default=30.0, help="silence allowed during one call on the chip")
    rp.add_argument("--outcomes-skip", type=Path, help="an earlier run's outcomes.json: its files are not run again")
    gp = sub.add_parser("report", help="docs/tpu-runs.md and docs/chip-outcomes.md from a run's JSON")
    gp.add_argument("runs", type=Path, nargs="+", help="OUT folders of `run` (later ones win per phase)")
    args = ap.parse_args()
    if args.verb == "prepare":
        return prepare(args.output, args.jobs)
    if args.verb == "report":
        from benchmarks.chip import report
        return report.main(args.runs)
    return run(args)


def run(args) -> int:
    args.output.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    deadline = t0 + args.budget_s
    r = Runner(args.device, Limits(open_s=120.0, compile_s=120.0, call_s=args.call_s, job_s=300.0))
    from benchmarks.chip import inputs
    summary: dict = {"device": args.device, "phases": {}, "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                     "inputs": inputs.digests(), "argv": sys.argv[1:]}
    try:
        for phase in args.phases.split(","):
            p0 = time.monotonic()
            log(f"phase {phase}")
            if phase in ("env", "numerics"):
                _save(args.output, f"{phase}.json", r.run(f"benchmarks.chip.jobs:{phase}", {}))
            elif phase == "tests":
                r.close()              # the chip takes one process at a time
                _save(args.output, "tests.json", phase_tests(args.output))
            elif phase == "speed":
                r.close()
                phase_speed(args.prepared, args.output, deadline, args.device, tuple(args.slugs.split(",")))
            elif phase == "points":
                phase_points(r, args.output, deadline, args.small, args.points)
            elif phase == "outcomes":
                phase_outcomes(r, args.output, deadline, args.outcomes_skip)
            summary["phases"][phase] = round(time.monotonic() - p0, 1)
            summary["wall_s"] = round(time.monotonic() - t0, 1)
            _save(args.output, "summary.json", summary)     # a run killed at its limit keeps what it did
    finally:
        r.close()
        summary["opens_s"] = r.opens
        summary["wall_s"] = round(time.monotonic() - t0, 1)
        _save(args.output, "summary.json", summary)
        log(f"done: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
