"""One submission graded over many run keys, cheaply: can the luck of the draw
cost it a point?

A run key changes a grading's data (every input is drawn from it) and its
fills; never the programs. So the sweep traces each signature once, runs
every key's runs in one grader child
(one compiled executable per rung and parameters serves every key), and judges
each key as its runs end, dropping its arrays and files before the next.

What is redrawn for every key after the first: the correctness runs (every
case, every rung) and the numerics stress runs, the comparisons whose inputs
the key draws. Static analyses do not read data unless an input holds
integers (scalar-prefetch tables drive index maps): the first key's answer
serves every key otherwise. The dynamic probes (poisoning, grid order, races)
run on the first key only: on a kernel that writes all its memory and does
not depend on the grid order, which the first key's grading checks, their
outputs are each case's own output, compared against the reference that
case's correctness test is swept on. Runs get the spec's ceilings, not the
calibrated limits.
"""
from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from ..findings import Finding
from ..isolation import confinement, sandbox
from ..isolation.outcome import Outcome
from ..spec import Assignment
from . import probes
from .grade import GradeOptions, _diagnose, _specs, _timing, _wrong
from .judge import faces, scoring
from .run import execution, plan as planning, submission, tracing
from .run.draws import DrawStore, load_reference
from .run.plan import Plan, Run
from .run.schedule import Schedule


@dataclass(frozen=True)
class KeyResult:
    run_key: int
    score: float
    max_score: float
    lost: tuple[tuple[str, str, str], ...]      # (test number, finding ID, message) of each test that lost points


@dataclass(frozen=True)
class Sweep:
    results: tuple[KeyResult, ...]
    seconds: float
    runs: int                                   # child runs really run, over every key
    problem: str = ""                           # why the sweep could not grade (the submission's own failure)

    @property
    def losing(self) -> tuple[KeyResult, ...]:
        return tuple(r for r in self.results if r.score < r.max_score)


def redrawn(a: Assignment) -> Callable[[Run], bool]:
    """The runs of a later key that run on its own draws (see the module docstring)."""
    integers = any(i.kind == "array" and a.dtype_of(i.dtype, a.cases[0]) == "int32" for i in a.inputs)

    def wanted(run: Run) -> bool:
        if run.kind == "static":
            return integers and run.probe != planning.SPEED
        return run.probe in (None, planning.UNWRITTEN, "numerics")
    return wanted


def sweep(assignment: Assignment, submission_path: Path, keys: list[int],
          progress: Callable[[int, int], None] | None = None) -> Sweep:
    """``submission_path`` graded on every run key of ``keys`` (the first in full)."""
    with confinement.student_slot() as slot:
        confinement.make_reachable(slot.student)
        confinement.make_reachable(slot.grader)
        return _sweep_as(slot, assignment, Path(submission_path).absolute(), keys, progress)


def _sweep_as(slot, a: Assignment, path: Path, keys: list[int], progress) -> Sweep:
    t0 = time.monotonic()
    # Every run gets the spec's ceiling, not the calibrated limit: the sweep asks
    # about the draw, and a busy machine must not pass for an unlucky one (the
    # container row of `check` measures the time).
    timing = _timing(a, GradeOptions(use_calibration=False))
    plans = [planning.build(a, a.cases, a.rungs, k, planners=probes.PLANNERS, limit=timing.limit) for k in keys]
    merged, maps = planning.merged(plans, redrawn(a))
    confinement.guard_grader()
    workdir = Path(tempfile.mkdtemp(prefix="pallas-sweep-"))
    workdir.chmod(0o711)
    try:
        loc, _skipped = submission.prepare(path, a.entry_file, workdir)
        problem = loc if isinstance(loc, Finding) else submission.check_source(loc)
        if problem is not None:
            return Sweep((), time.monotonic() - t0, 0, problem.message)
        return _run(slot, a, keys, plans, merged, maps, loc, workdir, timing, progress, t0)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        confinement.remove_files_of(slot.student)
        confinement.remove_files_of(slot.grader)


