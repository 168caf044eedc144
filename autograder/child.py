"""The child process: imports the submission and runs its kernel, one run at a time.

Runs as ``python -I -m autograder.child JOB_JSON EVENT_FD COMMAND_FD`` (see
``confinement.python_command``; ``--check`` only proves it can start). The
parent sends runs as JSON lines on the command pipe (``plan.Run.to_child``:
opaque ids, no case or probe names). Inputs are ``.npy`` files read with
allow_pickle=False; outputs are written as ``.npy``; events go out as JSON
lines on the event pipe; what the student prints goes to stdout/stderr, which
the parent treats as data, never as protocol.
"""
from __future__ import annotations

import inspect
import json
import os
import sys
import time
import traceback
import types
from pathlib import Path

import numpy as np

MAX_TRACEBACK_FRAMES = 8


class Channel:
    def __init__(self, fd: int):
        # Keep a private duplicate: a student who closes fd 3 does not close ours.
        self._f = os.fdopen(os.dup(fd), "w", buffering=1, encoding="utf-8")
        os.close(fd)
        os.set_inheritable(self._f.fileno(), False)   # not passed on by subprocess/exec
        # A process the submission forks (os.fork, multiprocessing) must not be
        # able to write events: close the channel in every forked child.
        os.register_at_fork(after_in_child=self._close_in_fork)

    def _close_in_fork(self) -> None:
        try:
            os.close(self._f.fileno())
        except OSError:
            pass

    def send(self, **event) -> None:
        self._f.write(json.dumps(event) + "\n")
        self._f.flush()


def _commands(fd: int):
    """Commands from the parent, one JSON object a line, until exit or EOF."""
    f = os.fdopen(os.dup(fd), "r", encoding="utf-8")
    os.close(fd)
    os.set_inheritable(f.fileno(), False)
    for line in f:
        cmd = json.loads(line)
        if cmd.get("exit"):
            return
        yield cmd["run"]


