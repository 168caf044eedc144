"""Static findings no rung confirms, and writes that agree: a note, not a charge
(pure data; no JAX).

The index-map scan reads a kernel's grid and index maps and claims what the
kernel will do when it runs: an output block written from both sides of a
"parallel" axis (two cores would write it), output blocks the grid never
visits. A claim about running is charged when a run shows it: a test on that
case fails, or a check that runs the kernel there (poisoning, grid order,
races) finds something. When every run on the case agrees with the reference
and no such check found anything, no rung confirms the claim (a softmax whose
two parallel halves both compute its only row block writes the same values
twice, which the chip computes right): the check passes with a note that says
what the scan saw and why it costs nothing.

The race detector's two writes of one output block are the same claim, run: when
that run's output is right, every test on the case passes and no other check
found anything there, the values written agree and the race costs nothing either.

Charged whatever the runs show: a block or DMA outside its array (TPU
interpret mode raises, the chip halts: measured), an output block revisited
out of order (TPU interpret mode raises), and the compiler's rules (compile,
VMEM), which no interpreter can confirm but the chip enforces.
"""
from __future__ import annotations

from ...findings import CheckNote, Finding
from ..run.plan import Plan

STATIC_CHECK = "index-maps"
# The scan's claims about a run that a run can confirm are the kinds with a ``claim``
# in the catalogue (unless they stop TPU interpret mode, whose error confirms them first).
# Checks that run the kernel on a case: what they find there confirms a claim.
RUNNING = ("correctness", "poisoning", "grid-order", "races")


def settle(plan: Plan, findings: list[Finding]) -> tuple[list[Finding], list[CheckNote]]:
    """``findings`` without the scan's claims no run confirms, and a note for each."""
    kept: list[Finding] = []
    notes: list[CheckNote] = []
    for f in findings:
        if _unconfirmed(f, findings):
            notes.append(CheckNote(f.check, f.case, _note(plan, f), ran=True))
        else:
            kept.append(f)
    return kept, notes


def _unconfirmed(f: Finding, findings: list[Finding]) -> bool:
    return f.case is not None and _claim(f) and not any(_confirms(other, f) for other in findings)


def _claim(f: Finding) -> bool:
    """A finding about a run that only another run's finding can confirm: the
    scan's claims (unless TPU interpret mode stops on them), and the race
    detector's two writes of one output block in a run that is right."""
    if f.check == STATIC_CHECK:
        return f.kind.claim is not None and not f.facts().get("stops_tpu_interpret")
    return f.id == "data-race" and f.check == "races" and bool(f.facts().get("writes_agree"))


def _confirms(other: Finding, claim: Finding) -> bool:
    """A finding from a run on the claim's case (not the scan's own finding
    carried by a check it settled, nor a check that could not run, nor another
    claim)."""
    if other is claim or other.case != claim.case or other.check not in RUNNING or _claim(other):
        return False
    return other.problem != "check-not-run" and other.facts().get("variant") != STATIC_CHECK


def _note(plan: Plan, f: Finding) -> str:
    case = plan.assignment.case(f.case)
    where = f"on case {case.name}" if case.visible else "on a secret case"
    if f.id == "data-race":
        return (f"{where} the race detector saw two cores write the same output block; that run's output is "
                "right and so is every other run on that case: the writes agree (the same values written "
                "twice); keep each output block to one grid point if its values could ever differ; a race "
                "no rung shows a difference for costs nothing")
    claim = f.kind.claim
    saw = f.message if case.visible else claim.saw
    return (f"{where} the index maps say: {saw.rstrip('.')}; no run on that case shows a difference: {claim.why}; "
            "a static finding that no rung confirms costs nothing")
