"""The tracer: the only process that imports and runs the student's code.

Runs as ``python -I -m autograder.children.tracer JOB_JSON EVENT_FD COMMAND_FD`` as the
student user. It imports the submission, then for each request traces the
entry function on abstract inputs (shapes, dtypes and static floats: never
data) and writes the traced program as data (``pallas_surface.serial``) into
its own folder. It does nothing else: no kernel runs here, and nothing it
says is trusted (the parent checks every document, and the grader's child
rebuilds it without any of this process's Python).
"""
from __future__ import annotations

import inspect
import json
import os
import sys
import threading
import time
import traceback
import types
from pathlib import Path

from ..isolation.channel import Writer, commands

MAX_TRACEBACK_FRAMES = 8
WHERE_EVERY_S = 1.0      # how often a running trace says which student line it is at


def _student_frames(exc: BaseException, student_files: set[str]) -> list[str]:
    """The traceback lines that point into the student's files, innermost last.

    JAX re-raises errors with the user's frames on the ``__cause__`` chain, so
    the whole chain is searched.
    """
    lines, seen, chain = [], set(), []
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        chain.append(e)
        e = e.__cause__ or e.__context__
    for e in reversed(chain):
        for fr in traceback.extract_tb(e.__traceback__):
            if os.path.realpath(fr.filename) in student_files:
                text = f'File "{os.path.basename(fr.filename)}", line {fr.lineno}, in {fr.name}'
                if fr.line:
                    text += f"\n    {fr.line.strip()}"
                if text not in lines:
                    lines.append(text)
    return lines[-MAX_TRACEBACK_FRAMES:]


def _error_event(exc: BaseException, phase: str, student_files: set[str]) -> dict:
    from ..pallas_surface.rungs.rung import unwrap_error
    etype, message = unwrap_error(exc)
    return {"status": "error", "phase": phase, "type": etype, "message": message[:4000],
            "frames": _student_frames(exc, student_files)}


def _exec_module(job: dict, channel: Writer, student_files: set[str]):
    """Import the student's file as a module; None (with a load event sent) if it fails."""
    path, name = job["module_file"], job["module_name"]
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    try:
        exec(compile(Path(path).read_text(encoding="utf-8"), path, "exec"), module.__dict__)
    except SystemExit as e:
        channel.send(event="load", status="error", kind="exit", type="SystemExit",
                     message=f"the submission called exit({e.code!r}) while being imported", frames=[])
        return None
    except SyntaxError as e:
        channel.send(event="load", status="error", kind="syntax", type=type(e).__name__,
                     message=str(e.msg), line=e.lineno, frames=[])
        return None
    except BaseException as e:  # noqa: BLE001 - any student failure is a finding
        ev = _error_event(e, "import", student_files)
        ev.pop("status")
        channel.send(event="load", status="error", kind="import", **ev)
        return None
    return module


def _signature(fn) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return "(...)"


def _load(job: dict, channel: Writer) -> tuple[object, set[str]] | None:
    folder = job["module_dir"]
    student_files = {os.path.realpath(job["module_file"])}
    # Appended, not prepended: the submission's helper modules are importable,
    # but cannot shadow numpy/jax/json or the grader.
    sys.path.append(folder)
    for root, _dirs, files in os.walk(folder):
        student_files.update(os.path.realpath(os.path.join(root, f)) for f in files if f.endswith(".py"))
    module = _exec_module(job, channel, student_files)
    if module is None:
        return None
    fn = getattr(module, job["function"], None)
    if fn is None or not callable(fn):
        defined = sorted(k for k, v in vars(module).items()
                         if callable(v) and not k.startswith("_") and not isinstance(v, type(sys))
                         and getattr(v, "__module__", None) == job["module_name"])
        channel.send(event="load", status="error", kind="missing-function", type="AttributeError",
                     message=f"no function named {job['function']!r}", found=defined[:20], frames=[])
        return None
    try:
        inspect.signature(fn).bind(*range(job["arity"]))
    except TypeError as e:
        channel.send(event="load", status="error", kind="arity", type="TypeError",
                     message=str(e), signature=f"{job['function']}{_signature(fn)}", frames=[])
        return None
    except ValueError:
        pass  # builtins without a signature: let the call decide
    return fn, student_files