def _run(slot, a: Assignment, keys, plans: list[Plan], merged: Plan, maps: list[dict[Run, Run]],
         loc, workdir: Path, timing, progress, t0: float) -> Sweep:
    deadline = t0 + a.limits.total_s * len(keys)
    tracer, child = _specs(slot, merged, loc, workdir, timing.startup())
    store = DrawStore(a, load_reference(a), workdir / "in")
    schedule = Schedule(merged, child_inputs=lambda run: store.files(run.draw),
                        expected_shape=lambda run: a.output_shape(run.draw.case),
                        limit_after_trace=timing.after_trace, settle=probes.settle,
                        test_failed=lambda run, o: _wrong(a, run, o, store[run.draw]))
    shown = sandbox.Tail()
    traces, stats = tracing.trace_all(merged, tracer, store.abstract, workdir / "programs", time.monotonic()
                                      + a.limits.total_s, shown, timing.trace_limit())
    if any(s.load_error or s.tampered for s in stats):
        return Sweep((), time.monotonic() - t0, 0, "the submission did not load")
    programs = {sig: t.program for sig, t in traces.items() if t.program is not None}
    owner: dict[int, int] = {}      # merged run -> the first key that runs it
    for i, m in enumerate(maps):
        for m_run in m.values():
            owner.setdefault(m_run.index, i)
    results: list[KeyResult | None] = [None] * len(keys)
    ran = [0]

    kernels: dict[tuple, faces.Faces] = {}     # by signature map: the same programs, read once

    def judge(i: int) -> None:
        results[i] = _judged(plans[i], maps[i], schedule, store, loc, programs, kernels)
        mine = [m for m in maps[i].values() if owner.get(m.index) == i and m.kind == "kernel"]
        for m in mine:      # this key's arrays and files: not kept for the keys after it
            o = schedule.outcomes.get(m)
            if o is not None and o.output is not None:
                schedule.outcomes[m] = replace(o, output=None)
            (workdir / "out" / f"r{m.index}.npy").unlink(missing_ok=True)
        store.forget({m.draw for m in mine})
        if progress is not None:
            progress(sum(r is not None for r in results), len(keys))

    def recorded(run: Run) -> None:
        ran[0] += 1
        k = owner.get(run.index, 0)
        for i in range(k):
            if results[i] is None:
                judge(i)

    execution.run_all(schedule, traces, child, deadline, shown, recorded=recorded)
    for run in schedule.pending():
        schedule.record(run, Outcome("skipped", reason="budget"))
    for i in range(len(keys)):
        if results[i] is None:
            judge(i)
    return Sweep(tuple(results), time.monotonic() - t0, ran[0])


def _judged(plan: Plan, m: dict[Run, Run], schedule: Schedule, store: DrawStore, loc, programs: dict,
            kernels: dict) -> KeyResult:
    """One key's grading, scored from the merged runs' outcomes (a run of this
    key that was not redrawn costs nothing: its check passes with a note)."""
    outcomes = {r: schedule.outcomes.get(m[r], Outcome("skipped", reason="budget")) if r in m
                else Outcome("skipped", reason="not redrawn in a sweep") for r in plan.runs}
    ex = execution.Execution(outcomes)
    sig = {r.draw.signature: m[r].draw.signature for r in plan.runs if r in m}
    sigs = tuple(sorted(sig.items()))
    if sigs not in kernels:
        kernels[sigs] = faces.of(plan, {s: programs[ms] for s, ms in sig.items() if ms in programs})
    keyed = _KeyStore(store, plan, m)
    findings, notes = _diagnose(plan, ex, keyed, loc, kernels[sigs])
    tests = scoring.score(plan, findings, notes)
    lost = tuple((t.number, t.finding.id if t.finding else "", t.finding.message[:200] if t.finding else "")
                 for t in tests if t.score < t.max_score)
    return KeyResult(plan.run_key, sum(t.score for t in tests), sum(t.max_score for t in tests), lost)


class _KeyStore(dict):
    """A key's references, by its own plan's draws (computed from the merged
    draw's data, then forgotten with the key)."""

    def __init__(self, store: DrawStore, plan: Plan, m: dict[Run, Run]):
        super().__init__()
        self._store = store
        self._merged = {r.draw: mr.draw for r, mr in m.items()}

    def __missing__(self, draw):
        merged = self._merged.get(draw)
        value = self._store[merged] if merged is not None else self._store.reference(draw, keep=False)
        self[draw] = value
        return value
