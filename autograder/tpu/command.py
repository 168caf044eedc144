"""`pallas-autograder speed SUBMISSIONS -a SLUG -o OUT`: time a class's passing
kernels on a TPU.

Every submission's grading, and the instructor solution's (the baseline), come
from a review site (``--review SITE``): on a TPU host they must already be there,
made by `review` on a CPU machine with the same grader, JAX release and
assignment, so no student code runs where the timing runs; on ``--device
cpu``/``gpu``/``fake`` the missing ones are graded first. Each grading keeps
the checked programs of its kernel, which a chip worker (``worker``) rebuilds
and compiles; only submissions whose correctness tests all passed are queued.
The solution is timed first (and guarded: ``baseline``), then the class, then
the solution again. A submission that halts the chip or hangs gets that
outcome and a fresh worker takes the next (``Chip``). Writes
``OUT/speed.json`` (every result, the device, the rule) and ``OUT/grades.csv``
after every submission.
"""
from __future__ import annotations

import csv
import json
import re
import secrets
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from ..feedback import tpu_timing
from ..grading import assignments
from ..spec import Assignment
from .chip import chipproc
from .stage import baseline, kernel as stage, timing

CORRECTNESS = re.compile(r"^\d+\.\d+$")      # results.json numbers of correctness tests (case.rung)


DEVICES = ("tpu", "cpu", "gpu", "fake")
# A CPU rehearsal times a speed size whose largest array is bigger than this on the
# check case's program instead (the generic interpreter would take hours at 8192^3).
CPU_SIZE_CAP = 1 << 20
# ... and times at most this many calls a size (each call's profile is large on CPU: reading
# 2000 calls' trace took over a minute on two shared cores).
REHEARSAL_CALLS = 200
REHEARSAL_RSE = 0.25        # a shared CPU's timings are noisier than a chip's: the target is looser there


@dataclass(frozen=True)
class Options:
    submissions: Path
    output: Path
    review: Path | None = None
    device: str = "tpu"                     # "tpu"; "cpu"/"gpu" (the real code on that JAX backend, the generic
    rule: timing.Rule = timing.Rule()       # interpreter for Mosaic: not a TPU measurement); "fake" (scripted)
    jobs: int | None = None
    limits: chipproc.Limits = chipproc.Limits()
    fresh_process: bool = False             # a new chip worker per submission (else one, replaced on any fault)
    size_cap: int | None = None             # CPU rehearsal: largest array timed (None: CPU_SIZE_CAP on cpu)


def passed_interpreters(results: dict | None) -> bool:
    """Every correctness test (numbered case.rung) passed in the interpreter stage."""
    tests = [t for t in (results or {}).get("tests", []) if CORRECTNESS.match(str(t.get("number", "")))]
    return bool(tests) and all(t.get("status") == "passed" for t in tests)


def _flops(results: dict | None) -> dict[str, float]:
    """The work in flops per size (the roofline floor's), from a grading's speed estimate."""
    sizes = (((results or {}).get("extra_data") or {}).get("speed_estimate") or {}).get("sizes") or {}
    return {name: float(s.get("flops") or 0.0) for name, s in sizes.items()}


def _graded(a: Assignment, opts: Options) -> tuple[list, object, object]:
    """(submission, stored grading) for every submission, and the solution's stored
    grading. On a TPU host nothing is graded here (student code never runs where
    the timing runs): every grading must be in the review site, made by `review`
    on a CPU machine; elsewhere the missing ones are graded first."""
    from ..review import command as review
    site = opts.review or opts.output / "review"
    if opts.device != "tpu":
        review.regrade(a, review.Options(opts.submissions, site, jobs=opts.jobs))
    graded = review.stored(a, opts.submissions, site)
    missing = [sub for sub, g in graded if g is None]
    source = review.solution_source(a, site)
    sol = review.stored_solution(a, site)
    if source.path:
        print(f"pallas-autograder speed: {source.said()}", file=sys.stderr)
    if missing or sol is None or not sol.programs:
        raise SystemExit(_missing_message(a, site, graded, missing, sol, source))
    return graded, sol, source


