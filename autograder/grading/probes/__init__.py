"""Probes: checks that expose what each interpreter rung cannot see.

A probe is one module: its terms (``spec.ProbeTerms``: its name, rung, the
finding IDs it can produce, the keys of its ``[probes.<name>]`` table and how to
read them), its note and what a hang under it exposes; it plans the runs it needs on one case
(``plan.Variant``: static analyses, or interpreter runs with other switches)
and judges their outcomes into findings. ``REGISTRY`` is the one list of
probes; ``judge`` is the one entry point that turns a plan's outcomes into
probe findings; ``settle`` tells the schedule which runs a static fact has
already answered.
"""
from __future__ import annotations

import sys
import traceback
from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from ...findings import CheckNote, Finding
from ...isolation.outcome import NO_SHUFFLED_AXIS, Outcome
from ..judge import secrecy
from ..judge.diagnosis import REFUSED, known_error
from ..judge.faces import Faces
from ..run.plan import Draw, Plan, Run
from .base import Exposes, Probe, ProbeResults
from .grid_order import GRID_ORDER
from .numerics import NUMERICS
from .poisoning import POISONING
from .races import RACES
from .static import COMPILE, INDEX_MAPS, STRUCTURE, VMEM, uncovered

# One line a probe (and one import above): a new probe is its module plus these two lines.
REGISTRY: dict[str, Probe] = {p.name: p for p in (
    INDEX_MAPS,
    COMPILE,
    VMEM,
    STRUCTURE,
    POISONING,
    GRID_ORDER,
    RACES,
    NUMERICS,
)}
# What ``plan.build`` is given: each probe's planner, by the name the spec uses.
PLANNERS = {name: p.plan for name, p in REGISTRY.items()}
# What the spec reader is given: the probes a spec may name, and their keys.
TERMS = {name: p.terms for name, p in REGISTRY.items()}

__all__ = ["PLANNERS", "REGISTRY", "TERMS", "CheckNote", "Exposes", "Probe", "ProbeResults", "judge", "settle"]


def settle(plan: Plan, run: Run, outcome: Outcome) -> tuple[Outcome, tuple[Run, ...]]:
    """The pending runs a static run's facts have answered, and their outcome.
    An index-map scan that finds a block outside an array, or an output block
    revisited non-consecutively, has settled every dynamic TPU interpret probe
    on that case: each of their runs would stop with that error first."""
    if run.analysis == "structure" and run.stress is None and not run.draw.abstract:
        return _without_dma(plan, run, outcome)
    if run.analysis != "index-maps" or run.stress is not None or run.draw.abstract:
        # (A stress input's or a size no test runs' scan is of other shapes: it settles
        # nothing of the case's.)
        return Outcome("settled"), ()
    scan = ProbeResults(plan, INDEX_MAPS, run.case, plan.assignment.probe(INDEX_MAPS.name),
                        {"index-maps": run}, {"index-maps": outcome}, {}, {})
    stopping = [f for f in INDEX_MAPS.judge(scan) if f.facts().get("stops_tpu_interpret")]
    if not stopping:
        return Outcome("settled"), ()
    runs = tuple(r for r in plan.runs if r.probe and r.case == run.case and r.rung == "tpu-interpret")
    reason = (f"not run: the index-map scan already found this ({stopping[0].message}), which stops "
              "TPU interpret mode before this check could see anything")
    return Outcome("settled", reason=reason, settled_by=stopping[0]), runs


def _without_dma(plan: Plan, run: Run, outcome: Outcome) -> tuple[Outcome, tuple[Run, ...]]:
    """A kernel that starts no DMA of its own runs the same whenever DMAs complete:
    the races probe's eager-DMA run of that case would be its test run again."""
    facts = outcome.facts
    if facts is None or facts.pallas_calls == 0 or facts.manual_dma:
        return Outcome("settled"), ()
    runs = tuple(r for r in plan.runs if r.probe == "races" and r.case == run.case
                 and ("dma_execution_mode", "eager") in r.params)
    return Outcome("settled", reason="not run: the kernel starts no DMA, so DMAs completing at their start "
                   "change nothing"), runs