def _abstract(inputs: list[dict]):
    """The student's arguments as shapes and dtypes, and the static floats."""
    import jax
    import jax.numpy as jnp
    args, static = [], []
    for i, spec in enumerate(inputs):
        if spec["kind"] == "float":
            args.append(float(spec["value"]))
            static.append(i)
        else:
            args.append(jax.ShapeDtypeStruct(tuple(spec["shape"]), jnp.dtype(spec["dtype"])))
    return args, static


class _Where(threading.Thread):
    """While the student's function is traced, every second: the innermost line of
    the student's files the main thread runs, sent as an ``at`` event when it
    changed. A trace that never ends (an endless loop) is then shown at its line.
    Stopped (and joined) before the trace's ``done``: one writer at a time."""

    def __init__(self, channel: Writer, run_id: str, student_files: set[str]):
        super().__init__(daemon=True)
        self.channel, self.run_id, self.files = channel, run_id, student_files
        self.main = threading.main_thread().ident
        self.stopped = threading.Event()

    def run(self) -> None:
        last = None
        while not self.stopped.wait(WHERE_EVERY_S):
            frame = sys._current_frames().get(self.main)
            while frame is not None and os.path.realpath(frame.f_code.co_filename) not in self.files:
                frame = frame.f_back
            here = (os.path.basename(frame.f_code.co_filename), frame.f_lineno) if frame is not None else None
            if here is not None and here != last and not self.stopped.is_set():
                last = here
                self.channel.send(event="at", run=self.run_id, file=here[0], line=here[1])

    def stop(self) -> None:
        self.stopped.set()
        self.join()


def trace(request: dict, fn, job: dict, student_files: set[str]) -> dict:
    """Trace once and write the program; the done event's fields."""
    from ..pallas_surface.program import schema, serial
    from ..pallas_surface.rungs import rung
    args, static = _abstract(request["inputs"])
    try:
        traced = rung.trace(fn, args, static)
    except BaseException as e:  # noqa: BLE001 - student code raised while tracing
        if isinstance(e, KeyboardInterrupt):
            raise
        return _error_event(e, "trace", student_files)
    try:
        doc = serial.encode(traced, student_files)
    except schema.Refused as e:
        return {"status": "error", "phase": "trace", "type": "ProgramRefused", "message": str(e)[:2000],
                "frames": []}
    path = os.path.join(job["out_dir"], os.path.basename(request["output"]))
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return {"status": "ok", "file": os.path.basename(path), "pallas_calls": traced.pallas_calls}


def main(argv: list[str]) -> int:
    job_path, event_fd, command_fd = argv[0], int(argv[1]), int(argv[2])
    channel = Writer(event_fd)
    requests = commands(command_fd, "trace")
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    t0 = time.monotonic()
    from ..pallas_surface.rungs import rung
    channel.send(event="jax", version=rung.jax_version(), seconds=round(time.monotonic() - t0, 3))
    loaded = _load(job, channel)
    if loaded is None:
        return 0
    fn, student_files = loaded
    channel.send(event="ready", seconds=round(time.monotonic() - t0, 3))
    for request in requests:
        channel.send(event="start", run=request["id"])
        t = time.monotonic()
        where = _Where(channel, request["id"], student_files)
        where.start()
        try:
            ev = trace(request, fn, job, student_files)
        except SystemExit as e:
            ev = {"status": "error", "phase": "trace", "type": "SystemExit",
                  "message": f"the submission called exit({e.code!r})", "frames": []}
        finally:
            where.stop()
        channel.send(event="done", run=request["id"], seconds=round(time.monotonic() - t, 3), **ev)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
