"""The `grade` verb: one submission through every rung, to a scored report.

Data flows one way: submission -> plan (every run, typed) -> child process
(runs them one at a time) -> outcomes keyed by run -> parent (references,
comparison, diagnosis, probe judges) -> findings -> scored tests. This module
imports no JAX; the reference is float64 numpy run here, in the parent.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..isolation import confinement, sandbox
from ..isolation.outcome import Outcome
from ..spec import Assignment, Case
from ..speed import grade as speed_grade
from . import (
    calibration,
    custom_checks,
    diagnosis,
    execution,
    fingerprint,
    plan as planning,
    probes,
    scoring,
    submission,
    tracing,
)
from .draws import DrawStore, load_reference
from .findings import Finding
from .plan import Plan, Run
from .schedule import Schedule


@dataclass(frozen=True)
class GradeOptions:
    cases: tuple[str, ...] = ()         # empty: every case
    rungs: tuple[str, ...] = ()         # empty: the spec's rungs
    case_timeout_s: float | None = None  # one limit for every run (overrides the calibration)
    startup_timeout_s: float | None = None
    run_key: int | None = None          # None: a fresh secret key (replay one with --run-key)
    use_calibration: bool = True        # False: every run gets the spec's ceiling (calibrate does)
    keep_programs: bool = False         # keep the checked programs the TPU stage needs (Report.programs)
    # Told what is being run ("small · TPU interpret mode", done, total): the CLI's progress line.
    progress: Callable[[str, int, int], None] | None = field(default=None, compare=False)


@dataclass
class Report:
    assignment: Assignment
    submission: str
    plan: Plan
    tests: list[scoring.TestResult]
    findings: list[Finding]
    uploaded_as: str | None
    seconds: float
    jax_version: str | None = None
    children: int = 0
    peak_child_rss_mb: float = 0.0
    student_output: str = ""
    notes: list[str] = field(default_factory=list)   # said once, at the top of the feedback
    output_bytes: int = 0
    leftovers_killed: int = 0
    student_uid: int | None = None     # the uid student code ran as (staff data)
    outcomes: dict[Run, Outcome] = field(default_factory=dict)   # for benchmarks and calibration
    startup_s: float = 0.0
    custom: custom_checks.CheckSuite | None = None   # the instructor's checks (``[checks]``)
    fingerprint: str = ""              # the first traced signature's structure (TA review)
    speed: speed_grade.SpeedGrade | None = None   # the TPU time estimate ([speed])
    programs: dict[str, str] = field(default_factory=dict)  # speed size -> its checked program (kept)

    @property
    def run_key(self) -> int:
        return self.plan.run_key

    @property
    def score(self) -> float:
        return sum(t.score for t in self.tests) + (self.custom.score if self.custom else 0.0) + \
            (self.speed.score if self.speed else 0.0)

    @property
    def max_score(self) -> float:
        return sum(t.max_score for t in self.tests) + (self.custom.max_score if self.custom else 0.0) + \
            (self.speed.max_score if self.speed else 0.0)

    @property
    def wide_findings(self) -> list[Finding]:
        return [f for f in self.findings if f.case is None]

    def seconds_by_check(self) -> dict[str, float]:
        """Child time spent per check ("correctness" for the tests), runs that
        really ran only: where a grading's time goes (staff data)."""
        out: dict[str, float] = {}
        for run, outcome in self.outcomes.items():
            if outcome.ran:
                key = run.probe or "correctness"
                out[key] = round(out.get(key, 0.0) + outcome.seconds, 3)
        return out


def select(assignment: Assignment, options: GradeOptions) -> tuple[tuple[Case, ...], tuple[str, ...]]:
    for name in options.cases:
        assignment.case(name)  # KeyError names the unknown case
    cases = tuple(c for c in assignment.cases if not options.cases or c.name in options.cases)
    for rung in options.rungs:
        if rung not in assignment.rungs:
            raise KeyError(rung)
    rungs = tuple(r for r in assignment.rungs if not options.rungs or r in options.rungs)
    return cases, rungs


def make_plan(assignment: Assignment, options: GradeOptions, timing: calibration.Timing) -> Plan:
    """The grading's runs. A local, selective run (--case/--rung) grades correctness only."""
    cases, rungs = select(assignment, options)
    run_key = options.run_key if options.run_key is not None else secrets.randbits(32)
    return planning.build(assignment, cases, rungs, run_key,
                          with_probes=not (options.cases or options.rungs), limit=timing.limit)