def _results(plan: Plan, probe: Probe, case, outcomes: Mapping[Run, Outcome],
             references: Mapping[Draw, np.ndarray]) -> ProbeResults:
    runs = plan.probe_runs(probe.name, case.name)
    tests = {rung: plan.test_run(case.name, rung) for rung in plan.rungs}
    return ProbeResults(plan, probe, case, plan.assignment.probe(probe.name), runs,
                        {v: outcomes[r] for v, r in runs.items() if r in outcomes},
                        {rung: outcomes[r] for rung, r in tests.items() if r is not None and r in outcomes},
                        references)


def judge(plan: Plan, outcomes: Mapping[Run, Outcome], references: Mapping[Draw, np.ndarray],
          faces: Faces | None = None) -> tuple[list[Finding], list[CheckNote]]:
    """Every planned probe check judged on its outcomes, on every case it ran on:
    findings, and notes for checks that could not run through no fault of the
    student. ``faces``: the traced kernels (see ``grading.faces``); what a check
    read at a size no test runs, whose program no graded kernel vouches for, gives
    no figure (``inconsistent-kernel``), and what it found at graded sizes stands."""
    findings: list[Finding] = []
    notes: list[CheckNote] = []
    for name in plan.probes:
        # Visible cases first: where one bug shows on several cases, the one shown is visible.
        judged = [(case, *_judge_case(plan, REGISTRY[name], case, outcomes, references, faces))
                  for case in sorted(plan.probe_cases(name), key=lambda c: not c.visible)]
        # A check stopped on some case by that case's own failing test (charged there)
        # still vouches for the cases where it ran: it is not free to make a check
        # fail by failing a test, nor to hide a case from it that way.
        ran = any(decided and not any(f.problem == "check-not-run" for f in found)
                  for _case, found, _notes, decided in judged)
        for case, found, case_notes, _decided_here in judged:
            blocked = [f for f in found if f.problem == "check-not-run" or f.facts().get("refused")]
            if blocked and ran:
                found = [f for f in found if f not in blocked]
                case_notes = case_notes + [CheckNote(name, case.name, "not run on a case whose own test fails "
                                                     "(charged there); it ran on the others", ran=True)]
            findings += found
            notes += case_notes
    return findings, notes


def _judge_case(plan: Plan, probe: Probe, case, outcomes: Mapping[Run, Outcome],
                references: Mapping[Draw, np.ndarray], faces: Faces | None
                ) -> tuple[list[Finding], list[CheckNote], bool]:
    """One check on one case: its findings, its notes, and whether it ran there."""
    r = _results(plan, probe, case, outcomes, references)
    unvouched = (_unvouched(r, faces) if faces is not None else []) + _refused_ungraded(r)
    if unvouched:
        # A size no test runs that no graded kernel vouches for: what the check
        # read there gives no figure; what it found at graded sizes stands.
        r = replace(r, runs={v: run for v, run in r.runs.items() if faces.graded_kernel(run.draw.signature)},
                    outcomes={v: o for v, o in r.outcomes.items() if faces.graded_kernel(r.runs[v].draw.signature)})
    if probe.name != STRUCTURE.name and _no_kernel(plan, case, outcomes):
        return [r.finding("not-a-kernel", "there is no pallas_call for this check to examine: it earns "
                          "nothing", problem="nothing-to-check")], [], False
    try:
        judged = probe.judge(r)
    except Exception:  # noqa: BLE001 - the grader's own check failed, not the student
        traceback.print_exc(file=sys.stderr)
        return [], [CheckNote(probe.name, case.name, "the grader's own check failed (an internal error; the "
                              "course staff can see it); this costs nothing")], False
    judged = judged + [f for f in _exposed(r) if f.id not in {g.id for g in judged}]
    if any(f.problem == "not-covered" for f in judged) and _uncovered_where_graded(plan, outcomes):
        # The grid that misses the arrays at the production size already misses them at a
        # graded size: the index-map check charges that bug; the VMEM check has no figure.
        judged = [f for f in judged if f.problem != "not-covered"]
    notes = []
    decided = _decided(r)
    aside = probe.aside(r) if probe.aside is not None and not judged and not unvouched else None
    if aside:
        notes.append(CheckNote(probe.name, case.name, aside))
    elif not judged and not unvouched and not decided:
        judged, note = _not_run(r)
        if note:
            notes.append(CheckNote(probe.name, case.name, note))
    return unvouched + judged, notes, decided