def _missing_message(a: Assignment, site: Path, graded: list, missing: list, sol, source) -> str:
    from ..review import batch, command as review
    if not missing and source.why:
        # The solution is what is missing: say which file, where it was looked for, and what the site holds.
        return f"pallas-autograder speed: no baseline: {source.why}."
    if not missing:
        return (f"pallas-autograder speed: no baseline: the site's grading of the instructor solution "
                f"({source.path}) kept no checked program to time; run `pallas-autograder review` again on the CPU "
                "machine with this grader.")
    what = f"{len(missing)} of {len(graded)} submissions have no grading in {site}"
    others = sorted({r for sub in missing[:50] for r in review.other_releases(site, sub)})
    release = (f" The site was graded under jax {', '.join(others)}; this host runs jax {batch.jax_release()}: "
               f"grade it with a grader on jax {batch.jax_release()} (`./setup.sh --jax {batch.jax_release()}`), "
               "or time it on a host with the site's release." if others else "")
    example = f", e.g. {', '.join(sub.id for sub in missing[:3])}" if missing else ""
    return (f"pallas-autograder speed: {what} for this grader, JAX release and assignment (the site's gradings "
            f"are keyed by all three: any change to a grading file or to the assignment misses them){example}."
            f"{release} The TPU host grades nothing itself: run `pallas-autograder review SUBMISSIONS -a {a.slug} "
            "-o SITE` on a CPU machine with this same grader, JAX release and assignment (it grades the "
            "solution too), copy SITE here, and pass it with --review.")


def _chip_note(a: Assignment, info: dict) -> str:
    """Said when the chip that measures is not the one the spec names."""
    if info.get("kind") != "tpu" or info.get("chip") == a.speed.chip:
        return ""
    note = (f"measured on a TPU {info.get('chip')} ({info.get('device_kind')}), but the assignment's [speed] chip "
            f"is {a.speed.chip}: results are labelled with the chip that measured them")
    print(f"pallas-autograder speed: {note}", file=sys.stderr)
    return note


def timed_sizes(a: Assignment, opts: Options, programs: dict[str, str]) -> tuple[list[stage.Size], list[str]]:
    """The sizes to time, and what a CPU rehearsal scaled down (said, never silent)."""
    sizes = list(stage.speed_sizes(a))
    cap = opts.size_cap if opts.size_cap is not None else (CPU_SIZE_CAP if opts.device in ("cpu", "gpu") else None)
    check = next((n for n in programs if n.startswith("check:")), None)
    if cap is None or check is None:
        return sizes, []
    case = a.case(check.split(":", 1)[1])
    out, notes = [], []
    for s in sizes:
        biggest = max(int(np.prod(a.shape(i.shape, _case(a, s)))) for i in a.inputs if i.kind != "float")
        if biggest > cap:
            out.append(stage.Size(s.name, case.dim_map, case.dtype, check))
            notes.append(f"{s.name} timed at the check case {case.name} ({_dims(case.dim_map)}) instead: its largest "
                         f"array has {biggest:,} elements, over the rehearsal's cap of {cap:,} (--size-cap)")
        else:
            out.append(s)
    return out, notes


def _case(a: Assignment, s: stage.Size):
    from ..spec import Case
    return Case(s.name, tuple(sorted(s.dims.items())), s.dtype, 0, 0.0)


def _dims(d: dict) -> str:
    return "x".join(f"{k}={v}" for k, v in d.items())