def grade(assignment: Assignment, submission_path: Path, options: GradeOptions = GradeOptions(),
          plan: Plan | None = None) -> Report:
    """``plan``: run these runs instead of the grading's own (`estimate` runs one analysis)."""
    with confinement.student_slot() as slot:
        confinement.make_reachable(slot.student)
        confinement.make_reachable(slot.grader)
        report = _grade_as(slot, assignment, submission_path, options, plan)
        report.student_uid = slot.student.uid
        return report


def _timing(assignment: Assignment, options: GradeOptions) -> calibration.Timing:
    cal = calibration.load(assignment) if options.use_calibration else None
    return calibration.Timing(assignment, cal, options.case_timeout_s)


def _grade_as(slot: confinement.Slot, assignment: Assignment, submission_path: Path,
              options: GradeOptions, plan: Plan | None = None) -> Report:
    t0 = time.monotonic()
    # The children run in their own working directories: a relative path would not resolve there.
    submission_path = Path(submission_path).absolute()
    timing = _timing(assignment, options)
    plan = plan or make_plan(assignment, options, timing)
    confinement.guard_grader()
    notes = [slot.student.note] if slot.student.note else []
    workdir = Path(tempfile.mkdtemp(prefix="pallas-grade-"))
    os.chmod(workdir, 0o711)    # the children may enter, not list
    try:
        loc, skipped = submission.prepare(submission_path, assignment.entry_file, workdir)
        if skipped:
            notes.append("Not copied from your upload: " + "; ".join(skipped[:10])
                         + (f"; and {len(skipped) - 10} more" if len(skipped) > 10 else "") + ".")
        if isinstance(loc, submission.Located) and loc.note:
            notes.append(loc.note[0].upper() + loc.note[1:] + ".")
        problem = loc if isinstance(loc, Finding) else submission.check_source(loc)
        if problem is not None:
            return _report(plan, submission_path, [problem], [], None if problem is loc else loc, t0,
                           notes)
        return _execute(slot, plan, submission_path, loc, workdir, timing, options, t0, notes)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        confinement.remove_files_of(slot.student)
        confinement.remove_files_of(slot.grader)


def _specs(slot: confinement.Slot, plan: Plan, loc: submission.Located, workdir: Path,
           startup_s: float) -> tuple[sandbox.ChildSpec, sandbox.ChildSpec]:
    """The tracer (the student's code, as the student user) and the grader's
    child (rebuilt programs, as a user of its own), and their folders."""
    a = plan.assignment
    for folder in ("submission", "unzipped", "notebook"):
        confinement.readable_by_all(workdir / folder)
    for name, who in (("traces", slot.student), ("in", slot.grader), ("out", slot.grader)):
        confinement.give_to(workdir / name, who)
    (workdir / "programs").mkdir(mode=0o755)
    tracer = sandbox.ChildSpec(
        "autograder.children.tracer", {"module_file": str(loc.module_file), "module_dir": str(loc.module_dir),
                              "module_name": Path(a.entry_file).stem, "function": a.entry_function,
                              "arity": len(a.inputs), "out_dir": str(workdir / "traces")},
        slot.student, workdir / "home", (workdir / "home", workdir / "traces"), startup_s,
        a.limits.memory_mb)
    child = sandbox.ChildSpec(
        "autograder.children.grader", {"out_dir": str(workdir / "out"), "programs": str(workdir / "programs")},
        slot.grader, workdir / "ghome", (workdir / "ghome", workdir / "out"), max(startup_s, 60.0),
        a.limits.memory_mb)
    return tracer, child