# A probe run is its case's test run with one switch turned, so it takes about as
# long: one stopped at a limit this many times the test run's time hung; one
# stopped sooner may only have been slow (a loaded machine, a tight --case-timeout).
HANG_FACTOR = 4.0


def _broke(o: Outcome | None, test: Outcome) -> bool:
    """The run hung while the kernel ran, or raised something no other rule reads."""
    if o is None:
        return False
    if o.status == "timeout":
        return (not o.not_run and o.phase != "trace" and o.limit_s is not None
                and o.limit_s >= HANG_FACTOR * max(test.seconds, 0.1))
    return o.status == "error" and o.error_type not in (REFUSED, NO_SHUFFLED_AXIS)


def _exposed(r: ProbeResults) -> list[Finding]:
    """A probe run that could not finish (it hung, or raised) where the case's own
    test on that rung finished and passed: a probe run looks like a test run, so
    it is the bug that run exposes, charged, never a check that costs nothing."""
    rung = r.probe.rung if r.probe.rung in r.correctness else next(iter(r.correctness), None)
    test = r.correctness.get(rung) if rung else None
    if test is None or not _passed(r, test):
        return []
    found: dict[str, Finding] = {}
    for variant, run in r.runs.items():
        o = r.outcomes.get(variant)
        exposes = r.probe.exposed_by(variant)
        if exposes is None or run.kind != "kernel" or run.in_order or not _broke(o, test):
            continue
        known = known_error(o, r.probe.rung, r.case.name, check=r.probe.name, run=run.index)
        fid, changed = exposes.finding, exposes.changed
        if known is not None:
            found.setdefault(known.id, known)
            continue
        what = (f"hung (no result within {o.limit_s:g} s)" if o.status == "timeout" and o.limit_s else
                "hung" if o.status == "timeout" else f"raised {o.error_type}")
        found.setdefault(fid, r.finding(
            fid, f"the kernel {what} {changed}, where this case's own test finished and passed on the same "
            "rung: what this run changed is what the kernel depends on", variant=variant,
            problem="probe-run-hung" if o.status == "timeout" else "probe-run-raised", limit_s=o.limit_s,
            type=o.error_type or "", phase=o.phase or "run"))
    return list(found.values())


def _unvouched(r: ProbeResults, faces: Faces) -> list[Finding]:
    """A check that read a size no test runs (the production size, a stress
    input) whose program no graded kernel vouches for: that figure is not the
    graded kernel's (``grading.faces``). Graded sizes are each checked on their
    own, so a dynamic probe is never unvouched."""
    seen: set[int] = set()
    found = []
    for variant, run in r.runs.items():
        sig = run.draw.signature
        vouch = faces.vouch(sig)
        if vouch is None or vouch.matched or sig in seen:
            continue
        seen.add(sig)
        found.append(r.finding("inconsistent-kernel", vouch.reason + ": this check gives no figure there",
                               variant=variant, **faces.evidence(sig)))
    return found


def _refused_ungraded(r: ProbeResults) -> list[Finding]:
    """A check that reads a size no test runs (the production size, a stress input)
    whose program the grader refused to rebuild (a forged document, a construct it
    does not support): no figure there, and the check earns nothing. Else a program
    refused at the one size the check reads would hide what it reads there (a grid
    that misses output blocks, blocks that overflow VMEM) while the graded sizes'
    figures stood. (A graded size's refusal is charged by its own tests.)"""
    for variant, run in r.runs.items():
        o = r.outcomes.get(variant)
        if (run.draw.abstract or run.stress is not None) and o is not None and o.status == "error" \
                and o.error_type == REFUSED:
            # (What it refused is not quoted: at a stress input of a secret probe case the
            # words would be the tracer's choice. The function's own line says it locally.)
            dims = ", ".join(f"{k}={v}" for k, v in run.draw.case.dims)
            return [r.finding("submission-error", f"at a size no test runs ({dims}, {run.draw.case.dtype}) the "
                              "grader cannot rebuild the traced program (a construct it does not support, or "
                              "a document it does not accept): this check gives no figure there",
                              problem="unsupported", variant=variant,
                              detail=f"It refused the program the function builds at {dims}")]
    return []


