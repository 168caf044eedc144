"""The grader's child: rebuilds traced programs and runs them on every rung.

Runs as ``python -I -m autograder.children.grader JOB_JSON EVENT_FD COMMAND_FD`` (see
``confinement.python_command``; ``--check`` only proves it can start), as a
user of its own. It never imports or runs student code: a run names a program
(a document the tracer wrote and the parent checked, rebuilt here by
``pallas_surface.rebuild``) and the inputs to run it on (``.npy`` files read
with allow_pickle=False, in a folder the student's processes cannot read).
Outputs are written as ``.npy`` into a folder only this user can write.
Events go out as JSON lines on the event pipe.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np

from ..isolation.channel import Writer, commands
from ..isolation.outcome import NO_SHUFFLED_AXIS


def _error_event(exc: BaseException, phase: str) -> dict:
    from ..pallas_surface.rungs.rung import unwrap_error
    etype, message = unwrap_error(exc)
    return {"status": "error", "phase": phase, "type": etype, "message": message[:4000], "frames": []}


def _inputs(job_inputs: list[dict]) -> list:
    """The program's array arguments: from .npy files, or abstract shapes (the
    production size: traced only). Static floats are part of the program."""
    import jax
    import jax.numpy as jnp
    args = []
    for spec in job_inputs:
        if spec["kind"] == "array":
            arr = np.load(spec["file"], allow_pickle=False)
            args.append(jnp.asarray(arr, dtype=jnp.dtype(spec["dtype"])))
        elif spec["kind"] == "abstract":
            args.append(jax.ShapeDtypeStruct(tuple(spec["shape"]), jnp.dtype(spec["dtype"])))
    return args


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


def _analysis(name: str, traced, arrays) -> dict:
    """A static analysis: JSON facts about the traced kernel; nothing runs."""
    from ..pallas_surface.static import analysis
    if name == "index-maps":
        return analysis.index_maps(traced, arrays)
    if name == "compile":
        return analysis.lower_for_tpu(traced, arrays)
    if name == "vmem":
        return analysis.vmem_budget(traced)
    if name == "structure":
        return analysis.structure(traced)
    if name.startswith("speed:"):
        from ..pallas_surface.static import cost
        return cost.speed_facts(traced, name.split(":", 1)[1], arrays)
    raise ValueError(f"unknown analysis {name!r}")


class Executor:
    """Runs the parent's runs: one rebuilt program and trace per signature, one
    compiled executable per (trace, rung, parameters)."""

    def __init__(self, job: dict, channel: Writer):
        from ..pallas_surface.rungs.rung import Executables
        self.job, self.channel = job, channel
        self.executables = Executables()
        self.programs: dict[str, object] = {}
        self.traces: dict[str, object] = {}
        self.args_key, self.args = None, None

    def _args(self, run: dict):
        # Runs of a draw share its files; only the latest draw's arrays are kept.
        key = json.dumps(run["inputs"], sort_keys=True)
        if key != self.args_key:
            self.args_key, self.args = key, _inputs(run["inputs"])
        return self.args

    def _traced(self, key: str, args):
        """The rebuilt program of one signature, traced once."""
        from ..pallas_surface.program import rebuild, schema
        from ..pallas_surface.rungs import rung
        from ..pallas_surface.static import analysis
        traced = self.traces.get(key)
        if traced is None:
            if key not in self.programs:
                data = (Path(self.job["programs"]) / f"{os.path.basename(key)}.json").read_bytes()
                self.programs[key] = rebuild.load(schema.loads(data)).function()
            traced = rung.trace(self.programs[key], args)
            # What no run reads but the analyses do (an operand's shape in its block
            # mapping) must be the program's own: a forged one is refused, not analysed.
            wrong = analysis.described_operands(traced)
            if wrong:
                raise schema.Refused(wrong)
            self.traces[key] = traced
        return traced

    def _traced_for_tpu(self, key: str, args):
        """The signature's program traced again under the TPU target (the compile
        check lowers this one: see ``rung.trace_for_tpu``)."""
        from ..pallas_surface.rungs import rung
        self._traced(key, args)
        return rung.trace_for_tpu(self.programs[key], args)

    def _trace(self, run: dict, args):
        from ..pallas_surface.static import analysis
        traced = self._traced(run["trace"], args)
        self.channel.send(event="traced", run=run["id"], pallas_calls=traced.pallas_calls,
                          grid_steps=analysis.grid_steps(traced))
        return traced

    def checks(self, run: dict) -> dict:
        """The instructor's custom checks (``check_suite``), the kernel at hand."""
        from . import check_suite
        keys = [tuple((tuple(i["shape"]), i["dtype"]) for i in s["inputs"]) for s in run["signatures"]]
        sigs = {key: s["trace"] for key, s in zip(keys, run["signatures"])}
        numbers = {key: s.get("signature") for key, s in zip(keys, run["signatures"])}

        def kernel(arrays, rung):
            key = tuple((tuple(np.shape(a)), str(getattr(a, "dtype", np.asarray(a).dtype))) for a in arrays)
            check_suite.KernelTestCase.last_call = (numbers.get(key), rung)
            return self._check_kernel(sigs, arrays, rung)
        check_suite.KernelTestCase._kernel = kernel
        check_suite.KernelTestCase.signatures = tuple(sigs)
        check_suite.KernelTestCase.rungs = tuple(run["rungs"])
        try:
            suite = check_suite.load(Path(run["folder"]), run["file"])
        except Exception as e:  # noqa: BLE001 - a broken check file is reported as such
            return {"status": "error", "phase": "load", "type": type(e).__name__,
                    "message": check_suite.error_text(e), "frames": []}
        tests = check_suite.flatten(suite)
        self.channel.send(event="planned", run=run["id"], tests=check_suite.planned(tests))
        results, board = check_suite.run(suite, tests)
        return {"status": "ok", "checks": results, "leaderboard": board}

    def _check_kernel(self, sigs: dict, arrays, rung_name: str):
        import jax.numpy as jnp

        from ..pallas_surface.rungs import hooks, rung
        from . import check_suite
        if rung_name not in ("generic", "tpu-interpret"):
            raise ValueError(f"rung must be 'generic' or 'tpu-interpret'; got {rung_name!r}")
        key = tuple((tuple(np.shape(a)), str(getattr(a, "dtype", np.asarray(a).dtype))) for a in arrays)
        if key in sigs and sigs[key] is None:
            raise check_suite.KernelError("the submission did not trace on this graded case's inputs "
                                          "(see the tests above), so there is no kernel to check")
        if key not in sigs:
            # Not listing the signatures: some are hidden cases' shapes.
            raise check_suite.KernelError(
                f"no traced program takes inputs {key}: checks may call the kernel only with "
                f"the shapes and dtypes of a graded case (KernelTestCase.signatures)")
        args = [jnp.asarray(a, dtype=jnp.dtype(dtype)) for a, (_s, dtype) in zip(arrays, key)]
        try:
            # JAX logs a failed callback's whole traceback to stderr: the check's output
            # would open with the interpreter's internals; the message below says it all.
            with contextlib.redirect_stderr(io.StringIO()), hooks.switches(rung_name, {}, None, None) as static:
                out = self.executables.run(self._traced(sigs[key], args), args, rung_name, static, False)
            return np.asarray(out)
        except Exception as e:  # noqa: BLE001 - the kernel's error fails the check that called it
            etype, message = rung.unwrap_error(e)
            raise check_suite.KernelError(f"the kernel raised {etype}: {message[:1500]}") from None
        finally:
            rung.reset_state()

    def execute(self, run: dict) -> dict:
        from ..pallas_surface.program import schema
        if run["kind"] == "checks":
            return self.checks(run)
        args = self._args(run)
        try:
            traced = self._trace(run, args)
        except schema.Refused as e:
            return {"status": "error", "phase": "trace", "type": "ProgramRefused", "message": str(e)[:2000],
                    "frames": []}
        except Exception as e:  # noqa: BLE001 - a program that does not rebuild fails its runs
            return _error_event(e, "trace")
        if run["kind"] == "static":
            try:
                if run["analysis"] == "compile":
                    traced = self._traced_for_tpu(run["trace"], args)
                return {"status": "ok", "facts": _analysis(run["analysis"], traced, args)}
            except Exception as e:  # noqa: BLE001 - an analysis that fails is reported, not fatal
                return _error_event(e, "analysis")
        return self._kernel(run, traced, args)

    def _kernel(self, run: dict, traced, arrays) -> dict:
        from ..pallas_surface.rungs import hooks, rung
        from ..pallas_surface.static import analysis
        if run.get("in_order") and not analysis.shuffled_axes(traced):
            # The run in order would be the run as marked: it says nothing new.
            return {"status": "error", "phase": "run", "type": NO_SHUFFLED_AXIS,
                    "message": "no grid axis of more than one point is marked parallel", "frames": []}
        params, order, extra = dict(run.get("params") or {}), [], {}
        with ExitStack() as stack:
            static = stack.enter_context(hooks.switches(run["rung"], params, run.get("fill"),
                                                        order if run.get("record") else None,
                                                        bool(run.get("races")), run.get("pad_fill")))
            captured = stack.enter_context(hooks.capture()) if run.get("capture") else None
            try:
                out = self.executables.run(traced, arrays, run["rung"], static, bool(run.get("in_order")))
                error = None
            except Exception as e:  # noqa: BLE001 - the kernel's error is the run's outcome
                error = _error_event(e, "run")
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


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        return 0
    job_path, event_fd, command_fd = argv[0], int(argv[1]), int(argv[2])
    channel = Writer(event_fd)
    runs = commands(command_fd, "run")
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    t0 = time.monotonic()
    from ..pallas_surface.rungs import hooks, rung
    hooks.install()     # before anything is traced (see hooks)
    channel.send(event="jax", version=rung.jax_version(), seconds=round(time.monotonic() - t0, 3))
    channel.send(event="ready", seconds=round(time.monotonic() - t0, 3))
    executor = Executor(job, channel)
    for run in runs:
        channel.send(event="start", run=run["id"])
        t = time.monotonic()
        ev = executor.execute(run)
        channel.send(event="done", run=run["id"], seconds=round(time.monotonic() - t, 3), **ev)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
