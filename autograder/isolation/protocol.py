"""The child's event protocol as a small state machine (pure logic).

The parent sends one run at a time; the child answers ``start``, then
``traced`` (the student's function is traced; the kernel runs next), then
``done``; while the student's function is traced, ``at`` says which of its
lines runs (a trace that never ends is shown there). Before the first run it says which JAX it has (``jax``) and either
``ready`` or a ``load`` error. Anything else, in any other order, for any run
but the one sent, is tampering: the event channel is inherited by the process
student code runs in, and only the grader's child code may speak on it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

State = Literal["startup", "idle", "requested", "running", "traced", "failed"]


class Tampered(Exception):
    """An event out of protocol; the message says what, never which run (a
    hidden case's run is not the student's to learn of)."""


@dataclass
class Protocol:
    state: State = "startup"
    current: str | None = None
    jax_version: str | None = None

    @property
    def phase(self) -> str:
        """For limits and messages: startup, between runs, tracing or running."""
        return {"startup": "startup", "idle": "between", "requested": "tracing",
                "running": "tracing", "traced": "running", "failed": "startup"}[self.state]

    def sent(self, run_id: str) -> None:
        if self.state != "idle":
            raise RuntimeError(f"a run may only be sent between runs (state {self.state})")
        self.state, self.current = "requested", run_id

    def receive(self, ev: dict) -> str:
        """Check one event against the protocol; returns its kind."""
        kind = ev.get("event")
        run = ev.get("run")
        ours = run is not None and run == self.current
        if self.state == "startup" and kind == "jax" and self.jax_version is None:
            self.jax_version = str(ev.get("version"))[:40]
        elif self.state == "startup" and kind == "load" and ev.get("status") == "error":
            self.state = "failed"
        elif self.state == "startup" and kind == "ready":
            self.state = "idle"
        elif self.state == "requested" and kind == "start" and ours:
            self.state = "running"
        elif self.state == "running" and kind == "planned" and ours:
            pass                          # custom checks: the tests about to run
        elif self.state == "running" and kind == "at" and ours:
            pass                          # tracing: the student's line it is running now
        elif self.state == "running" and kind == "traced" and ours:
            self.state = "traced"
        elif self.state in ("running", "traced") and kind == "done" and ours:
            self.state, self.current = "idle", None
        else:
            where = "a run was in progress" if self.current else self.phase
            raise Tampered(f"an event out of protocol ({str(kind)[:40]!r} while {where})")
        return str(kind)
