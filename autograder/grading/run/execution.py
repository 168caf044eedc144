"""The run phase: every run of the plan, in the grader's child, on the programs
the trace phase checked.

The grader's child never imports or runs student code: it rebuilds each
signature's program from its document and runs what the parent sends, as a
user the student's processes cannot signal or trace, writing outputs where
they cannot write. What it prints is shown only for runs of visible cases (a
kernel's debug prints on a hidden case would show its values).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from ...isolation import channel
from ...isolation.outcome import LoadError, Outcome
from ...isolation.sandbox import ChildSpec, Discard, GraderFailure, Reply, Stats, Supervisor, Tail
from ...pallas_surface.static.facts import FactsError
from . import custom_checks
from .plan import Run
from .schedule import Schedule
from .tracing import Trace


@dataclass
class Execution:
    """Everything the children of one grading reported, checked."""
    outcomes: dict[Run, Outcome]
    load_error: LoadError | None = None
    jax_version: str | None = None
    stdout_tail: str = ""
    children: int = 0                  # child processes started (tracers and grader's children)
    peak_rss_mb: float = 0.0
    output_bytes: int = 0              # everything the student's code printed, before the cap
    leftovers_killed: int = 0          # processes still alive after a child, killed
    tampered: str = ""                 # why an event channel was judged forged
    startup_s: float = 0.0             # the tracer's start-up (JAX and the student's file)
    stats: list[Stats] = field(default_factory=list)
    custom: custom_checks.CheckSuite | None = None   # the instructor's checks, when planned

    @classmethod
    def of(cls, outcomes: dict, stats: list[Stats], shown: Tail,
           custom: custom_checks.CheckSuite | None = None, graded_by: Stats | None = None) -> "Execution":
        """``graded_by``: the grader's child's own figures, where it ran. The JAX
        release is its word alone: the tracer's startup event is student code's."""
        tracer = stats[0] if stats else Stats()
        return cls(outcomes, custom=custom, load_error=next((s.load_error for s in stats if s.load_error), None),
                   jax_version=graded_by.jax_version if graded_by else None,
                   stdout_tail=shown.text(), children=sum(s.children for s in stats),
                   peak_rss_mb=max((s.peak_rss_kb for s in stats), default=0) / 1024,
                   output_bytes=shown.total, leftovers_killed=sum(s.leftovers_killed for s in stats),
                   tampered=next((s.tampered for s in stats if s.tampered), ""),
                   startup_s=tracer.startup_s, stats=stats)


def _outcome(reply: Reply, run: Run, out_dir: Path, schedule: Schedule) -> Outcome:
    traced = reply.events.get("traced") or {}
    facts = dict(traced=bool(traced), grid_steps=channel.count(traced.get("grid_steps")),
                 pallas_calls=channel.count(traced.get("pallas_calls")))
    if reply.failure is None:
        try:
            got = channel.outcome(reply.done, out_dir, schedule.expected_shape(run), run.analysis)
        except FactsError as e:
            raise GraderFailure(f"the grader's child sent malformed facts for run {run.label}: {e}") from e
        return replace(got, **facts)
    phase = "trace" if reply.phase == "tracing" else "run"
    if reply.failure in ("budget", "tampered"):
        return Outcome("skipped", reason=reply.failure, phase=phase)
    return Outcome(reply.failure, seconds=reply.seconds, phase=phase, limit_s=reply.limit_s,
                   returncode=reply.returncode, stderr_tail=reply.stderr_tail, **facts)


def _label(run) -> str:
    """What the progress line says a run is (a secret case by its position only)."""
    from ...findings import RUNGS
    case = run.case.name if run.case.visible else "a secret case"
    what = f" ({run.probe} check)" if run.probe else ""
    return f"{case} · {RUNGS.get(run.rung, run.rung)}{what}"


def run_checks(child: Supervisor, plan, traces: dict[int, Trace], folder: str,
               deadline: float) -> custom_checks.CheckSuite:
    """The instructor's checks, last, on the kernels that traced (what they print
    is not shown: it could quote the checks' expected values)."""
    checks = plan.checks
    # Sent even when nothing traced: every check is then listed, and each call of
    # the kernel on a signature that did not trace fails, saying so.
    usable = frozenset(sig for sig, _arrays in checks.signatures
                       if sig in traces and traces[sig].outcome.ran and traces[sig].program is not None)
    if not child.ready():
        return custom_checks.CheckSuite(problem="the grader's child could not start")
    command = {"run": checks.to_child(folder, usable)}
    limit = max(1.0, min(checks.limit_s, deadline - time.monotonic()))
    reply = child.request("checks", command, limit, Discard())
    return custom_checks.read(reply.done, reply.events.get("planned"), reply.failure)


def run_all(schedule: Schedule, traces: dict[int, Trace], spec: ChildSpec, deadline: float,
            shown: Tail, progress=None, checks_folder: str | None = None,
            recorded: Callable[[Run], None] | None = None
            ) -> tuple[Stats, custom_checks.CheckSuite | None]:
    """Send every pending run whose signature traced; answer the others; then
    the custom checks, when planned. ``recorded``: told of each run the child
    ran, once its outcome is recorded (a sweep judges each key as it ends)."""
    for sig, trace in traces.items():
        schedule.record_trace(sig, trace.outcome)
    hidden, out_dir = Discard(), Path(spec.job["out_dir"])
    child = Supervisor(spec, deadline, shown)
    try:
        while (run := schedule.next_run()) is not None and time.monotonic() < deadline:
            if not child.ready():
                break
            if progress is not None:
                progress(_label(run), len(schedule.outcomes), len(schedule.plan.runs))
            command = {"run": run.to_child(schedule.child_inputs(run))}

            def on_event(kind: str, ev: dict, run=run):
                if kind == "traced":
                    return schedule.limit_after_trace(run, ev.get("grid_steps"))
                return None
            reply = child.request(f"r{run.index}", command, run.limit_s,
                                  shown if run.case.visible else hidden, on_event)
            schedule.record(run, _outcome(reply, run, out_dir, schedule))
            if recorded is not None:
                recorded(run)
        custom = None
        if schedule.plan.checks is not None and checks_folder is not None:
            if progress is not None:
                progress("the instructor's checks", len(schedule.outcomes), len(schedule.plan.runs))
            custom = run_checks(child, schedule.plan, traces, checks_folder, deadline)
    finally:
        child.stop()
    if child.stats.load_error is not None or child.stats.tampered:
        # The grader's own child runs no student code: failing to start is the grader's failure.
        raise RuntimeError(f"the grader's child failed: {child.stats.load_error or child.stats.tampered}")
    for run in schedule.pending():
        schedule.record(run, Outcome("skipped", reason="budget"))
    return child.stats, custom
