"""Grading one submission: through every rung, to a scored report.

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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from ..children import GRADER, TRACER
from ..findings import TEST_RUNGS, CheckNote, Finding
from ..isolation import confinement, sandbox
from ..isolation.outcome import Outcome
from ..spec import Assignment, Case
from ..speed import grade as speed_grade
from . import evidence, probes
from .identity import sources
from .judge import causes, diagnosis, faces, scoring, secrecy, unconfirmed
from .judge.compare import compare
from .probes import unwritten
from .probes.static import uncovered, unread_inputs
from .report import Report
from .run import calibration, execution, plan as planning, submission, tracing
from .run.draws import DrawStore, load_reference
from .run.plan import Plan, Run
from .run.schedule import Schedule


class UnknownSelection(KeyError):
    """A --case or --rung the assignment does not have (names it)."""


@dataclass(frozen=True)
class Selection:
    """What one grading grades: every case and rung, or (a local --case/--rung
    run: a replay) some of them, with every check that runs on them."""
    cases: tuple[Case, ...]
    rungs: tuple[str, ...]
    partial: bool = False


def select(assignment: Assignment, cases: tuple[str, ...] = (), rungs: tuple[str, ...] = ()) -> Selection:
    """The cases and rungs named (all when none is); an unknown name raises UnknownSelection."""
    known = {c.name for c in assignment.cases}
    for name in (*[c for c in cases if c not in known], *[r for r in rungs if r not in assignment.rungs]):
        raise UnknownSelection(name)
    return Selection(tuple(c for c in assignment.cases if not cases or c.name in cases),
                     tuple(r for r in assignment.rungs if not rungs or r in rungs), bool(cases or rungs))


@dataclass(frozen=True)
class GradeOptions:
    selection: Selection | None = None  # None: every case, rung and probe
    case_timeout_s: float | None = None  # one limit for every run (overrides the calibration)
    startup_timeout_s: float | None = None
    run_key: int | None = None          # None: a fresh secret key (replay one with --run-key)
    use_calibration: bool = True        # False: every run gets the spec's ceiling (calibrate does)
    keep_programs: bool = False         # keep the checked programs the TPU stage needs (Report.programs)
    # Told what is being run ("small · TPU interpret mode", done, total): the CLI's progress line.
    progress: Callable[[str, int, int], None] | None = field(default=None, compare=False)


def make_plan(assignment: Assignment, options: GradeOptions, timing: calibration.Timing) -> Plan:
    """The grading's runs. A local, selective run (--case/--rung) replays those
    tests with every check that runs on their cases (what explains them), without
    the speed estimate or the instructor's checks."""
    sel = options.selection or select(assignment)
    run_key = options.run_key if options.run_key is not None else secrets.randbits(32)
    return planning.build(assignment, sel.cases, sel.rungs, run_key, planners=probes.PLANNERS,
                          limit=timing.limit, replay=sel.partial)


def _replay_note(plan: Plan) -> str:
    tests = ", ".join(plan.test_number(c, r) for c in plan.cases for r in plan.rungs)
    cases = ", ".join(c.name for c in plan.cases)
    return (f"A replay of test{'s' if ',' in tests else ''} {tests} only, with the checks that run on {cases} "
            "(numbered as the whole grading numbers them): the other tests, the speed estimate and any instructor "
            "checks are left out." + (" A check that needs more than this replay runs says it was not run in full, "
                                      "and its points are not counted either way." if plan.partial else ""))


def grade(assignment: Assignment, submission_path: Path, options: GradeOptions = GradeOptions(),
          plan: Plan | None = None) -> Report:
    """``plan``: run these runs instead of the grading's own (`estimate` runs one analysis)."""
    with confinement.student_slot() as slot:
        confinement.make_reachable(slot.student)
        confinement.make_reachable(slot.grader)
        return _grade_as(slot, assignment, submission_path, options, plan)


def _timing(assignment: Assignment, options: GradeOptions) -> calibration.Timing:
    cal = calibration.load(assignment) if options.use_calibration else None
    return calibration.Timing(assignment, cal, options.case_timeout_s)


