"""The trace phase: each input signature of the plan traced by the student's
code, in the tracer, to a program the parent has checked.

The tracer is the only process that imports the student's file. It gets
shapes and dtypes (never data) and sends back a traced program as data
(``pallas_surface.schema``). Signatures of visible cases are traced first,
with what the student prints shown; then those only hidden cases use, with
everything the tracer prints from then on dropped (it could print a hidden
case's shapes): output is switched before the first hidden request is sent,
and nothing of the student's runs after the trace phase, so what it learns
there cannot reach anything shown. A signature whose trace raised, hung or
broke a limit is answered once for every run that needs it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ...isolation.channel import open_plain
from ...isolation.outcome import Outcome
from ...isolation.sandbox import ChildSpec, Discard, Reply, Supervisor, Tail
from ...pallas_surface.program import schema
from ..identity import readers
from .plan import Draw, Plan

MAX_HUNG = 2       # traces that hung, none finished, before the rest is not tried


@dataclass(frozen=True)
class Trace:
    """One signature's trace: its outcome, and the checked program's file."""
    outcome: Outcome
    program: Path | None = None


def _read_program(name: object, folder: Path) -> dict | str:
    """The tracer's document: a plain file in its folder, parsed and checked."""
    f = open_plain(name, folder, ".json", schema.MAX_DOCUMENT_BYTES)
    if isinstance(f, str):
        return f"the traced program could not be read: {f}"
    with f:
        data = f.read(schema.MAX_DOCUMENT_BYTES + 1)
    try:
        doc = schema.loads(data)
    except schema.Refused as e:
        return str(e)
    return _analysable(doc)


def _analysable(doc: dict) -> dict | str:
    """The parent's own reading of a checked document (``identity.readers``: its
    canonical form, numbers, sources and likeness), tried here once: should any
    fail, the program is refused. A student's document can cost the student,
    never the grader."""
    why = readers.refusal(doc)
    return doc if why is None else why


def _outcome(reply: Reply, folder: Path, programs: Path, signature: int) -> Trace:
    if reply.failure is not None:
        status = {"budget": "skipped", "tampered": "skipped"}.get(reply.failure, reply.failure)
        return Trace(Outcome(status, seconds=reply.seconds, phase="trace", limit_s=reply.limit_s,
                             returncode=reply.returncode, stderr_tail=reply.stderr_tail,
                             reason=reply.failure if status == "skipped" else "", at=_at(reply.events.get("at"))))
    ev = reply.done
    if ev.get("status") != "ok":
        frames = ev.get("frames") if isinstance(ev.get("frames"), list) else []
        return Trace(Outcome("error", seconds=reply.seconds, phase="trace",
                             error_type=str(ev.get("type", "Exception"))[:200],
                             message=str(ev.get("message", ""))[:4000],
                             frames=tuple(str(f)[:500] for f in frames[:8])))
    doc = _read_program(ev.get("file"), folder)
    if isinstance(doc, str):
        return Trace(Outcome("error", seconds=reply.seconds, phase="trace", error_type="ProgramRefused",
                             message=doc))
    path = programs / f"t{signature}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    path.chmod(0o644)
    return Trace(Outcome("ok", seconds=reply.seconds, phase="trace", traced=True), path)


def _at(ev: object) -> tuple[str, int] | None:
    """The tracer's last word on where the student's code was running (a claim: a
    file name and a line, nothing else kept; the feedback quotes only the student's
    own module, from the grader's copy)."""
    if not isinstance(ev, dict) or not isinstance(ev.get("file"), str) or type(ev.get("line")) is not int:
        return None
    return ev["file"][:200], ev["line"]


def signatures(plan: Plan) -> list[tuple[Draw, bool]]:
    """One draw per signature, and whether only hidden cases use it; visible first."""
    first: dict[int, Draw] = {}
    hidden: dict[int, bool] = {}
    for run in plan.runs:
        sig = run.draw.signature
        first.setdefault(sig, run.draw)
        hidden[sig] = hidden.get(sig, True) and not run.case.visible
    order = sorted(first, key=lambda s: hidden[s])
    return [(first[s], hidden[s]) for s in order]


def trace_all(plan: Plan, spec: ChildSpec, abstract_inputs, programs: Path, deadline: float,
              shown: Tail, limit_s: float, progress=None) -> tuple[dict[int, Trace], list]:
    """Trace every signature; returns the traces and the tracer's stats."""
    traces: dict[int, Trace] = {}
    tracer = Supervisor(spec, deadline, shown)
    if progress is not None:
        progress(f"importing {plan.assignment.entry_file} and tracing it", 0, len(plan.runs))
    try:
        _trace_with(tracer, signatures(plan), traces, abstract_inputs, Path(spec.job["out_dir"]), programs,
                    limit_s, shown)
    finally:
        tracer.stop()
    return traces, [tracer.stats]


def _trace_with(tracer: Supervisor, todo: list[tuple[Draw, bool]], traces: dict, abstract_inputs,
                folder: Path, programs: Path, limit_s: float, shown: Tail) -> None:
    hung = finished = 0
    hidden = Discard()
    for draw, secret in todo:
        sig = draw.signature
        if hung >= MAX_HUNG and not finished:
            traces[sig] = Trace(Outcome("timeout", phase="trace", limit_s=limit_s, not_run=True,
                                        reason=f"{hung} earlier traces hung and none finished"))
            continue
        if not tracer.ready():
            return
        command = {"trace": {"id": f"t{sig}", "inputs": abstract_inputs(draw), "output": f"t{sig}.json"}}
        if secret:
            # From now on, for good: a tracer restarted after a hang prints nowhere either
            # (it could print what the one before it wrote to a file).
            shown = tracer.stdout = hidden
        trace = _outcome(tracer.request(f"t{sig}", command, limit_s, shown), folder, programs, sig)
        traces[sig] = trace
        if trace.outcome.status == "timeout":
            hung += 1
        elif trace.outcome.ran:
            finished += 1
        if tracer.stats.tampered:
            return