class Chip:
    """The stage's jobs in chip workers. One worker holds the chip while it
    answers; after any submission that did not end in an answer (a halt kills a
    process's TPU client, a hang must be killed, an error may leave it broken),
    and whenever a health check between submissions fails, a fresh process
    takes the next. With ``fresh``, every submission gets a process of its own, the next
    one prestarted (JAX and the stage imported) while the last holds the chip."""

    def __init__(self, platform: str, limits: chipproc.Limits, fresh: bool = False) -> None:
        self.platform, self.limits, self.fresh = platform, limits, fresh
        self.worker: chipproc.ChipWorker | None = None
        self.next: chipproc.ChipWorker | None = None     # prestarted (``fresh``): the next one to open
        self.info: dict = {}
        self.opens: list[float] = []
        self.replaced: list[str] = []       # why a worker was replaced (said in speed.json)

    def _healthy(self, w: chipproc.ChipWorker) -> bool:
        o = w.call("autograder.tpu.stage.jobs:health", {})
        if o.status == "result" and (o.result or {}).get("ok"):
            return True
        self.replaced.append(f"a health check between submissions failed ({o.status}: {o.message[:300]})")
        return False

    def _open(self) -> chipproc.ChipWorker:
        if self.worker is not None and self.worker.alive and not self._healthy(self.worker):
            self.close()
        if self.worker is None or not self.worker.alive:
            self.worker, self.next = self.next or chipproc.ChipWorker(self.platform, self.limits), None
            self.info = self.worker.open()
            self.opens.append(round(self.worker.open_s, 2))
            if self.fresh:
                # The next submission's process imports JAX and the stage while this one holds the
                # chip (a second process cannot open the chip meanwhile; it opens once this one ends).
                self.next = chipproc.ChipWorker(self.platform, self.limits)
                self.next.prestart()
        return self.worker

    def stage(self, sub: str, args: dict, on_progress, job: str = "autograder.tpu.stage.jobs:run_stage") -> dict:
        """One submission's stage: its StageResult as JSON, or its halt, hang or error as one."""
        try:
            w = self._open()
        except chipproc.Unavailable as e:
            return _result(sub, "error", f"no chip worker could open the device: {e}"[:3000])
        o = w.call(job, {**args, "submission": sub}, on_progress)
        if self.fresh or o.status != "result":
            if o.status != "result":
                self.replaced.append(f"after {sub}: {o.status}")
            self.close()
        if o.status == "result":
            return o.result
        if o.status == "halt":
            return _result(sub, "chip-halt", f"the chip halted the core: {o.message}"[:3000], o.phase)
        if o.status == "hang" and o.phase.get("phase") == "compile":
            return _result(sub, "chip-hang", f"the TPU compiler did not finish compiling {o.phase.get('kernel', '')} "
                           f"within {self.limits.compile_s:g} s (--compile-timeout): {o.message}"[:3000], o.phase)
        if o.status == "hang":
            return _result(sub, "chip-hang", f"the chip did not answer: {o.message}"[:3000], o.phase)
        return _result(sub, "error", f"the stage failed: {o.message}"[:3000], {**o.phase, "tail": o.tail[-1500:]})

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None

    def end(self) -> None:
        """Close the worker and let the prestarted one go."""
        self.close()
        if self.next is not None:
            self.next.close()
            self.next = None


def _result(sub: str, status: str, message: str, evidence: dict | None = None) -> dict:
    return stage.StageResult(sub, status, message, evidence=dict(evidence or {})).to_json()


class Progress:
    """One line per phase change and every few seconds of calls: which submission, which size, calls so far."""

    def __init__(self, total: int) -> None:
        self.total, self.n, self.last, self.t = total, 0, "", 0.0

    def start(self, label: str) -> None:
        self.n += 1
        self.label, self.t0 = label, time.monotonic()
        print(f"[{self.n}/{self.total}] {label}: starting", file=sys.stderr, flush=True)

    def __call__(self, phase: dict) -> None:
        what = phase.get("phase", "")
        key = f"{what} {phase.get('size') or phase.get('kernel') or ''} {phase.get('what', '')}".strip()
        now = time.monotonic()
        if key == self.last and now - self.t < 5.0:
            return
        self.last, self.t = key, now
        detail = ", ".join(f"{k} {v}" for k, v in phase.items() if k != "phase")
        print(f"[{self.n}/{self.total}] {self.label}: {what} ({detail}) {now - self.t0:.0f} s",
              file=sys.stderr, flush=True)


