"""The device interface on a real TPU (JAX's TPU backend; ``pip install
'pallas-autograder[tpu]'`` pins ``jax[tpu]`` at the grader's JAX).

The kernel is rebuilt from its checked program (``pallas_surface.rebuild``),
never from student code, and compiled with every ``pallas_call`` lowered by
Mosaic (``interpret=False``). Inputs are drawn on the device with
``jax.random`` from a seed. A timed call's time is the wall time around
``block_until_ready``, an upper bound (it includes dispatch); the device time
of a batch of calls is then read from a profiler trace (``jax.profiler``: the
TPU plane's "XLA Modules" events), which the stage prefers when it has one
event per call. Untestable on
machines without a TPU: tests/test_tpu_stage.py marks its tests ``tpu`` and
skips them with the reason.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from .device import ChipReject, Compiled, DeviceInfo, Kernel, Timed, projection


def tpu_devices() -> list:
    try:
        import jax
        return list(jax.devices("tpu"))
    except Exception:  # noqa: BLE001 - no TPU backend: no device
        return []


def chip_name(device_kind: str) -> str:
    """'TPU v5 lite' -> 'v5e' (JAX's table's names)."""
    kind = device_kind.lower()
    for needle, name in (("v6", "v6e"), ("v5 lite", "v5e"), ("v5e", "v5e"), ("v5p", "v5p"), ("v5", "v5p"),
                         ("v4", "v4")):
        if needle in kind:
            return name
    return kind


class TpuDevice:
    def __init__(self) -> None:
        self._devices = tpu_devices()

    def info(self) -> DeviceInfo | None:
        if not self._devices:
            return None
        import jax

        from ..pallas_surface import cost
        chip = chip_name(self._devices[0].device_kind)
        facts = cost.chip_facts(chip)
        try:
            from importlib.metadata import version
            libtpu = version("libtpu")
        except Exception:  # noqa: BLE001
            libtpu = "unknown"
        return DeviceInfo("tpu", chip, jax.__version__, libtpu, float(facts["hbm_bytes_per_s"]),
                          float(facts["bf16_flops_per_s"]))

    def compile(self, kernel: Kernel) -> Compiled:
        import jax

        from ..pallas_surface import rebuild, rung, schema
        specs = [s.value if s.kind == "float" else jax.ShapeDtypeStruct(s.shape, _dtype(s.dtype))
                 for s in kernel.inputs]
        fn = rebuild.load(schema.loads(kernel.program)).function()
        traced = rung.trace(fn, specs)
        arrays = [i for i, s in enumerate(kernel.inputs) if s.kind == "array"]
        jitted = rung.forced(traced, "tpu")
        t0 = time.perf_counter()
        try:
            exe = jitted.lower(*specs).compile()
        except Exception as e:  # noqa: BLE001 - Mosaic's refusal, in its own words
            raise ChipReject(f"{type(e).__name__}: {e}") from None
        return Compiled(kernel, time.perf_counter() - t0, (exe, arrays))

    def inputs(self, compiled: Compiled, seed: int) -> list:
        import jax
        import jax.numpy as jnp
        key = jax.random.key(seed)
        out = []
        for i, s in enumerate(compiled.kernel.inputs):
            if s.kind == "float":
                out.append(s.value)
                continue
            k = jax.random.fold_in(key, i)
            draw = jax.random.uniform(k, s.shape, jnp.float32, -1, 1) if s.distribution == "uniform" \
                else jax.random.normal(k, s.shape, jnp.float32)
            out.append(jax.block_until_ready((draw * s.scale).astype(_dtype(s.dtype))))
        return out

    def run(self, compiled: Compiled, inputs: list) -> Any:
        import jax
        exe, _arrays = compiled.handle
        return jax.block_until_ready(exe(*inputs))

    def time(self, compiled: Compiled, inputs: list) -> Timed:
        import jax
        exe, _arrays = compiled.handle
        t0 = time.perf_counter()
        out = jax.block_until_ready(exe(*inputs))
        wall = time.perf_counter() - t0
        return Timed(wall, "wall", out)

    def device_times(self, compiled: Compiled, inputs: list) -> list[float] | None:
        import glob
        import tempfile

        import jax
        exe, _arrays = compiled.handle
        folder = tempfile.mkdtemp(prefix="pallas-profile-")
        try:
            with jax.profiler.trace(folder):
                for x in inputs:
                    jax.block_until_ready(exe(*x))
            files = glob.glob(f"{folder}/**/*.xplane.pb", recursive=True)
            return module_times(files[0], len(inputs)) if files else None
        except Exception:  # noqa: BLE001 - no profiler here: the wall times stand
            return None

    def digest(self, output: Any, key: int) -> np.ndarray:
        import jax.numpy as jnp
        out = output[0] if isinstance(output, (list, tuple)) else output
        flat = out.astype(jnp.float32).reshape(-1, out.shape[-1])
        r = jnp.asarray(projection(key, flat.shape[-1]), jnp.float32)
        return np.asarray(flat @ r, dtype=np.float64)

    def fetch(self, value: Any) -> Any:
        if isinstance(value, list):
            return [v if isinstance(v, float) else np.asarray(v, dtype=np.float32) for v in value]
        out = value[0] if isinstance(value, (list, tuple)) else value
        return np.asarray(out, dtype=np.float32)


def _dtype(name: str):
    import jax.numpy as jnp
    return {"bfloat16": jnp.bfloat16, "float16": jnp.float16, "int32": jnp.int32}.get(name, jnp.float32)


def module_times(xplane: str, calls: int) -> list[float] | None:
    """Seconds of each compiled-module execution on the first TPU plane of a
    profiler trace; None unless there is exactly one per call."""
    from jax.profiler import ProfileData
    data = ProfileData.from_file(xplane)
    for plane in data.planes:
        if not plane.name.startswith("/device:TPU:"):
            continue
        for line in plane.lines:
            if line.name == "XLA Modules":
                times = [e.duration_ns * 1e-9 for e in line.events]
                return times if len(times) == calls else None
    return None
