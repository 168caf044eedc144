"""`pallas-autograder speed SUBMISSIONS -a SLUG -o OUT`: time a class's passing
kernels on a TPU.

The submissions are first graded on the interpreters exactly as `review` does
(into ``--review SITE``, default ``OUT/review``; what that site already holds
is reused, so with a site made on another machine no student code runs here):
each grading keeps the checked programs of its kernel, which this process
rebuilds and compiles. Only submissions whose correctness tests all passed
are queued. The instructor solution is timed in the same run on the same
chip (its programs come from tracing it, the same way). Writes
``OUT/speed.json`` (every result, the device, the rule) and ``OUT/grades.csv``.
"""
from __future__ import annotations

import csv
import json
import re
import secrets
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from .. import spec
from ..feedback import tpu_timing
from ..spec import Assignment
from . import baseline, stage, timing
from .device import Device

CORRECTNESS = re.compile(r"^\d+\.\d+$")      # results.json numbers of correctness tests (case.rung)


DEVICES = ("tpu", "cpu", "gpu", "fake")


@dataclass(frozen=True)
class Options:
    submissions: Path
    output: Path
    review: Path | None = None
    device: str = "tpu"                     # "tpu"; "cpu"/"gpu" (the real code on that JAX backend, the generic
    rule: timing.Rule = timing.Rule()       # interpreter for Mosaic: not a TPU measurement); "fake" (scripted)
    jobs: int | None = None


def open_device(name: str, a: Assignment) -> Device:
    if name in ("tpu", "cpu", "gpu"):
        from .real import JaxDevice
        return JaxDevice(name)
    if name == "fake":
        from ..grading.draws import load_reference
        from .fake import FakeDevice, Script
        return FakeDevice(Script(compute=load_reference(a), times=(1e-2, 1.01e-2, 0.99e-2),
                                 profiled=(0.9e-2, 0.91e-2, 0.89e-2)))
    raise SystemExit(f"--device must be one of {', '.join(DEVICES)}; got {name!r}")


def passed_interpreters(results: dict | None) -> bool:
    """Every correctness test (numbered case.rung) passed in the interpreter stage."""
    tests = [t for t in (results or {}).get("tests", []) if CORRECTNESS.match(str(t.get("number", "")))]
    return bool(tests) and all(t.get("status") == "passed" for t in tests)


def solution_programs(a: Assignment, solution: Path) -> tuple[dict[str, str], dict[str, float]]:
    """The solution's checked programs (traced as a submission's are) and its
    work in flops per size (the roofline floor's)."""
    from ..grading import grade, plan as planning
    plan = planning.speed_plan(a)
    report = grade.grade(a, solution, grade.GradeOptions(keep_programs=True), plan=plan)
    flops = {s.size: s.estimate.flops for s in (report.speed.sizes if report.speed else ()) if s.estimate}
    return report.programs, flops


def _context(a: Assignment, device: Device, opts: Options, flops: dict[str, float]) -> stage.Context:
    from ..grading.draws import load_reference
    from . import interpreter
    info = device.info()
    if info is None:
        hint = (" Run it on a Cloud TPU VM, with JAX's TPU backend installed by `.venv/bin/pip install "
                "'.[tpu]'` in your pallas-autograder checkout there (after ./setup.sh); --device cpu runs the same "
                "code on JAX's CPU backend (not a TPU measurement), --device fake a dry run with scripted times."
                if opts.device == "tpu" else "")
        raise SystemExit(f"pallas-autograder speed: {device.absent()}.{hint}")
    return stage.Context(a, device, info, load_reference(a), interpreter.generic,
                         secrets.randbits(63), opts.rule, {}, flops, opts.output / "divergence")


def _graded(a: Assignment, opts: Options) -> list:
    """(submission, stored grading) for every submission. On a TPU host nothing
    is graded here (student code never runs where the timing runs): every
    submission's grading must be in the review site, made by `review` on a CPU
    machine; elsewhere the missing ones are graded first."""
    from ..review import command as review
    site = opts.review or opts.output / "review"
    if opts.device != "tpu":
        review.regrade(a, review.Options(opts.submissions, site, jobs=opts.jobs))
    graded = review.stored(a, opts.submissions, site)
    missing = [sub.id for sub, g in graded if g is None]
    if missing:
        raise SystemExit(
            f"pallas-autograder speed: {len(missing)} of {len(graded)} submissions have no grading in {site} for "
            f"this grader and assignment (the site's gradings are keyed by both: any change to a grader file or to "
            f"the assignment misses them), e.g. {', '.join(missing[:3])}. The TPU host grades nothing itself: run "
            f"`pallas-autograder review SUBMISSIONS -a {a.slug} -o SITE` on a CPU machine with this same grader "
            "and assignment, copy SITE here, and pass it with --review.")
    return graded


