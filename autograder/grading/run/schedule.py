"""Which run goes next, and which pending runs outcomes have already answered.

Runs go out in plan order. Three answers make a pending run not worth
running (it gets an outcome without being run, saying why):

- a run hung while tracing: every pending run with the same trace (same
  shapes, dtypes and static parameters) would hang the same way;
- a kernel's test hung on a rung: the probes' reruns of that case on that
  rung would too; and once two correctness runs on a rung have hung and none
  there has finished, the rest of that rung is not tried (a kernel that hangs
  on one case keeps its other tests: one finished run is enough to go on). A
  probe's run that hangs skips only that probe's other runs on the case: the
  hang is charged to that check, and every other check still runs;
- a static probe settled it (``settle``): e.g. the index-map scan found a
  block outside the array, which stops every TPU interpret run of that case
  before it could show what a dynamic probe looks for.

In-order reruns (every grid axis 'arbitrary') are the exception: they exist to
explain a hang in TPU interpret mode, so they run only for a case whose own run
hung there, and until one of them hangs too. So are a test's fill reruns
(``plan.UNWRITTEN``): they explain a wrong output, so they run only for a test
whose output was wrong, and so are a visible test's altered reruns (``plan.NUDGED``, ``plan.STEADY``).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from ...isolation.outcome import Outcome
from .plan import NUDGED, STEADY, UNWRITTEN, Plan, Run, unwritten_tests

MAX_HUNG = 2   # hung correctness runs on a rung, none finished, before the rest is not tried


class Schedule:
    def __init__(self, plan: Plan, *,
                 child_inputs: Callable[[Run], list[dict]],
                 expected_shape: Callable[[Run], tuple[int, ...] | None],
                 limit_after_trace: Callable[[Run, object], float] | None = None,
                 settle: Callable[[Plan, Run, Outcome], tuple[Outcome, tuple[Run, ...]]] | None = None,
                 test_failed: Callable[[Run, Outcome], bool] | None = None):
        self.plan = plan
        self._queue = list(plan.runs)
        self.outcomes: dict[Run, Outcome] = {}
        self.child_inputs = child_inputs
        self.expected_shape = expected_shape
        self._after_trace = limit_after_trace
        self._settle = settle
        self._test_failed = test_failed

    def next_run(self) -> Run | None:
        while self._queue:
            run = self._queue[0]
            if run.in_order and run not in self.outcomes and not self._hung_on_its_case(run):
                self.outcomes[run] = Outcome("settled", reason="not needed: the case's own run in TPU "
                                             "interpret mode did not hang (or was not run)")
            if run.probe in (UNWRITTEN, NUDGED, STEADY) and run not in self.outcomes and not self._a_test_failed(run):
                self.outcomes[run] = Outcome("settled", reason="not needed: the tests on these inputs "
                                             "passed (or produced no output)")
            if run.probe in (NUDGED, STEADY) and run not in self.outcomes and self._said_before(run):
                self.outcomes[run] = Outcome("settled", reason="not needed: an earlier case's rerun of this kind "
                                             "already gave the fix its evidence")
            if run not in self.outcomes:
                return run
            self._queue.pop(0)
        return None

    def _a_test_failed(self, run: Run) -> bool:
        """A correctness test on this fill rerun's inputs produced a wrong output."""
        if self._test_failed is None:
            return False
        return any(t in self.outcomes and self.outcomes[t].output is not None
                   and self._test_failed(t, self.outcomes[t]) for t in unwritten_tests(self.plan, run))

    def _said_before(self, run: Run) -> bool:
        """An altered rerun of the same kind already ran on an earlier case (a problem's
        fix is said once, from the first case it is explained on: one case's evidence)."""
        return any(r.probe == run.probe and r.case != run.case and r in self.outcomes and self.outcomes[r].ran
                   for r in self.plan.runs)

    def _hung_on_its_case(self, run: Run) -> bool:
        """The case's correctness run on the same rung hung (correctness runs go first)."""
        test = self.plan.test_run(run.case.name, run.rung)
        return test is not None and test in self.outcomes and _hung_running(self.outcomes[test])

    def pending(self) -> list[Run]:
        return [r for r in self._queue if r not in self.outcomes]

    def limit_after_trace(self, run: Run, grid_steps: object) -> float:
        """The run's limit once its trace says how big its grid is."""
        if self._after_trace is None or not isinstance(grid_steps, int):
            return run.limit_s
        return self._after_trace(run, grid_steps)

    def record_trace(self, signature: int, outcome: Outcome) -> None:
        """A signature's trace: when it failed, every run that needs it is answered
        by it (a hang is charged to the first; the rest say they were not started)."""
        if outcome.ok:
            return
        # A hang is charged to a test first: it is what the student reads, and a check
        # (the first runs planned) then says it was not run.
        runs = sorted((r for r in self.pending() if r.draw.signature == signature), key=lambda r: r.probe is not None)
        for i, run in enumerate(runs):
            if outcome.status == "timeout" and i and not outcome.not_run:
                self.outcomes[run] = replace(outcome, not_run=True, reason="tracing the same call already hung")
            else:
                self.outcomes[run] = outcome

    def record(self, run: Run, outcome: Outcome) -> None:
        self.outcomes[run] = outcome
        if outcome.status == "timeout" and not outcome.not_run:
            self._after_hang(run, outcome)
        elif outcome.ok and run.kind == "static" and self._settle is not None:
            settled, runs = self._settle(self.plan, run, outcome)
            for other in runs:
                self.outcomes.setdefault(other, settled)

    def _not_run(self, runs, outcome: Outcome, reason: str) -> None:
        for other in runs:
            self.outcomes.setdefault(other, Outcome("timeout", phase=outcome.phase, limit_s=outcome.limit_s,
                                                    not_run=True, reason=reason))

    def _after_hang(self, run: Run, outcome: Outcome) -> None:
        pending = self.pending()
        if outcome.phase == "trace":
            self._not_run([r for r in pending if r.draw.signature == run.draw.signature], outcome,
                          "tracing the same call already hung")
            return
        if run.in_order:
            # It hangs in order too: no other in-order rerun can tell more.
            self._not_run([r for r in pending if r.in_order], outcome, "the kernel hung in grid order too")
            return
        if run.kind == "kernel" and run.probe is None:
            self._not_run([r for r in pending if r.probe and r.case == run.case and r.rung == run.rung
                           and not r.in_order],
                          outcome, "the kernel already hung on this case on this rung")
        elif run.kind == "kernel":
            # A probe run that hangs where its case's test finished is charged as the
            # bug it exposes (probes.judge): the probe's other runs on the case add
            # nothing to that, and no other check is skipped for it.
            self._not_run([r for r in pending if r.probe == run.probe and r.case == run.case
                           and r.rung == run.rung and not r.in_order],
                          outcome, "this check's run already hung on this case")
        tests = [r for r in self.plan.correctness() if r.rung == run.rung]
        hung = [r for r in tests if r in self.outcomes and self.outcomes[r].status == "timeout"
                and not self.outcomes[r].not_run]
        finished = [r for r in self.plan.runs if r.rung == run.rung and r in self.outcomes
                    and self.outcomes[r].ran]
        if len(hung) >= MAX_HUNG and not finished:
            self._not_run([r for r in pending if r.rung == run.rung and not r.in_order], outcome,
                          f"{len(hung)} earlier runs on this rung hung and none finished")


def _hung_running(outcome: Outcome) -> bool:
    """The kernel hung (not its tracing, and it was really run)."""
    return outcome.status == "timeout" and not outcome.not_run and outcome.phase != "trace"
