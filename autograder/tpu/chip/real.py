"""The device interface on JAX: a TPU, or JAX's CPU (or GPU) backend as a
stand-in for one (``.venv/bin/pip install '.[tpu]'`` in a pallas-autograder
checkout pins ``jax[tpu]`` at the grader's JAX).

The kernel is rebuilt from its checked program (``pallas_surface.rebuild``),
never from student code. On a TPU every ``pallas_call`` is lowered by Mosaic
(``interpret=False``) and compiled. On the CPU or GPU backend the kernel is
first cross-lowered by Pallas's TPU lowering (a refusal there is a refusal on
a TPU too), then run on the generic interpreter with float32 products
rounded as a TPU's default precision rounds them: the rest (inputs drawn on
the device from a seed, the timed loop, the profiler trace and its parsing,
the on-device digest) is the code a TPU runs. Its times are the
interpreter's, labelled "not a TPU measurement".

Device time comes from a ``jax.profiler`` trace around the timed calls
themselves: the kernel's compiled module has a name of its own, and the trace
gives each execution of that module (a device plane's "XLA Modules" line on
a TPU or GPU; on CPU the ops XLA tags with the module and run).
"""
from __future__ import annotations

import hashlib
import re
import tempfile
import time
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from ...pallas_surface import release
from .device import (
    ChipReject,
    Compiled,
    CompileFailed,
    DeviceInfo,
    DeviceTimes,
    Kernel,
    Timed,
    check_output,
    projection,
)

PLATFORMS = ("tpu", "cpu", "gpu")


def backend(platform: str) -> tuple[list, str]:
    """The platform's devices, or none and why (another process holding the
    TPU is told apart from no TPU at all)."""
    try:
        import jax
        return list(jax.devices(platform)), ""
    except Exception as e:  # noqa: BLE001 - the backend's own words say why
        text = f"{type(e).__name__}: {e}"
        if platform == "tpu" and release.TPU_HELD.search(text):
            return [], (f"the TPU is held by another process ({text.strip()[:400]}); stop that process (`sudo lsof "
                        "-w /dev/accel*` names it) and run again")
        return [], f"no {platform.upper()} is visible to JAX here ({text.strip()[:400]})"