@dataclass(frozen=True)
class _Start:
    """What every report of this grading shares, known before anything runs."""
    plan: Plan
    submission: Path
    t0: float
    student_uid: int
    notes: tuple[str, ...]


def _grade_as(slot: confinement.Slot, assignment: Assignment, submission_path: Path,
              options: GradeOptions, plan: Plan | None = None) -> Report:
    t0 = time.monotonic()
    # The children run in their own working directories: a relative path would not resolve there.
    submission_path = Path(submission_path).absolute()
    timing = _timing(assignment, options)
    plan = plan or make_plan(assignment, options, timing)
    confinement.guard_grader()
    notes = [slot.student.note] if slot.student.note else []
    if options.selection is not None and options.selection.partial:
        notes.append(_replay_note(plan))
    workdir = Path(tempfile.mkdtemp(prefix="pallas-grade-"))
    os.chmod(workdir, 0o711)    # the children may enter, not list
    try:
        loc, skipped = submission.prepare(submission_path, assignment.entry_file, workdir)
        if skipped:
            notes.append("Not copied from your upload: " + "; ".join(skipped[:10])
                         + (f"; and {len(skipped) - 10} more" if len(skipped) > 10 else "") + ".")
        if isinstance(loc, submission.Located) and loc.note:
            notes.append(loc.note[0].upper() + loc.note[1:] + ".")
        start = _Start(plan, submission_path, t0, slot.student.uid, tuple(notes))
        problem = loc if isinstance(loc, Finding) else submission.check_source(loc)
        if problem is not None:
            return _report(start, [problem], [], None if problem is loc else loc)
        return _execute(slot, start, loc, workdir, timing, options)
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
        TRACER, {"module_file": str(loc.module_file), "module_dir": str(loc.module_dir),
                              "module_name": Path(a.entry_file).stem, "function": a.entry_function,
                              "arity": len(a.inputs), "out_dir": str(workdir / "traces")},
        slot.student, workdir / "home", (workdir / "home", workdir / "traces"), startup_s,
        a.limits.memory_mb)
    child = sandbox.ChildSpec(
        GRADER, {"out_dir": str(workdir / "out"), "programs": str(workdir / "programs")},
        slot.grader, workdir / "ghome", (workdir / "ghome", workdir / "out"), max(startup_s, 60.0),
        a.limits.memory_mb)
    return tracer, child


def _execute(slot: confinement.Slot, start: _Start, loc: submission.Located, workdir: Path,
             timing: calibration.Timing, options: GradeOptions) -> Report:
    plan = start.plan
    a = plan.assignment
    deadline = start.t0 + a.limits.total_s
    tracer, child = _specs(slot, plan, loc, workdir, options.startup_timeout_s or timing.startup())
    store = DrawStore(a, load_reference(a), workdir / "in")
    schedule = Schedule(plan, child_inputs=lambda run: store.files(run.draw),
                        expected_shape=lambda run: a.output_shape(run.draw.case),
                        limit_after_trace=timing.after_trace, settle=probes.settle,
                        test_failed=lambda run, o: _wrong(a, run, o, store[run.draw]))
    shown = sandbox.Tail()
    traces, stats = tracing.trace_all(plan, tracer, store.abstract, workdir / "programs", deadline, shown,
                                      timing.trace_limit(), options.progress)
    custom, child_stats = None, None
    if not any(s.load_error or s.tampered for s in stats):
        checks_folder = _checks_folder(plan, workdir)
        child_stats, custom = execution.run_all(schedule, traces, child, deadline, shown, options.progress,
                                                checks_folder)
        stats.append(child_stats)
    for run in schedule.pending():
        load_error = any(s.load_error for s in stats)
        schedule.record(run, Outcome("load-error" if load_error else "skipped",
                                     reason="" if load_error else "budget"))
    ex = execution.Execution.of(dict(schedule.outcomes), stats, shown, custom, child_stats)
    kernels = faces.of(plan, {sig: t.program for sig, t in traces.items() if t.program is not None})
    found = _sources(plan, traces, loc)
    findings, check_notes = _diagnose(plan, ex, store, loc, kernels, found)
    start = replace(start, notes=start.notes + _rung_notes(plan, planning.scans(plan, ex.outcomes)))
    return _report(start, findings, check_notes, loc, ex, traces, timing.solution_speed,
                   options.keep_programs, kernels, found)