def _args(a: Assignment, opts: Options, programs: dict[str, str], secret: int, flops: dict,
          sizes: list[stage.Size], solution: dict | None = None) -> dict:
    return {"slug": a.slug, "assignments": str(a.folder.parent.resolve()), "programs": programs,
            "secret": secret, "rule": asdict(opts.rule), "flops": flops, "solution": solution or {},
            "sizes": [asdict(s) for s in sizes], "evidence_dir": str(opts.output / "divergence")}


def _one(chip: Chip, sub, g, common: dict, progress: Progress) -> dict:
    if g is None or not passed_interpreters(g.results) or not g.programs:
        return _result(sub.id, "not-queued", "did not pass every correctness test on the interpreters")
    progress.start(sub.id)
    t0 = time.monotonic()
    res = chip.stage(sub.id, {**common, "programs": g.programs}, progress)
    res["wall_s"] = round(time.monotonic() - t0, 2)
    return res


def stage_all(a: Assignment, opts: Options) -> dict:
    if a.speed is None:
        raise SystemExit(f"pallas-autograder speed: {a.slug} has no [speed] sizes (and no [production])")
    if opts.device == "fake":
        return _fake_stage(a, opts)
    graded, sol, source = _graded(a, opts)
    sizes, notes = timed_sizes(a, opts, sol.programs)
    if opts.device in ("cpu", "gpu"):
        rule = replace(opts.rule, max_calls=min(opts.rule.max_calls, REHEARSAL_CALLS),
                       target_rse=max(opts.rule.target_rse, REHEARSAL_RSE))
        if rule != opts.rule:
            notes.append(f"at most {rule.max_calls} timed calls a size and a {rule.target_rse:.0%} target error "
                         f"(a TPU: {opts.rule.max_calls} and {opts.rule.target_rse:.0%})")
            opts = replace(opts, rule=rule)
    for n in notes:
        print(f"pallas-autograder speed: CPU rehearsal: {n}", file=sys.stderr)
    chip = Chip(opts.device, opts.limits, opts.fresh_process)
    queued = sum(1 for _sub, g in graded if g is not None and passed_interpreters(g.results))
    progress = Progress(queued + 2)
    common = _args(a, opts, {}, secrets.randbits(63), _flops(sol.results), sizes)
    if opts.fresh_process:
        # Each submission's process leaves the run's float64 references for the next (private to this run).
        common["references_dir"] = tempfile.mkdtemp(prefix="pallas-speed-references-")
    t0 = time.monotonic()
    try:
        progress.start("solution")
        first = chip.stage("solution", {**common, "programs": sol.programs}, progress)
        base = baseline.guard(stage.from_json(first))
        _said(first)
        common["solution"] = {s["size"]: s for s in first["sizes"]}
        doc = _document(a, opts, chip, first, notes)
        doc["solution_source"] = asdict(source)
        for sub, g in graded:
            r = _one(chip, sub, g, common, progress)
            r["score"] = tpu_timing.score(a.speed, r, first.get("seconds"))
            doc["results"].append(r)
            _said(r)
            doc["wall_s"] = round(time.monotonic() - t0, 1)
            write(doc, opts.output)      # as it goes: a run stopped half-way keeps what it timed
        progress.start("solution (again)")
        again = chip.stage("solution (again)", {**common, "solution": {}, "programs": sol.programs}, progress)
    finally:
        chip.end()
        if common.get("references_dir"):
            shutil.rmtree(common["references_dir"], ignore_errors=True)
    drift = baseline.drift(base, stage.from_json(again))
    if drift.message():
        print(f"pallas-autograder speed: {drift.message()}", file=sys.stderr)
    doc.update(solution_drift=drift.to_json(), partial=False, wall_s=round(time.monotonic() - t0, 1),
               worker_open_s=chip.opens, workers_replaced=chip.replaced)
    return doc