def _execute(slot: confinement.Slot, plan: Plan, submission_path: Path, loc: submission.Located,
             workdir: Path, timing: calibration.Timing, options: GradeOptions, t0: float,
             notes: list[str]) -> Report:
    a = plan.assignment
    deadline = t0 + a.limits.total_s
    tracer, child = _specs(slot, plan, loc, workdir, options.startup_timeout_s or timing.startup())
    store = DrawStore(a, load_reference(a), workdir / "in")
    schedule = Schedule(plan, child_inputs=lambda run: store.files(run.draw),
                        expected_shape=lambda run: a.output_shape(run.draw.case),
                        limit_after_trace=timing.after_trace, settle=probes.settle)
    shown = sandbox.Tail()
    traces, stats = tracing.trace_all(plan, tracer, store.abstract, workdir / "programs", deadline, shown,
                                      timing.trace_limit(), options.progress)
    custom = None
    if not any(s.load_error or s.tampered for s in stats):
        checks_folder = _checks_folder(plan, workdir)
        child_stats, custom = execution.run_all(schedule, traces, child, deadline, shown, options.progress,
                                                checks_folder)
        stats.append(child_stats)
    for run in schedule.pending():
        load_error = any(s.load_error for s in stats)
        schedule.record(run, Outcome("load-error" if load_error else "skipped",
                                     reason="" if load_error else "budget"))
    ex = execution.Execution.of(dict(schedule.outcomes), stats, shown, custom)
    findings, check_notes = _diagnose(plan, ex, store, loc)
    report = _report(plan, submission_path, findings, check_notes, loc, t0, notes)
    report.jax_version, report.children = ex.jax_version, ex.children
    report.peak_child_rss_mb, report.student_output = ex.peak_rss_mb, ex.stdout_tail.strip()
    report.output_bytes, report.leftovers_killed = ex.output_bytes, ex.leftovers_killed
    report.outcomes, report.startup_s = ex.outcomes, ex.startup_s
    report.custom = ex.custom
    report.fingerprint = _fingerprint(traces)
    report.speed = _speed(plan, report, timing.solution_speed)
    report.programs = _kept_programs(plan, traces, options)
    return report


def _speed(plan: Plan, report: Report, solution: dict) -> speed_grade.SpeedGrade | None:
    passed = all(t.passed for t in report.tests if t.probe is None)
    g = speed_grade.grade(plan, report.outcomes, solution, passed)
    if g is not None and g.max_score == 0 and all(s.estimate is None for s in g.sizes):
        return None     # unscored and nothing to show (nothing traced): no section
    return g


def _kept_programs(plan: Plan, traces: dict, options: GradeOptions) -> dict[str, str]:
    """The checked programs of the speed sizes and of the first correctness case:
    what the TPU stage rebuilds, so student code never runs where it times."""
    if not options.keep_programs:
        return {}
    wanted = {r.variant: r.draw.signature for r in plan.speed_runs()}
    first = plan.correctness()[0] if plan.correctness() else None
    if first is not None:
        wanted["check:" + first.case.name] = first.draw.signature
    out = {}
    for name, sig in wanted.items():
        t = traces.get(sig)
        if t is not None and t.program is not None:
            out[name] = t.program.read_text(encoding="utf-8")
    return out


def _fingerprint(traces: dict) -> str:
    """The structure of the first signature that traced (TA review groups by it):
    one program read back, the checked document the parent wrote itself."""
    first = next((t.program for _sig, t in sorted(traces.items()) if t.program is not None), None)
    return fingerprint.of(json.loads(first.read_text(encoding="utf-8"))) if first is not None else ""


def _checks_folder(plan: Plan, workdir: Path) -> str | None:
    """The assignment's Python files (the checks and what they import), where
    only the grader's child can read them: never beside student code."""
    if plan.checks is None:
        return None
    folder = workdir / "in" / "checks"
    folder.mkdir(mode=0o755)
    for path in sorted(plan.assignment.folder.glob("*.py")):
        shutil.copyfile(path, folder / path.name)
        (folder / path.name).chmod(0o644)
    return str(folder)


def _diagnose(plan: Plan, ex: execution.Execution, store: DrawStore,
              loc: submission.Located) -> tuple[list[Finding], list]:
    findings: list[Finding] = []
    if ex.tampered:
        findings.append(Finding.make(
            "submission-error", "static", f"the grader's channel was tampered with: {ex.tampered}",
            check="submission", problem="channel-tampered", detail=ex.tampered))
    elif ex.load_error is not None:
        findings.append(diagnosis.from_load_error(ex.load_error, loc, plan.assignment))
    probe_findings, notes = probes.judge(plan, ex.outcomes, store)
    findings += probe_findings
    for run in plan.correctness():
        outcome = ex.outcomes.get(run, Outcome("skipped", reason="budget"))
        reference = store[run.draw] if outcome.output is not None else None
        f = diagnosis.from_outcome(plan.assignment, run, outcome, reference, loc)
        if f is not None:
            findings.append(f)
    starter = diagnosis.starter_untouched(findings, plan.assignment, loc)
    if starter is not None:
        findings = [starter] + [f for f in findings if f.check != "correctness"]
    return findings, notes


def _report(plan: Plan, submission_path, findings: list[Finding], check_notes, loc, t0: float,
            notes: list[str]) -> Report:
    tests = scoring.score(plan, findings, check_notes)
    return Report(plan.assignment, str(submission_path), plan, tests, findings,
                  loc.uploaded_as if loc else None, time.monotonic() - t0, notes=list(notes))