def _rung_notes(plan: Plan, scans: dict) -> tuple[str, ...]:
    """What an interpreter could not run as written, and how the grader ran it
    instead (``rewrites.parallel_as_prefix``): it costs nothing, and the feedback says
    so. Axes are named from a visible case's kernel only (secret ones show no facts)."""
    later: dict[str, tuple[int, ...]] = {}
    for case in plan.cases:
        for call in getattr(scans.get(case.name), "calls", ()):
            sem = call.dimension_semantics
            first = next((i for i, ds in enumerate(sem) if ds != "parallel"), len(sem))
            axes = tuple(i for i in range(first, len(sem)) if sem[i] == "parallel")
            if axes:
                later.setdefault("visible" if case.visible else "secret", axes)
    if not later:
        return ()
    axes = later.get("visible")
    which = (f"grid axis {', '.join(map(str, axes))}" if axes else "those axes")
    return ("TPU interpret mode cannot run these dimension semantics as written: it refuses a \"parallel\" "
            "grid axis after an \"arbitrary\" one (\"Dimensions with parallel semantics must form a prefix of "
            "the grid\"), which the TPU compiler accepts (a TPU v5e runs it right). So its tests and the checks "
            f"that run there ran {which} as \"arbitrary\": in order, on one core, as a one-core TPU runs the "
            "grid; how the result depends on their order across cores was not checked. This costs nothing.",)


def _wrong(a: Assignment, run: Run, outcome: Outcome, ref) -> bool:
    """A correctness run's output is wrong (the test fails on its values; ``ref``
    the float64 reference of its draw)."""
    if outcome.output is None or outcome.output.shape != ref.shape:
        return False
    return not compare(outcome.output, ref, a.tolerance(run.case), a.reduction_length(run.case),
                       a.numerics_bound).ok


def _withheld(plan: Plan, run: Run, outcomes: dict[Run, Outcome], kernels: faces.Faces | None) -> str:
    """Why a speed size's estimate is no figure of the graded kernel ("" when it
    is): its program is not vouched for by a graded one, or its grid and blocks
    do not cover the arrays there, or its blocks overflow VMEM there."""
    vouch = kernels.vouch(run.draw.signature) if kernels is not None else None
    if vouch is not None and vouch.estimate:
        return vouch.estimate + ": no estimate of it is an estimate of yours"
    checks = plan.speed_checks(run.variant)
    facts = {k: outcomes[r].facts for k, r in checks.items() if r in outcomes and outcomes[r].ok}
    hole = uncovered(facts.get("index-maps"))
    if hole is not None:
        return f"at this size {hole[1]}: the kernel does not cover its arrays there"
    unread = unread_inputs(facts.get("index-maps"), _graded_scans(outcomes))
    if unread:
        return (f"at this size the grid never reads {unread}, which the graded kernel reads in full at every "
                "graded size: the estimate would count less work than the graded kernel does")
    budget, estimate = facts.get("vmem"), outcomes.get(run)
    prod = plan.assignment.production
    limit = prod.vmem_limit_bytes if prod is not None else (
        estimate.facts.chip.vmem_bytes if estimate is not None and estimate.ok and estimate.facts else 0)
    if budget is not None and limit and budget.bytes > limit:
        return (f"at this size its blocks and scratch need {budget.bytes / 2 ** 20:.1f} MiB of VMEM, more "
                f"than the {limit / 2 ** 20:.0f} MiB the chip gives a kernel")
    return ""


def _graded_scans(outcomes: dict[Run, Outcome]) -> list:
    """The index-map scans of the graded cases (their own sizes, their own programs)."""
    return [o.facts for r, o in outcomes.items() if r.analysis == "index-maps" and not r.draw.abstract
            and r.stress is None and o.ok and o.facts is not None]