class JaxDevice:
    def __init__(self, platform: str = "tpu") -> None:
        if platform not in PLATFORMS:
            raise ValueError(f"platform must be one of {PLATFORMS}; got {platform!r}")
        self.platform = platform
        if platform != "tpu":
            # The stand-in runs a student's pl.debug_check as a plain check on the generic
            # interpreter, which XLA lowers only with this config on (as in the grader's child).
            from ...pallas_surface.rungs import hooks
            hooks.install_runtime_checks()
        self._devices, self._why = backend(platform)
        self._makers: dict = {}

    def absent(self) -> str:
        return self._why

    def info(self) -> DeviceInfo | None:
        if not self._devices:
            return None
        import jax
        dev = self._devices[0]
        kind, cores = str(dev.device_kind), int(getattr(dev, "num_cores", 1) or 1)
        chip, hbm, flops = self.platform, 0.0, 0.0
        if self.platform == "tpu":
            from ...pallas_surface.rungs import chips
            chip = chips.chip_of(kind) or "unknown"
            try:
                f = chips.figures(chip, cores) if chip != "unknown" else None
            except Exception:  # noqa: BLE001 - a chip JAX names but has no figures for: timed, with no floor
                f = None
            hbm, flops = (f.hbm_bytes_per_s, f.bf16_flops_per_s) if f else (0.0, 0.0)
        return DeviceInfo(self.platform, chip, jax.__version__, _libtpu(), hbm, flops, kind, cores)

    def compile(self, kernel: Kernel) -> Compiled:
        import jax

        from ...pallas_surface.program import rebuild, schema
        from ...pallas_surface.program.jaxprs import kernel_primitives
        from ...pallas_surface.rungs import precision, rung
        # Static floats are part of the checked program (as in the grader's child): arrays only.
        specs = [jax.ShapeDtypeStruct(s.shape, _dtype(s.dtype)) for s in kernel.inputs if s.kind == "array"]
        name = "pallas_stage_" + hashlib.sha256(kernel.program + kernel.name.encode()).hexdigest()[:12]
        with jax.default_device(self._devices[0]):
            try:
                fn = rebuild.load(schema.loads(kernel.program)).function()
                traced = rung.trace(fn, specs)
                # Off a TPU the lowering check needs the program traced for one (as the grader's
                # compile check traces it): index maps with // or % ask the traced mesh for the chip.
                for_tpu = traced if self.platform == "tpu" else rung.trace_for_tpu(fn, specs)
            except Exception as e:  # noqa: BLE001 - the grader's rebuild, not the TPU compiler
                raise CompileFailed(f"rebuilding the checked program failed: {type(e).__name__}: {e}") from None
            t0 = time.perf_counter()
            exe = self._executable(traced, for_tpu, specs, name)
            compile_s = time.perf_counter() - t0
            maker = self._maker(kernel)
        module = _module_name(exe) or f"jit_{name}"
        return Compiled(kernel, compile_s, (exe, maker, module), precision.bf16_dots(traced.closed),
                        kernel_primitives(traced.closed))

    def _maker(self, kernel: Kernel) -> Any:
        """The compiled input maker of this signature (one per size for a whole class)."""
        import jax
        key = kernel.inputs
        if key not in self._makers:
            self._makers[key] = jax.jit(_maker(kernel)).lower(jax.ShapeDtypeStruct((), np.uint32)).compile()
        return self._makers[key]

    def _executable(self, traced: Any, for_tpu: Any, specs: list, name: str) -> Any:
        """Mosaic's executable on a TPU; elsewhere the generic interpreter's, once
        Pallas's TPU lowering has taken the kernel (``for_tpu``: traced for a TPU)."""
        from ...pallas_surface.rungs import rung
        try:
            if self.platform == "tpu":
                return rung.compiled_for_tpu(traced, specs, name)
            rung.lowered_for_tpu(for_tpu, specs, name)
        except rung.Refused as e:
            raise ChipReject(str(e)) from None
        except Exception as e:  # noqa: BLE001 - out of memory, the runtime: not the compiler's refusal
            raise CompileFailed(f"{type(e).__name__}: {e}") from None
        options = release.CPU_TRACE_OPTIONS if self.platform == "cpu" else None
        try:
            return rung.forced(traced, "generic", name=name, options=options, tpu_precision=True) \
                .lower(*specs).compile()
        except Exception as e:  # noqa: BLE001 - the stand-in's own compile failing
            raise CompileFailed(f"{type(e).__name__}: {e}") from None

    def inputs(self, compiled: Compiled, seed: int) -> list:
        import jax
        if not 0 <= seed < 2 ** 32:
            raise ValueError(f"seeds are 32-bit (jax.random.key keeps only the low 32 bits); got {seed}")
        _exe, maker, _module = compiled.handle
        arrays = iter(jax.block_until_ready(maker(np.uint32(seed))))
        return [s.value if s.kind == "float" else next(arrays) for s in compiled.kernel.inputs]

    def run(self, compiled: Compiled, inputs: list) -> Any:
        import jax
        exe, _maker, _module = compiled.handle
        return check_output(jax.block_until_ready(exe(*_arrays(inputs))), compiled.kernel)

    def time(self, compiled: Compiled, inputs: list) -> Timed:
        import jax
        exe, _maker, _module = compiled.handle
        arrays = _arrays(inputs)
        t0 = time.perf_counter()
        out = jax.block_until_ready(exe(*arrays))
        wall = time.perf_counter() - t0
        return Timed(wall, check_output(out, compiled.kernel))

    @contextmanager
    def profile(self, compiled: Compiled) -> Iterator["Trace"]:
        import jax
        _exe, _maker, module = compiled.handle
        trace = Trace(module)
        with tempfile.TemporaryDirectory(prefix="pallas-profile-") as folder:   # deleted, whatever happens
            try:
                options = jax.profiler.ProfileOptions()
                # Python frames and most host events make a large trace and say nothing of device time;
                # level 1 keeps the host's critical events, XLA:CPU's tagged ops among them.
                options.python_tracer_level = 0
                options.host_tracer_level = 1
                jax.profiler.start_trace(folder, profiler_options=options)
            except Exception as e:  # noqa: BLE001 - no profiler: the calls still run, and the caller is told
                trace.failed = f"the profiler did not start: {type(e).__name__}: {e}"
                yield trace
                return
            try:
                yield trace
            finally:
                try:
                    jax.profiler.stop_trace()
                except Exception as e:  # noqa: BLE001
                    trace.failed = f"the profiler did not stop: {type(e).__name__}: {e}"
            if not trace.failed:
                trace.read(folder)

    def digest(self, output: Any, key: int) -> np.ndarray:
        import jax.numpy as jnp
        flat = output.reshape(-1, output.shape[-1]) if output.ndim else output.reshape(1, 1)
        r = jnp.asarray(projection(key, flat.shape[-1]), jnp.float32)
        return np.asarray(_project(flat, r), dtype=np.float64)

    def fetch(self, value: Any) -> Any:
        if isinstance(value, list):
            return [v if isinstance(v, float) else np.asarray(v, dtype=np.float32) for v in value]
        return np.asarray(value, dtype=np.float32)


