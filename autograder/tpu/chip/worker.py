"""A chip worker: the one process that holds the chip while one submission's
chip work runs (``python -m autograder.tpu.chip.worker FD PLATFORM``).

Why a process of its own: on a real TPU v5e a kernel whose block or DMA index
is out of bounds, or that leaves a DMA unwaited, halts the core
(``RuntimeUnexpectedCoreHalt``), and the process's TPU client is dead from
then on; a wait on a DMA that was never started hangs for good. Whatever the
kernel does, the parent (``chipproc``) sees this process answer, halt, die or
go silent, and the next submission gets a fresh process.

The worker opens the device, says so, then runs jobs one at a time (a prestarted
worker, ``--prestart``, first imports JAX and the stage's modules, says so, and
opens the device only when its parent writes ``open``: the next submission's
worker gets ready while the last one still holds the chip): a JSON
line on stdin names a function (``module:function``, chosen by the parent,
which is the grader: no job comes from a student) and its arguments; the
function gets the device, the arguments and a ``progress`` callback. Events
go back as JSON lines on the inherited descriptor FD, never on stdout, which
a kernel's debug prints may write to. A job whose error says the core halted
ends the worker (its client is dead).

It runs with the parent's interpreter and environment (not ``python -I``): a
TPU host provides JAX where it does (often on PYTHONPATH), and the worker
finds it there. It imports no student code: it rebuilds checked programs.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from dataclasses import asdict
from typing import Any, Callable

from ...pallas_surface import release


def _resolve(path: str) -> Callable[..., Any]:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _open(platform: str) -> tuple[Any, Any, str]:
    """(device, info or None, why not) for ``platform``."""
    try:
        from .real import JaxDevice
    except ImportError as e:        # no JAX where this worker runs: one line, not a traceback
        return None, None, f"JAX cannot be imported by {sys.executable} ({e})"
    device = JaxDevice(platform)
    info = device.info()
    return device, info, "" if info is not None else device.absent()


# What a prestarted worker imports before it is told to open the chip: JAX, Pallas and the
# stage's own modules (a TPU host took seconds over them; the chip itself opens only once the
# worker before has let it go: a second process opening it is refused at once).
WARM = ("jax", "jax.numpy", "jax.experimental.pallas", "jax.experimental.pallas.tpu",
        "autograder.tpu.chip.real", "autograder.tpu.stage.jobs", "autograder.tpu.stage.kernel",
        "autograder.grading.run.draws", "autograder.tpu.chip.interpreter",
        "autograder.pallas_surface.program.rebuild", "autograder.pallas_surface.rungs.rung")


def _warm() -> str:
    """Import what the stage needs short of opening the chip ("" or why an import failed)."""
    for name in WARM:
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - said when the chip is opened (no JAX: one line there)
            return f"{name}: {type(e).__name__}: {e}"
    return ""


def main(argv: list[str]) -> int:
    fd, platform = int(argv[0]), argv[1]
    events = os.fdopen(fd, "w", buffering=1, encoding="utf-8")

    def send(**event: Any) -> None:
        events.write(json.dumps(event, default=str) + "\n")
        events.flush()
    if "--prestart" in argv[2:]:
        t0 = time.perf_counter()
        why = _warm()
        send(event="warm", import_s=round(time.perf_counter() - t0, 3), why=why)
        if sys.stdin.readline().strip() != "open":      # let go before it was needed: nothing held
            return 0
    t0 = time.perf_counter()
    device, info, why = _open(platform)
    if info is None:
        send(event="unavailable", why=why, held=bool(release.TPU_HELD.search(why)))
        return 2
    send(event="ready", info=asdict(info), open_s=round(time.perf_counter() - t0, 3))
    for line in sys.stdin:
        job = json.loads(line)
        jid = job.get("id")

        def progress(jid: Any = jid, **fields: Any) -> None:
            send(event="progress", id=jid, **fields)
        try:
            result = _resolve(job["job"])(device, job.get("args") or {}, progress)
            send(event="result", id=jid, result=result)
        except BaseException as e:  # noqa: BLE001 - every failure is the job's answer, said to the parent
            text = f"{type(e).__name__}: {e}"
            halted = bool(release.CHIP_HALT.search(text))
            send(event="error", id=jid, type=type(e).__name__, message=text[:6000], halt=halted,
                 trace=traceback.format_exc()[-4000:])
            if halted:
                return 3        # the TPU client is dead: a fresh process takes the next job
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