def _speed(plan: Plan, outcomes: dict[Run, Outcome], tests: list[scoring.TestResult],
           solution: dict, kernels: faces.Faces | None) -> speed_grade.SpeedGrade | None:
    passed = all(t.passed for t in tests if t.probe is None)
    order = {d.name: i for i, d in enumerate(plan.assignment.dims)}     # (shown in the handout's order)
    runs = tuple(speed_grade.SizeRun(r.variant, tuple(sorted(r.draw.case.dims, key=lambda d: order.get(d[0], 99))),
                                     r.draw.case.dtype, outcomes.get(r),
                                     _withheld(plan, r, outcomes, kernels))
                 for r in plan.speed_runs())
    g = speed_grade.grade(plan.assignment.speed, runs, solution, passed)
    if g is not None and g.max_score == 0 and not any(s.traced for s in g.sizes):
        return None     # unscored and nothing to show (nothing traced): no section; a traced kernel
        # the model cannot estimate (or another kernel than the graded one) keeps it, to say why
    return g


def _kept_programs(plan: Plan, traces: dict) -> dict[str, str]:
    """The checked programs of the speed sizes and of the first correctness case:
    what the TPU stage rebuilds, so student code never runs where it times."""
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


def _sources(plan: Plan, traces: dict, loc: submission.Located | None) -> sources.Sources:
    """Where the graded program's parts are in the student's files (the first
    correctness case's program: every test grades the same kernel, or says it does
    not); the module's own lines whatever traced (a trace that hung names one)."""
    if loc is None:
        return sources.Sources()

    def where(file: str, line: int) -> str:
        return loc.where(line) if file == loc.module_file.name else f"{file}:{line}"
    try:
        text = loc.module_file.read_text(encoding="utf-8", errors="replace")[:submission.MAX_SOURCE_BYTES]
    except OSError:
        text = ""
    first = plan.correctness()[0] if plan.correctness() else None
    doc = _document(traces.get(first.draw.signature) if first is not None else None)
    try:
        found = sources.of_program(doc, where, text, loc.module_file.name, first.case.name if doc else "")
        # A 16-bit product shows in a 16-bit case's program only (the first case may be float32).
        others = {r.draw.signature for r in plan.correctness()} - {first.draw.signature}
        return sources.with_narrow_dots(found, [sources.of_program(_document(traces.get(sig)), where, text,
                                                                   loc.module_file.name) for sig in others])
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        # A program the faces already read; nothing to name is no failure.
        return sources.of_program({}, where, text, loc.module_file.name)


