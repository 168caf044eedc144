"""The child process: imports the submission and runs its kernel on each rung.

Runs as ``python -I -m autograder.child JOB_JSON FD``. It reads inputs as
``.npy`` (allow_pickle=False), writes outputs as ``.npy`` and reports events as
JSON lines on the inherited pipe ``FD``; what the student prints goes to
stdout/stderr, which the parent treats as data, never as protocol. The parent
never unpickles anything this process writes.
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
    from . import pallas_surface as ps
    etype, message = ps.unwrap_error(exc)
    return {"status": "error", "phase": phase, "type": etype, "message": message[:4000],
            "frames": _student_frames(exc, student_files)}


def _load(job: dict, channel: Channel) -> tuple[object, set[str]] | None:
    path = job["module_file"]
    student_files = {os.path.realpath(path)}
    folder = job["module_dir"]
    # Appended, not prepended: the submission's helper modules are importable,
    # but cannot shadow numpy/jax/json or the grader.
    sys.path.append(folder)
    for root, _dirs, files in os.walk(folder):
        student_files.update(os.path.realpath(os.path.join(root, f)) for f in files if f.endswith(".py"))
    name = job["module_name"]
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    try:
        source = Path(path).read_text(encoding="utf-8")
        code = compile(source, path, "exec")
        exec(code, module.__dict__)
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
    fn = getattr(module, job["function"], None)
    if fn is None or not callable(fn):
        defined = sorted(k for k, v in vars(module).items()
                         if callable(v) and not k.startswith("_") and not isinstance(v, type(sys))
                         and getattr(v, "__module__", None) == name)
        channel.send(event="load", status="error", kind="missing-function",
                     type="AttributeError",
                     message=f"no function named {job['function']!r}",
                     found=defined[:20], frames=[])
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
    shapes (for the VMEM budget, traced only), and static Python floats."""
    import jax
    import jax.numpy as jnp
    args, static = [], []
    for i, spec in enumerate(job_inputs):
        if spec["kind"] == "float":
            args.append(float(spec["value"]))
            static.append(i)
        elif "file" in spec:
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
    return {"status": "ok", "file": path, "dtype": dtype, "shape": list(out.shape)}


def _static(run: dict, fn, args, static, traced, student_files) -> dict:
    """A static analysis: JSON facts about the traced kernel; nothing runs."""
    from . import pallas_surface as ps
    analysis = run["analysis"]
    if analysis == "index-maps":
        arrays = [a for i, a in enumerate(args) if i not in static]
        sites = ps.call_sites(traced, arrays)
        return {"calls": [ps.scan_index_maps(site) for site in sites]}
    if analysis == "compile":
        return ps.lower_for_tpu(fn, args, static)
    if analysis == "vmem":
        return ps.vmem_budget(fn, args, static)
    if analysis == "structure":
        return ps.structure(traced)
    raise ValueError(f"unknown analysis {analysis!r}")


def _execute(run: dict, fn, job: dict, cache: dict, student_files: set[str]) -> dict:
    from . import pallas_surface as ps
    # Runs of a case share its trace (it depends only on shapes and dtypes); the
    # data differs between rungs (the parent draws fresh data per run), so the
    # inputs are keyed by their files. Only the latest draw is kept.
    files = json.dumps(run["inputs"], sort_keys=True)
    if cache.get("files") != files:
        cache["files"], cache["args"] = files, _inputs(run["inputs"])
    args, static = cache["args"]
    key = run["case"]
    try:
        traced = cache.get(("trace", key))
        if traced is None:
            traced = cache[("trace", key)] = ps.trace(fn, args, static)
    except BaseException as e:  # noqa: BLE001 - student code raised while tracing
        if isinstance(e, KeyboardInterrupt):
            raise
        return _error_event(e, "trace", student_files)
    if run.get("kind") == "static":
        try:
            return {"status": "ok", "facts": _static(run, fn, args, static, traced, student_files)}
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            return _error_event(e, "analysis", student_files)
    arrays = [a for i, a in enumerate(args) if i not in static]
    extra: dict = {}
    order: list = []
    params = dict(run.get("params") or {})
    if run.get("record"):
        params["grid_point_recorder"] = ps.order_recorder(order)
    options = ps.run_options(fill=run.get("fill"), capture=run.get("capture", False))
    try:
        with options:
            out = ps.run(traced, arrays, run["rung"], params)
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            raise
        ev = _error_event(e, "run", student_files)
        ev.update(_run_extras(run, order, options.opts))
        ps.reset_state()
        return ev
    extra.update(_run_extras(run, order, options.opts))
    ps.reset_state()
    saved = _save_output(out, os.path.join(job["out_dir"], run["id_file"] + ".npy"))
    return {"pallas_calls": traced.pallas_calls, **saved, **extra}


def _run_extras(run: dict, order: list, opts) -> dict:
    from . import pallas_surface as ps
    extra: dict = {}
    if run.get("record"):
        extra["order"] = order[:4096]
    if run.get("races"):
        extra["races_found"] = ps.races_found()
    if run.get("capture"):
        extra["captured"] = opts.captured[-4000:]
    return extra


def main(argv: list[str]) -> int:
    job_path, fd = argv[0], int(argv[1])
    channel = Channel(fd)
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    t0 = time.monotonic()
    from . import pallas_surface as ps
    channel.send(event="jax", version=ps.jax_version(), seconds=round(time.monotonic() - t0, 3))
    loaded = _load(job, channel)
    if loaded is None:
        return 0
    fn, student_files = loaded
    channel.send(event="ready", seconds=round(time.monotonic() - t0, 3))
    cache: dict = {}
    for run in job["runs"]:
        channel.send(event="start", run=run["id"])
        t = time.monotonic()
        try:
            ev = _execute(run, fn, job, cache, student_files)
        except SystemExit as e:
            ev = {"status": "error", "phase": "run", "type": "SystemExit",
                  "message": f"the submission called exit({e.code!r})", "frames": []}
        channel.send(event="done", run=run["id"], seconds=round(time.monotonic() - t, 3), **ev)
    channel.send(event="finished")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