def _document(a: Assignment, opts: Options, chip: Chip, first: dict, notes: list[str]) -> dict:
    """speed.json as it starts: the device, the rule, the solution's timing; the results come one by one
    (``partial`` until the solution's second timing is done)."""
    note = _chip_note(a, chip.info)
    device = {**chip.info, "label": _label(chip.info), "chip_note": note}
    return {"assignment": a.slug, "chip": chip.info.get("chip"), "spec_chip": a.speed.chip, "chip_note": note,
            "device": device, "rule": asdict(opts.rule), "solution": first, "solution_drift": {}, "results": [],
            "scaled_down": notes, "partial": True, "wall_s": 0.0, "worker_open_s": chip.opens,
            "workers_replaced": chip.replaced,
            "isolation": "one process per submission" if opts.fresh_process else "one worker, replaced after any fault"}


def _said(r: dict) -> None:
    print(f"{r['submission']}: {r['status']}" + (f" {r['seconds'] * 1e3:.4f} ms" if r.get("seconds") else "")
          + (f" ({r['message'][:200]})" if r["status"] in ("chip-halt", "chip-hang", "error") else ""),
          file=sys.stderr)


def _label(info: dict) -> str:
    from .chip.device import DeviceInfo
    known = {k: v for k, v in info.items() if k in DeviceInfo.__dataclass_fields__}
    return DeviceInfo(**known).label if known else ""


def _fake_stage(a: Assignment, opts: Options) -> dict:
    """A dry run with scripted times (no worker: nothing touches a chip)."""
    from ..grading.run.draws import load_reference
    from .chip import interpreter
    from .chip.fake import FakeDevice, Script
    graded, sol, source = _graded(a, opts)
    device = FakeDevice(Script(compute=load_reference(a), times=(1e-2, 1.01e-2, 0.99e-2),
                               profiled=(0.9e-2, 0.91e-2, 0.89e-2)))
    info = device.info()
    ctx = stage.Context(a, device, info, load_reference(a), interpreter.generic, secrets.randbits(63), opts.rule,
                        {}, _flops(sol.results), opts.output / "divergence")
    enc = lambda progs: {k: v.encode("utf-8") for k, v in progs.items()}
    base = baseline.timed(ctx, enc(sol.programs))
    ctx = replace(ctx, solution={s.size: s for s in base.sizes})
    out = []
    for sub, g in graded:
        if g is None or not passed_interpreters(g.results) or not g.programs:
            out.append(_result(sub.id, "not-queued", "did not pass every correctness test on the interpreters"))
        else:
            out.append(stage.run(ctx, sub.id, enc(g.programs)).to_json())
    drift = baseline.drift(base, stage.run(replace(ctx, solution={}), "solution (again)", enc(sol.programs)))
    doc = {"assignment": a.slug, "chip": info.chip, "spec_chip": a.speed.chip, "chip_note": "",
           "device": {**asdict(info), "label": info.label, "chip_note": ""}, "rule": asdict(opts.rule),
           "solution": base.to_json(), "solution_drift": drift.to_json(), "results": out, "scaled_down": [],
           "solution_source": asdict(source)}
    for r in out:
        r["score"] = tpu_timing.score(a.speed, r, doc["solution"]["seconds"])
    return doc


def write(doc: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".speed.json.tmp"
    tmp.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    tmp.replace(out / "speed.json")
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["submission_id", "status", "ms", "score", "holds"])
        for r in doc["results"]:
            sid = str(r["submission"])
            w.writerow(["'" + sid if sid[:1] in "=+-@" else sid, r["status"],
                        f"{r['seconds'] * 1e3:.4f}" if r.get("seconds") else "", r["score"],
                        " | ".join(h.split(":")[0] for h in r.get("holds", []))])