def _student_frames(exc: BaseException, student_files: set[str]) -> list[str]:
    """The traceback lines that point into the student's files, innermost last.

    JAX re-raises kernel errors with the user's frames on the ``__cause__``
    chain, so the whole chain is searched.
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
    from .pallas_surface.rung import unwrap_error
    etype, message = unwrap_error(exc)
    return {"status": "error", "phase": phase, "type": etype, "message": message[:4000],
            "frames": _student_frames(exc, student_files)}


def _exec_module(job: dict, channel: Channel, student_files: set[str]):
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


def _load(job: dict, channel: Channel) -> tuple[object, set[str]] | None:
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


def _signature(fn) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return "(...)"


def _inputs(job_inputs: list[dict]):
    """Arguments for the student's function: arrays from .npy files, abstract
    shapes (the production size: traced only), and static Python floats."""
    import jax
    import jax.numpy as jnp
    args, static = [], []
    for i, spec in enumerate(job_inputs):
        if spec["kind"] == "float":
            args.append(float(spec["value"]))
            static.append(i)
        elif spec["kind"] == "array":
            arr = np.load(spec["file"], allow_pickle=False)
            args.append(jnp.asarray(arr, dtype=jnp.dtype(spec["dtype"])))
        else:
            args.append(jax.ShapeDtypeStruct(tuple(spec["shape"]), jnp.dtype(spec["dtype"])))
    return args, static


def _save_output(out, path: str) -> dict:
    """Save one output array; report its real type, dtype and shape."""
    import jax
    if not isinstance(out, (jax.Array, np.ndarray)):
        return {"status": "bad-type", "type": type(out).__module__ + "." + type(out).__qualname__}
    dtype = str(out.dtype)
    arr = np.asarray(out)
    if dtype in ("bfloat16", "float16"):
        arr = arr.astype(np.float32)
    elif arr.dtype.kind not in "fiub":
        return {"status": "bad-type", "type": f"array of {dtype}"}
    np.save(path, np.ascontiguousarray(arr), allow_pickle=False)
    return {"status": "ok", "file": os.path.basename(path), "dtype": dtype, "shape": list(out.shape)}


class Executor:
    """Runs the parent's runs against the student's function: one trace per
    input signature, one compiled executable per (trace, rung, parameters)."""

    def __init__(self, fn, job: dict, student_files: set[str], channel: Channel):
        from .pallas_surface.rung import Executables
        self.fn, self.job, self.student_files, self.channel = fn, job, student_files, channel
        self.executables = Executables()
        self.traces: dict[str, object] = {}
        self.args_key, self.args = None, None

    def _args(self, run: dict):
        # Runs of a draw share its files; only the latest draw's arrays are kept.
        key = json.dumps(run["inputs"], sort_keys=True)
        if key != self.args_key:
            self.args_key, self.args = key, _inputs(run["inputs"])
        return self.args

    def _trace(self, run: dict, args, static):
        from .pallas_surface import analysis, rung
        traced = self.traces.get(run["trace"])
        if traced is None:
            traced = self.traces[run["trace"]] = rung.trace(self.fn, args, static)
        self.channel.send(event="traced", run=run["id"], pallas_calls=traced.pallas_calls,
                          grid_steps=analysis.grid_steps(traced))
        return traced

    def execute(self, run: dict) -> dict:
        args, static = self._args(run)
        try:
            traced = self._trace(run, args, static)
        except BaseException as e:  # noqa: BLE001 - student code raised while tracing
            if isinstance(e, KeyboardInterrupt):
                raise
            return _error_event(e, "trace", self.student_files)
        arrays = [a for i, a in enumerate(args) if i not in static]
        if run["kind"] == "static":
            try:
                return {"status": "ok", "facts": _analysis(run["analysis"], traced, arrays)}
            except BaseException as e:  # noqa: BLE001
                if isinstance(e, KeyboardInterrupt):
                    raise
                return _error_event(e, "analysis", self.student_files)
        return self._kernel(run, traced, arrays)

    def _kernel(self, run: dict, traced, arrays) -> dict:
        from contextlib import ExitStack

        from .pallas_surface import hooks, rung
        params, order, extra = dict(run.get("params") or {}), [], {}
        if run.get("record"):
            params["grid_point_recorder"] = hooks.order_recorder(order)
        if run.get("races"):
            params.update(hooks.race_params())
        with ExitStack() as stack:
            stack.enter_context(hooks.fill(run.get("fill")))
            captured = stack.enter_context(hooks.capture()) if run.get("capture") else None
            try:
                out = self.executables.run(traced, arrays, run["rung"], params)
                error = None
            except BaseException as e:  # noqa: BLE001
                if isinstance(e, KeyboardInterrupt):
                    raise
                error = _error_event(e, "run", self.student_files)
            if run.get("races"):
                extra["races_found"] = hooks.races_found()
        rung.reset_state()
        if run.get("record"):
            extra["order"] = order[:4096]
        if captured is not None:
            extra["captured"] = captured.text[-4000:]
        if error is not None:
            return {**error, **extra}
        saved = _save_output(out, os.path.join(self.job["out_dir"], run["output"]))
        return {"pallas_calls": traced.pallas_calls, **saved, **extra}


def _analysis(name: str, traced, arrays) -> dict:
    """A static analysis: JSON facts about the traced kernel; nothing runs."""
    from .pallas_surface import analysis
    if name == "index-maps":
        return analysis.index_maps(traced, arrays)
    if name == "compile":
        return analysis.lower_for_tpu(traced, arrays)
    if name == "vmem":
        return analysis.vmem_budget(traced)
    if name == "structure":
        return analysis.structure(traced)
    raise ValueError(f"unknown analysis {name!r}")


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        return 0
    job_path, event_fd, command_fd = argv[0], int(argv[1]), int(argv[2])
    channel = Channel(event_fd)
    commands = _commands(command_fd)
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    t0 = time.monotonic()
    from .pallas_surface import hooks, rung
    hooks.install_runtime_fills()     # before anything is traced (see hooks)
    channel.send(event="jax", version=rung.jax_version(), seconds=round(time.monotonic() - t0, 3))
    loaded = _load(job, channel)
    if loaded is None:
        return 0
    fn, student_files = loaded
    channel.send(event="ready", seconds=round(time.monotonic() - t0, 3))
    executor = Executor(fn, job, student_files, channel)
    for run in commands:
        channel.send(event="start", run=run["id"])
        t = time.monotonic()
        try:
            ev = executor.execute(run)
        except SystemExit as e:
            ev = {"status": "error", "phase": "run", "type": "SystemExit",
                  "message": f"the submission called exit({e.code!r})", "frames": []}
        channel.send(event="done", run=run["id"], seconds=round(time.monotonic() - t, 3), **ev)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