def _chip_note(a: Assignment, info) -> str:
    """Said when the chip that measures is not the one the spec names."""
    if info.kind != "tpu" or info.chip == a.speed.chip:
        return ""
    note = (f"measured on a TPU {info.chip} ({info.device_kind}), but the assignment's [speed] chip is "
            f"{a.speed.chip}: results are labelled with the chip that measured them")
    print(f"pallas-autograder speed: {note}", file=sys.stderr)
    return note


def _one(ctx: stage.Context, sub, g) -> stage.StageResult:
    if g is None or not passed_interpreters(g.results) or not g.programs:
        return stage.StageResult(sub.id, "not-queued", "did not pass every correctness test on the interpreters")
    try:
        return stage.run(ctx, sub.id, {k: v.encode("utf-8") for k, v in g.programs.items()})
    except Exception as e:  # noqa: BLE001 - one kernel's failure never stops the class
        return stage.StageResult(sub.id, "error", f"{type(e).__name__}: {e}"[:2000])


def stage_all(a: Assignment, opts: Options, solution: Path) -> dict:
    if a.speed is None:
        raise SystemExit(f"pallas-autograder speed: {a.slug} has no [speed] sizes (and no [production])")
    graded = _graded(a, opts)
    device = open_device(opts.device, a)
    sol_programs, flops = solution_programs(a, solution)
    ctx = _context(a, device, opts, flops)
    note = _chip_note(a, ctx.info)
    programs = {k: v.encode("utf-8") for k, v in sol_programs.items()}
    sol = baseline.timed(ctx, programs)
    ctx = replace(ctx, solution={s.size: s for s in sol.sizes})
    out = []
    for sub, g in graded:
        res = _one(ctx, sub, g)
        out.append(res.to_json())
        print(f"{sub.id}: {res.status}" + (f" {res.seconds * 1e3:.4f} ms" if res.seconds else ""), file=sys.stderr)
    drift = baseline.drift(sol, stage.run(replace(ctx, solution={}), "solution (again)", programs))
    if drift.message():
        print(f"pallas-autograder speed: {drift.message()}", file=sys.stderr)
    doc = {"assignment": a.slug, "chip": ctx.info.chip, "spec_chip": a.speed.chip, "chip_note": note,
           "device": {**asdict(ctx.info), "label": ctx.info.label, "chip_note": note}, "rule": asdict(opts.rule),
           "solution": sol.to_json(), "solution_drift": drift.to_json(), "results": out}
    for r in out:
        r["score"] = tpu_timing.score(a.speed, r, doc["solution"]["seconds"])
    return doc


def write(doc: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "speed.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["submission_id", "status", "ms", "score", "holds"])
        for r in doc["results"]:
            sid = str(r["submission"])
            w.writerow(["'" + sid if sid[:1] in "=+-@" else sid, r["status"],
                        f"{r['seconds'] * 1e3:.4f}" if r.get("seconds") else "", r["score"],
                        " | ".join(h.split(":")[0] for h in r.get("holds", []))])


def main(a: Assignment, opts: Options, solution: Path) -> int:
    from ..review.command import needs_review_extra
    from . import merge
    needs_review_extra("speed")
    doc = stage_all(a, opts, solution)
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
    p.add_argument("--solution", type=Path, help="the instructor solution (default solutions/SLUG.py)")
    p.add_argument("--jobs", "-j", type=int, help="interpreter gradings at once (see review)")
    rule = timing.Rule()
    p.add_argument("--target-rse", type=float, default=rule.target_rse, help="stop timing a size once the "
                   f"relative standard error of the mean is below this (default {rule.target_rse})")
    p.add_argument("--max-seconds", type=float, default=rule.max_total_s, help="timed seconds per size at most "
                   f"(default {rule.max_total_s:g}); a size stopped there above the target error is held as noisy")


def run(args) -> int:
    a = spec.find(args.assignment, args.assignments)
    if not 0 < args.target_rse < 1 or args.max_seconds <= 0:
        args.parser.error("--target-rse must be in (0, 1) and --max-seconds positive")
    rule = replace(timing.Rule(), target_rse=args.target_rse, max_total_s=args.max_seconds)
    return main(a, Options(args.submissions, args.output, args.review, args.device, rule, jobs=args.jobs),
                args.solution or a.solution)
