"""Probes: checks that expose what each interpreter rung cannot see.

Each probe declares its rung, the finding IDs it can produce and the keys of
its ``[probes.<name>]`` table; it plans the runs it needs on one case
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

import numpy as np

from ...isolation.outcome import Outcome
from ..diagnosis import REFUSED, known_error
from ..faces import Faces
from ..findings import CheckNote, Finding
from ..plan import Draw, Plan, Run
from .base import Probe, ProbeResults
from .grid_order import GRID_ORDER
from .numerics import NUMERICS
from .poisoning import POISONING
from .races import RACES
from .static import COMPILE, INDEX_MAPS, STRUCTURE, VMEM

REGISTRY: dict[str, Probe] = {p.name: p for p in (
    INDEX_MAPS, COMPILE, VMEM, STRUCTURE, POISONING, GRID_ORDER, RACES, NUMERICS)}
# What ``plan.build`` is given: each probe's planner, by the name the spec uses.
PLANNERS = {name: p.plan for name, p in REGISTRY.items()}

__all__ = ["PLANNERS", "REGISTRY", "CheckNote", "Probe", "ProbeResults", "judge", "settle"]


def settle(plan: Plan, run: Run, outcome: Outcome) -> tuple[Outcome, tuple[Run, ...]]:
    """The pending runs a static run's facts have answered, and their outcome.
    An index-map scan that finds a block outside an array, or an output block
    revisited non-consecutively, has settled every dynamic TPU interpret probe
    on that case: each of their runs would stop with that error first."""
    if run.analysis != "index-maps" or run.stress is not None:
        # (A stress input's scan is of other shapes: it settles nothing of the case's.)
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
    """Every planned probe check judged on its outcomes: findings, and notes for
    checks that could not run through no fault of the student. ``faces``: the
    traced kernels (see ``grading.faces``); a check that cannot vouch for every
    kernel the tests graded is ``inconsistent-kernel``."""
    findings: list[Finding] = []
    notes: list[CheckNote] = []
    for name in plan.probes:
        probe = REGISTRY[name]
        for case in plan.probe_cases(name):
            r = _results(plan, probe, case, outcomes, references)
            unvouched = _unvouched(r, faces) if faces is not None else None
            if unvouched is not None:
                findings.append(unvouched)
                continue
            if name != STRUCTURE.name and _no_kernel(plan, case, outcomes):
                findings.append(r.finding("not-a-kernel", "there is no pallas_call for this check to "
                                          "examine: it earns nothing", problem="nothing-to-check"))
                continue
            try:
                judged = probe.judge(r)
            except Exception:  # noqa: BLE001 - the grader's own check failed, not the student
                traceback.print_exc(file=sys.stderr)
                notes.append(CheckNote(name, case.name, "the grader's own check failed (an internal "
                                       "error; the course staff can see it); this costs nothing"))
                continue
            if not judged and not _decided(r):
                judged, note = _not_run(r)
                if note:
                    notes.append(CheckNote(name, case.name, note))
            findings.extend(judged)
    return findings, notes


def _unvouched(r: ProbeResults, faces: Faces) -> Finding | None:
    """A check that examined a kernel the tests did not grade, or (a dynamic
    probe) one of several kernels the function builds: it cannot vouch."""
    if r.probe.dynamic and not faces.one_kernel:
        return r.finding("inconsistent-kernel", f"the function builds {len(faces.graded)} different kernels at "
                         "the sizes the tests grade; this check examined one of them", problem="sizes-differ",
                         **faces.evidence())
    other = next((run for run in r.runs.values() if not faces.graded_kernel(run.draw.signature)), None)
    if other is None:
        return None
    what = "the production size" if other.draw.abstract and r.probe.name == "vmem" else (
        "a speed size" if other.draw.abstract else "this check's input")
    return r.finding("inconsistent-kernel", f"at {what} the function builds another kernel than the one the "
                     "tests graded, so this check says nothing about the graded kernel",
                     problem="not-the-graded-kernel", **faces.evidence())


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
        return [r.finding("not-a-kernel", "there is no kernel the grader can run for this check to "
                          "examine: it earns nothing", problem="nothing-to-check")], ""
    settled = next((o for o in outcomes if o.status == "settled" and o.settled_by), None)
    if settled is not None:
        return [_as_check(settled.settled_by, r, settled.reason)], ""
    for run, o in _deciding(r):
        if o is not None:
            known = known_error(o, r.probe.rung, r.case.name, check=r.probe.name, run=run.index)
            if known is not None:
                return [known], ""
    test_rung = r.probe.rung if r.probe.rung in r.correctness else next(iter(r.correctness), None)
    test = r.correctness.get(test_rung) if test_rung else None
    if test is not None and not _passed(r, test):
        return [r.finding("submission-error", "this check could not run: the kernel already fails "
                          "its test on this case", problem="check-not-run", test_rung=test_rung)], ""
    reasons = sorted({_why(o) for o in outcomes}) or ["it was not run"]
    return [], f"this check could not finish ({'; '.join(reasons)}); it costs nothing"


def _passed(r: ProbeResults, outcome: Outcome) -> bool:
    return outcome.output is not None and r.compare(outcome.output).ok


def _why(o: Outcome) -> str:
    if o.status == "timeout":
        return "the grader ran out of time for it"
    if o.status == "skipped":
        return "the grading's time budget was spent"
    if o.status == "error":
        return f"it raised {o.error_type}"
    return o.reason or o.status


def _as_check(f: Finding, r: ProbeResults, reason: str) -> Finding:
    """A static finding that settled this check, said as this check's outcome."""
    # not_run: the check itself never ran (the feedback says "not run", not "passed").
    return Finding(f.id, f.rung, reason or f.message, case=r.case.name, check=r.probe.name,
                   evidence=f.evidence, run=f.run).with_facts(not_run=True)
