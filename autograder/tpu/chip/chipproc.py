"""The parent's side of a chip worker (``worker``): start it, give it one job,
and read what became of it, whatever the kernel did to the chip.

A job ends one of five ways (``Outcome.status``):

- ``result``: the job's answer;
- ``error``: the job raised (the message is its exception's);
- ``halt``: the chip stopped the core (the chip's own message; the worker
  exits, since its TPU client is dead);
- ``hang``: no event within the phase's limit (a wait on a DMA never started
  hangs the chip for good), or the job's deadline passed: the worker's whole
  process group is killed;
- ``died``: the worker ended without an answer (its exit status and the last
  lines it printed; a halt said only there is still a ``halt``).

Every phase the worker reports (opening the chip, compiling, a timed call)
has its own silence limit (``Limits``), so a hang costs the phase's limit,
not the whole deadline. Nothing here imports JAX: the parent never holds the
chip, which takes one process at a time.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

from ...pallas_surface import release

Status = Literal["result", "error", "halt", "hang", "died"]
TAIL_CHARS = 8000
HELD_RETRY_S = 3.0          # a chip just freed by a killed process answers again 5-10 s later (measured)


@dataclass(frozen=True)
class Limits:
    """Seconds of silence allowed per phase the worker reports, and per job in all."""
    open_s: float = 180.0        # importing JAX and opening the chip (15 s measured on a v5e)
    compile_s: float = 300.0     # Mosaic's compile of one program
    call_s: float = 60.0         # one call on the chip (a timed call, a check)
    host_s: float = 600.0        # host work between calls: float64 references, the interpreters' check
    job_s: float = 1800.0        # one job from start to answer

    def silence(self, phase: str) -> float:
        return {"open": self.open_s, "compile": self.compile_s, "host": self.host_s}.get(phase, self.call_s)


@dataclass(frozen=True)
class Outcome:
    status: Status
    result: Any = None
    message: str = ""
    seconds: float = 0.0
    phase: dict = field(default_factory=dict)     # the last progress event: what the job was doing
    tail: str = ""                                # the worker's last printed lines (stderr, then stdout)

    def to_json(self) -> dict:
        return {"status": self.status, "message": self.message, "seconds": round(self.seconds, 3),
                "phase": self.phase, "tail": self.tail[-2000:]}


class Unavailable(RuntimeError):
    """No chip worker could open the device (the message says why)."""


def _drain(stream, tail: deque) -> None:
    for line in iter(stream.readline, ""):
        tail.append(line)


def _events(fd: int, q: queue.Queue) -> None:
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                q.put(json.loads(line))
            except ValueError:
                q.put({"event": "garbled", "line": line[:500]})
    q.put({"event": "eof"})     # the worker closed its end: it exited


def package_root() -> str:
    """The folder holding the ``autograder`` package this process runs."""
    return str(Path(__file__).resolve().parent.parent.parent)


class ChipWorker:
    """One worker process. ``open()`` waits until it holds the device; ``call``
    runs one job; ``close()`` ends it. Not thread-safe: one job at a time."""

    def __init__(self, platform: str, limits: Limits = Limits(), env: dict | None = None) -> None:
        self.platform, self.limits = platform, limits
        self.env = env
        self.info: dict | None = None
        self.open_s = 0.0
        self._proc: subprocess.Popen | None = None
        self._q: queue.Queue = queue.Queue()
        self._tail: deque = deque(maxlen=200)
        self._drains: list[threading.Thread] = []
        self._jobs = 0
        self._prestarted = False
        self.warm_s = 0.0            # a prestarted worker's imports (before it was asked to open)

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _start(self, prestart: bool = False) -> None:
        read, write = os.pipe()
        env = {**os.environ, **(self.env or {})}
        # The worker imports this very package, from wherever it is (a checkout, an install).
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root(), env.get("PYTHONPATH", "")) if p)
        if self.platform != "tpu":
            env["JAX_PLATFORMS"] = self.platform       # a rehearsal never takes the chip
        self._q, self._tail, self._drains = queue.Queue(), deque(maxlen=200), []
        cmd = [sys.executable, "-m", "autograder.tpu.chip.worker", str(write), self.platform]
        self._proc = subprocess.Popen(cmd + (["--prestart"] if prestart else []), stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                      pass_fds=(write,), start_new_session=True)
        os.close(write)
        threading.Thread(target=_events, args=(read, self._q), daemon=True).start()
        for stream in (self._proc.stderr, self._proc.stdout):
            self._drains.append(threading.Thread(target=_drain, args=(stream, self._tail), daemon=True))
            self._drains[-1].start()

    def prestart(self) -> None:
        """Start the worker without opening the chip: it imports JAX and the stage's modules and
        waits; ``open()`` then only opens the device (measured on a v5e: docs/tpu-runs.md)."""
        self._start(prestart=True)
        self._prestarted = True

    def _go(self, deadline: float) -> dict | None:
        """Tell a prestarted worker to open the chip once it is warm (None: it never was)."""
        event = self._next(self.limits.open_s, deadline)
        if not event or event.get("event") != "warm":
            return event
        self.warm_s = float(event.get("import_s") or 0.0)
        try:
            self._proc.stdin.write("open\n")
            self._proc.stdin.flush()
        except OSError:
            return None
        return self._next(self.limits.open_s, deadline)

    def open(self, retry_s: float = 60.0) -> dict:
        """Start the worker (unless ``prestart`` did) and wait until it holds the device; its
        DeviceInfo as a dict. A chip held by another process (one just killed, say) is asked
        again for ``retry_s``."""
        t0 = time.monotonic()
        while True:
            if self._prestarted and self.alive:
                event = self._go(t0 + self.limits.open_s)
            else:
                self._start()
                event = self._next(self.limits.open_s, t0 + self.limits.open_s)
            self._prestarted = False
            if event and event.get("event") == "ready":
                self.info, self.open_s = event["info"], time.monotonic() - t0
                return self.info
            self.kill()
            why = (event or {}).get("why") or f"the worker did not start: {self.tail()[-1500:]}"
            if (event or {}).get("held") and time.monotonic() - t0 < retry_s:
                time.sleep(HELD_RETRY_S)
                continue
            raise Unavailable(why)

    def _next(self, silence: float, deadline: float) -> dict | None:
        """The next event, or None at the silence limit, the deadline or the worker's end."""
        wait = max(0.0, min(silence, deadline - time.monotonic()))
        try:
            return self._q.get(timeout=wait)
        except queue.Empty:
            return None

    def tail(self) -> str:
        return "".join(self._tail)[-TAIL_CHARS:]

    def call(self, job: str, args: dict, on_progress: Callable[[dict], None] | None = None) -> Outcome:
        """Run ``job`` (``module:function``) with ``args``; see the module docstring for the outcomes."""
        if not self.alive:
            raise RuntimeError("the chip worker is not running: open() it first")
        self._jobs += 1
        jid, t0 = self._jobs, time.monotonic()
        deadline = t0 + self.limits.job_s
        self._proc.stdin.write(json.dumps({"id": jid, "job": job, "args": args}) + "\n")
        self._proc.stdin.flush()
        phase: dict = {"phase": "start"}
        while True:
            event = self._next(self.limits.silence(phase.get("phase", "")), deadline)
            took = time.monotonic() - t0
            if event is None or event.get("event") == "eof":
                return self._ended(phase, took, silent=event is None)
            kind = event.get("event")
            if kind == "progress":
                phase = {k: v for k, v in event.items() if k not in ("event", "id")}
                if on_progress:
                    on_progress(phase)
            elif kind == "result":
                return Outcome("result", event.get("result"), "", took, phase)
            elif kind == "error":
                halted = event.get("halt") or bool(release.CHIP_HALT.search(event.get("message", "")))
                if halted:
                    self._wait_exit()
                return Outcome("halt" if halted else "error", None, event.get("message", ""), took, phase,
                               (event.get("trace") or "") + self.tail())

    def _ended(self, phase: dict, took: float, silent: bool) -> Outcome:
        """No event: the worker went silent (hang) or ended (died, or halted and said so only in its output)."""
        if silent and self.alive:
            self.kill()
            what = ", ".join(f"{k} {v}" for k, v in phase.items())
            limit = self.limits.silence(phase.get("phase", ""))
            return Outcome("hang", None, f"no answer from the chip worker for {min(limit, took):.0f} s ({what}); "
                           "its process group was killed", took, phase, self.tail())
        self._wait_exit()
        tail = self.tail()
        code = self._proc.returncode if self._proc else None
        found = release.CHIP_HALT.search(tail)
        if found:
            line = next((ln for ln in tail.splitlines() if release.CHIP_HALT.search(ln)), found.group(0))
            return Outcome("halt", None, line.strip()[:2000], took, phase, tail)
        return Outcome("died", None, f"the chip worker ended with exit status {code} and no answer", took,
                       phase, tail)

    def _wait_exit(self, timeout: float = 20.0) -> None:
        try:
            self._proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        # What it printed last (a halt's message, on stderr) may still be in the pipes:
        # the tail is read once they are drained (a descendant holding them open: 2 s).
        for drain in self._drains:
            drain.join(timeout=2.0)

    def kill(self) -> None:
        if self._proc is None:
            return
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def close(self) -> None:
        """End the worker (it exits when its stdin closes); killed if it does not."""
        if self._proc is None:
            return
        if self.alive:
            try:
                self._proc.stdin.close()
            except OSError:
                pass
            self._wait_exit(timeout=30.0)
        self.kill()

    def __enter__(self) -> "ChipWorker":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