def _arrays(inputs: list) -> list:
    """The executable's arguments: the arrays (static floats are in the program)."""
    return [v for v in inputs if not isinstance(v, float)]


def _project(flat: Any, r: Any) -> Any:
    """The digest's product, in float32 at full precision (a TPU's default
    would round both sides to bfloat16 and loosen the check); one jitted
    function for the process, compiled once per shape."""
    import jax
    import jax.numpy as jnp
    if not _PROJECT:
        _PROJECT.append(jax.jit(lambda f, v: jnp.matmul(f.astype(jnp.float32), v,
                                                        precision=jax.lax.Precision.HIGHEST)))
    return _PROJECT[0](flat, r)


_PROJECT: list = []


def _maker(kernel: Kernel):
    """The kernel's array inputs drawn from one 32-bit seed, on the device."""
    import jax
    import jax.numpy as jnp

    def make(seed):
        key = jax.random.key(seed)
        out = []
        for i, s in enumerate(kernel.inputs):
            if s.kind != "array":
                continue
            k = jax.random.fold_in(key, i)
            draw = jax.random.uniform(k, s.shape, jnp.float32, -1, 1) if s.distribution == "uniform" \
                else jax.random.normal(k, s.shape, jnp.float32)
            out.append((draw * s.scale).astype(_dtype(s.dtype)))
        return out
    return make


def _module_name(exe: Any) -> str | None:
    """The compiled module's name, as the profiler names its executions."""
    try:
        found = re.match(r"\s*HloModule\s+([^\s,]+)", exe.as_text())
    except Exception:  # noqa: BLE001 - some backends give no text; the jit name stands
        return None
    return found.group(1) if found else None


def _libtpu() -> str:
    try:
        from importlib.metadata import version
        return version("libtpu")
    except Exception:  # noqa: BLE001 - not installed: a CPU or GPU stand-in
        return "none"


def _dtype(name: str):
    import jax.numpy as jnp
    return {"bfloat16": jnp.bfloat16, "float16": jnp.float16, "int32": jnp.int32}.get(name, jnp.float32)


class Trace:
    """What one profiler trace said of one kernel's executions."""

    def __init__(self, module: str) -> None:
        self.module = module
        self.failed = ""
        self.runs: list[float] | None = None

    def read(self, folder: str) -> None:
        import glob
        files = glob.glob(f"{folder}/**/*.xplane.pb", recursive=True)
        if not files:
            self.failed = f"the profiler wrote no trace in {folder}"
            return
        try:
            self.runs = module_runs(files[0], self.module)
        except Exception as e:  # noqa: BLE001 - an unreadable trace is said, not hidden
            self.failed = f"the trace could not be read: {type(e).__name__}: {e}"

    def result(self, calls: int) -> DeviceTimes:
        if self.failed:
            return DeviceTimes(None, self.failed)
        runs = self.runs or []
        if len(runs) != calls:
            return DeviceTimes(None, f"the trace holds {len(runs)} executions of {self.module} for {calls} calls")
        return DeviceTimes(tuple(runs))


def _matches(module: str):
    named = re.compile(re.escape(module) + r"(\(\d+\))?$")
    return lambda event, stats: bool(named.match(event.name)) or stats.get("hlo_module") == module


def module_runs(xplane: str, module: str) -> list[float]:
    """Seconds of each execution of ``module`` in a profiler trace, in order:
    the events of a device plane's "XLA Modules" line named after it (TPU,
    GPU; one plane's, where several show it, as the two TensorCores of a
    megacore device may), else the ops tagged with it grouped by run
    (XLA:CPU), each run from its first op's start to its last op's end."""
    from jax.profiler import ProfileData
    ours = _matches(module)
    planes: dict[str, list[tuple[float, float]]] = {}
    runs: dict[Any, list[float]] = {}
    for plane in ProfileData.from_file(xplane).planes:
        for line in plane.lines:
            for e in line.events:
                stats = dict(e.stats)
                if not ours(e, stats):
                    continue
                if line.name == release.MODULES_LINE:
                    planes.setdefault(plane.name, []).append((e.start_ns, e.duration_ns * 1e-9))
                elif "run_id" in stats:
                    span = runs.setdefault(stats["run_id"], [e.start_ns, e.start_ns + e.duration_ns])
                    span[0], span[1] = min(span[0], e.start_ns), max(span[1], e.start_ns + e.duration_ns)
    if planes:
        return [seconds for _start, seconds in sorted(planes[min(planes)])]
    return [(end - start) * 1e-9 for start, end in sorted(runs.values())]