def _document(trace) -> dict:
    if trace is None or trace.program is None:
        return {}
    try:
        return json.loads(trace.program.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


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


def _diagnose(plan: Plan, ex: execution.Execution, store: DrawStore, loc: submission.Located,
              kernels: faces.Faces, found: sources.Sources | None = None) -> tuple[list[Finding], list]:
    findings: list[Finding] = []
    if ex.tampered:
        findings.append(Finding.make(
            "submission-error", "static", f"the grader's channel was tampered with: {ex.tampered}",
            check="submission", problem="channel-tampered", detail=ex.tampered))
    elif ex.load_error is not None:
        findings.append(diagnosis.from_load_error(ex.load_error, loc, plan.assignment))
    probe_findings, notes = probes.judge(plan, ex.outcomes, store, kernels)
    findings += probe_findings
    scans = planning.scans(plan, ex.outcomes)
    unread: dict[str, dict] = {}
    for run in plan.correctness():
        outcome = ex.outcomes.get(run, Outcome("skipped", reason="budget"))
        reference = store[run.draw] if outcome.output is not None else None
        f = diagnosis.from_outcome(plan.assignment, run, outcome, reference, loc, scans.get(run.case.name))
        if f is not None and f.id == "wrong-result" and f.check == "correctness" and run.case.visible:
            one = found.kernels[0] if found is not None and len(found.kernels) == 1 else None
            f = evidence.with_reads(plan.assignment, run, f, outcome, store, scans.get(run.case.name), unread, one)
            f = evidence.with_altered(plan, run, f, outcome, ex.outcomes, store)
        if f is not None:
            findings.append(f)
        if f is not None and f.id in ("numerics", "wrong-result"):
            # The wrong output may be memory the kernel never wrote: said from this
            # test's own case (its fill reruns, its blocks), the root cause beside the symptom.
            cause = unwritten.explain(plan, run, outcome, reference, ex.outcomes, scans.get(run.case.name))
            if cause is not None and cause.id == "wrong-result":
                # A logic error whose NaN the padding put there: "numerics" would say
                # overflow; the same comparison's evidence, as the logic error it is.
                message = f"{f.message}; {cause.message}" if f.id == "numerics" else f.message
                findings[-1] = replace(f.with_facts(padding_read=True), id="wrong-result", message=message)
            elif cause is not None:
                findings.append(cause)
    findings = unwritten.same_padding(findings)
    # NaN or Inf that only larger inputs bring: an overflow, whatever the finite outputs say.
    findings = diagnosis.overflows(plan, findings)
    # One wrong formula is one finding on every case it breaks, whatever each case's error size.
    findings = causes.one_cause(plan, findings, kernels)
    # One length from the wrong dimension: past the end on one case, short on another.
    findings = causes.one_length(plan, findings)
    # One index map with crossed axes: past the end on one case, the wrong blocks on another.
    findings = causes.one_map(plan, findings)
    if found is not None and len(found.kernels) == 1:      # (a sweep scores only: no problems to tie)
        # A prefetch into the slot in use: the race and the memory never filled are one bug.
        findings = causes.one_race(findings, frozenset(p.where for p in found.kernels[0].stores))
    starter = diagnosis.starter_untouched(findings, plan.assignment, loc)
    if starter is not None:
        findings = [starter] + [f for f in findings if f.check != "correctness"]
    # What the index-map scan claims about a run, no run on that case confirms: a note.
    findings, claims = unconfirmed.settle(plan, findings)
    # A secret case's findings carry only what the grader chooses to say (secrecy).
    return secrecy.shown_findings(plan.assignment, findings), notes + claims + _partial_notes(plan)


def _partial_notes(plan: Plan) -> list[CheckNote]:
    """A replay's checks that ran on less than the whole grading gives them: one
    that found nothing there did not pass, it was not run in full (it costs
    nothing: a replay is no grade). Only counts and rungs are said, never a case
    the replay left out (it may be secret). A check that found something keeps its
    finding: that evidence ran here."""
    notes = []
    for part in plan.partial:
        missing = [f"{part.cases_out} other case{'s' if part.cases_out > 1 else ''}"] if part.cases_out else []
        missing += [f"the {TEST_RUNGS[r]} test it compares with" for r in part.rungs_out]
        gives = " and ".join(missing) or "more runs"
        notes.append(CheckNote(part.probe, plan.cases[0].name if plan.cases else "",
                               f"not run in full in this replay (the whole grading also gives it {gives}); "
                               "it found nothing here"))
    return notes


def _report(start: _Start, findings: list[Finding], check_notes: list, loc: submission.Located | None,
            ex: execution.Execution | None = None, traces: dict | None = None,
            solution_speed: dict | None = None, keep_programs: bool = False,
            kernels: faces.Faces | None = None, src: sources.Sources | None = None) -> Report:
    """The grading's report, built once from everything it produced (``ex`` None:
    the submission failed before anything ran)."""
    plan = start.plan
    if ex is not None and src is None:
        src = _sources(plan, traces or {}, loc)
    tests = scoring.score(plan, findings, check_notes)
    common = dict(notes=start.notes, student_uid=start.student_uid)
    if ex is not None:
        common.update(
            jax_version=ex.jax_version, children=ex.children, peak_child_rss_mb=ex.peak_rss_mb,
            student_output=ex.stdout_tail.strip(), output_bytes=ex.output_bytes,
            leftovers_killed=ex.leftovers_killed, outcomes=ex.outcomes, startup_s=ex.startup_s,
            custom=ex.custom, fingerprint=kernels.fingerprint() if kernels else "",
            speed=_speed(plan, ex.outcomes, tests, solution_speed or {}, kernels),
            programs=_kept_programs(plan, traces or {}) if keep_programs else {},
            sources=src)
    return Report(plan.assignment, str(start.submission), plan, tuple(tests), tuple(findings),
                  loc.uploaded_as if loc else None, time.monotonic() - start.t0, **common)