def _uncovered_where_graded(plan: Plan, outcomes: Mapping[Run, Outcome]) -> bool:
    """The index-map scan of some graded case finds blocks outside, unvisited or revisited."""
    return any(run.analysis == "index-maps" and not run.draw.abstract and run.stress is None and o.ok
               and uncovered(o.facts) is not None for run, o in outcomes.items())


def _no_kernel(plan: Plan, case, outcomes: Mapping[Run, Outcome]) -> bool:
    """The student's function, traced on this case, holds no pallas_call."""
    traced = [o for r, o in outcomes.items() if r.case == case and o.traced]
    return bool(traced) and all(o.pallas_calls == 0 for o in traced)


def _deciding(r: ProbeResults) -> list[tuple[Run, Outcome | None]]:
    """The runs whose outcome decides the check: a dynamic probe's own kernel
    runs (its helper static run working does not make the check)."""
    runs = [(run, r.outcomes.get(v)) for v, run in r.runs.items()]
    kernel = [(run, o) for run, o in runs if run.kind == "kernel"]
    return kernel if r.probe.dynamic and kernel else runs


def _decided(r: ProbeResults) -> bool:
    return any(o is not None and o.ok for _run, o in _deciding(r))


def _not_run(r: ProbeResults) -> tuple[list[Finding], str]:
    """A check whose deciding runs produced nothing. Settled by a static fact,
    or stopped by an error the error table names: that finding (charged once).
    Stopped where the case's own test on the probe's rung fails too: that test
    already charges it. Otherwise the student is not charged: a note says why."""
    outcomes = [o for _run, o in _deciding(r) if o is not None]
    if any(o.status == "error" and o.error_type == REFUSED for o in outcomes):
        # (refused: the case's own tests fail on the same program, charged there.)
        return [r.finding("not-a-kernel", "there is no kernel the grader can run for this check to "
                          "examine: it earns nothing", problem="nothing-to-check", refused=True)], ""
    settled = next((o for o in outcomes if o.status == "settled" and o.settled_by), None)
    if settled is not None:
        return [_as_check(settled.settled_by, r, settled.reason)], ""
    test_rung = r.probe.rung if r.probe.rung in r.correctness else next(iter(r.correctness), None)
    test = r.correctness.get(test_rung) if test_rung else None
    failed = test is not None and not _passed(r, test)
    for run, o in _deciding(r):
        if o is not None:
            known = known_error(o, r.probe.rung, r.case.name, check=r.probe.name, run=run.index)
            # (Refused while tracing where the case's own test fails too: the same trace,
            # charged by that test; the check did not run, it found nothing of its own.)
            if known is not None and not (failed and known.facts().get("phase") == "trace"):
                return [known], ""
    if failed:
        return [r.finding("submission-error", "this check could not run: the kernel already fails "
                          "its test on this case", problem="check-not-run", test_rung=test_rung)], ""
    reasons = sorted({_why(o, r.case.visible) for o in outcomes}) or ["it was not run"]
    return [], f"this check could not finish ({'; '.join(reasons)}); it costs nothing"


def _passed(r: ProbeResults, outcome: Outcome) -> bool:
    return outcome.output is not None and r.compare(outcome.output).ok


def _why(o: Outcome, visible: bool = True) -> str:
    """Why a run produced nothing, in words (a secret case's: the grader's own only)."""
    if o.status == "timeout":
        return "the grader ran out of time for it"
    if o.status == "skipped":
        return "the grading's time budget was spent"
    if o.status == "error":
        return f"it raised {o.error_type if visible else secrecy.shown_type(o.error_type)}"
    return (o.reason or o.status) if visible else o.status


def _as_check(f: Finding, r: ProbeResults, reason: str) -> Finding:
    """A static finding that settled this check, said as this check's outcome."""
    # not_run: the check itself never ran (the feedback says "not run", not "passed").
    return Finding(f.id, f.rung, reason or f.message, case=r.case.name, check=r.probe.name,
                   evidence=f.evidence, run=f.run).with_facts(not_run=True)