def main(a: Assignment, opts: Options) -> int:
    from ..review.command import needs_review_extra
    from . import merge
    needs_review_extra("speed")
    doc = stage_all(a, opts)
    write(doc, opts.output)
    merge.into_site(a, doc, opts.submissions, opts.review or opts.output / "review")
    timed = sum(r["status"] == "timed" for r in doc["results"])
    held = sum(r["status"] == "held" for r in doc["results"])
    print(f"{timed} timed, {held} held for review, {len(doc['results']) - timed - held} not timed; "
          f"wrote {opts.output / 'speed.json'}")
    return 0


def add_arguments(p) -> None:
    p.add_argument("submissions", type=Path, help="export folder or zip, or a folder of submission folders")
    p.add_argument("--assignment", "-a", required=True, help="assignment slug (see `list`)")
    p.add_argument("-o", "--output", type=Path, required=True, help="where speed.json and grades.csv go")
    p.add_argument("--review", type=Path, help="a review site holding these submissions' gradings (default "
                   "OUT/review, graded here first); made elsewhere, no student code runs on this machine")
    p.add_argument("--device", choices=DEVICES, default="tpu",
                   help="tpu (default); cpu or gpu: the same code on that JAX backend with the generic interpreter "
                   "in Mosaic's place (not a TPU measurement: a rehearsal; CI runs cpu); fake: a dry run with "
                   "scripted times")
    p.add_argument("--jobs", "-j", type=int, help="interpreter gradings at once (see review)")
    limits = chipproc.Limits()
    p.add_argument("--call-timeout", type=float, default=limits.call_s, help="seconds a call on the chip may go "
                   f"silent before the submission is charged a hang and its worker killed (default {limits.call_s:g})")
    p.add_argument("--compile-timeout", type=float, default=limits.compile_s, help="seconds the TPU compiler may "
                   f"take on one program before the submission is charged a hang (default {limits.compile_s:g})")
    p.add_argument("--fresh-process", action="store_true", help="a new chip worker process for every submission "
                   "(about 17 s more each on a v5e, mostly opening and letting go of the chip); by default one worker "
                   "times the class and a fresh one "
                   "replaces it after any submission that halts the chip, hangs or fails")
    p.add_argument("--size-cap", type=int, metavar="ELEMENTS", help="a rehearsal (--device cpu/gpu) times a speed "
                   f"size whose largest array is bigger than this on the check case instead (default {CPU_SIZE_CAP:,}"
                   " on cpu and gpu; none on a TPU); said in the output")
    rule = timing.Rule()
    p.add_argument("--target-rse", type=float, default=rule.target_rse, help="stop timing a size once the "
                   f"relative standard error of the mean is below this (default {rule.target_rse})")
    p.add_argument("--max-seconds", type=float, default=rule.max_total_s, help="timed seconds per size at most "
                   f"(default {rule.max_total_s:g}); a size stopped there above the target error is held as noisy")


def run(args) -> int:
    a = assignments.find(args.assignment, args.assignments)
    if not 0 < args.target_rse < 1 or args.max_seconds <= 0:
        args.parser.error("--target-rse must be in (0, 1) and --max-seconds positive")
    if args.call_timeout <= 0 or (args.size_cap is not None and args.size_cap < 1):
        args.parser.error("--call-timeout and --size-cap must be positive")
    rule = replace(timing.Rule(), target_rse=args.target_rse, max_total_s=args.max_seconds)
    if args.compile_timeout <= 0:
        args.parser.error("--compile-timeout must be positive")
    limits = replace(chipproc.Limits(), call_s=args.call_timeout, compile_s=args.compile_timeout)
    return main(a, Options(args.submissions, args.output, args.review, args.device, rule, args.jobs, limits,
                           args.fresh_process, args.size_cap))
