"""A scripted device: the TPU stage's tests, and a dry run where no TPU exists.

It computes outputs with a function it is given (the assignment's float64
reference, cast to the output dtype) and returns scripted times, and can be
told to behave like a broken chip or a cheating kernel:

- ``reject``: compiling raises ChipReject with this message;
- ``diverge``: every output is off by this relative amount (a chip that
  disagrees with the interpreters);
- ``replay``: every call returns the first call's output (a kernel that
  caches its answer);
- ``stale``: every call returns the previous call's output;
- ``times``: seconds per timed call, cycled (or a function of the call number);
- ``profiled``: device times the profiler reports, cycled (none: the profiler
  gives none, and says why: ``no_profiler``);
- ``bf16_dots``: float32 products the chip rounds to bfloat16;
- ``kind``, ``primitives``, ``relative``: play a TPU ("tpu") whose kernel uses these
  operations and whose outputs are off by this relative amount (its transcendentals'
  measured error, ``chip_numerics``).
"""
from __future__ import annotations

import itertools
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, Literal

import numpy as np

from ...grading.run.inputs import numpy_dtype, round_to
from .device import ChipReject, Compiled, DeviceInfo, DeviceTimes, Kernel, Timed, check_output, digest_host

Behaviour = Literal["honest", "replay", "stale"]


@dataclass
class Script:
    compute: Callable[..., np.ndarray]                   # args (numpy) -> the correct output
    times: tuple[float, ...] | Callable[[int], float] = (1e-3,)
    reject: str = ""
    diverge: float = 0.0
    behaviour: Behaviour = "honest"
    chip: str = "v5e"
    hbm_bytes_per_s: float = 8.19e11                    # v5e's figures in JAX's table
    bf16_flops_per_s: float = 1.97e14
    compile_s: float = 0.5
    present: bool = True
    profiled: tuple[float, ...] = ()                     # device times a profiler would report (none: no profiler)
    no_profiler: str = "the fake device's script has no profiled times"
    bf16_dots: int = 0
    kind: str = "fake"
    primitives: tuple[str, ...] = ()
    relative: float = 0.0
    calls: list = field(default_factory=list)           # what was asked of it (for tests)


class FakeDevice:
    def __init__(self, script: Script):
        self.script = script
        self._first: dict[str, np.ndarray] = {}
        self._last: dict[str, np.ndarray] = {}
        self._timed = itertools.count()

    def info(self) -> DeviceInfo | None:
        s = self.script
        return DeviceInfo(s.kind, s.chip, "fake", "fake", s.hbm_bytes_per_s, s.bf16_flops_per_s) \
            if s.present else None

    def absent(self) -> str:
        return "" if self.script.present else "the fake device's script says there is no device"

    def compile(self, kernel: Kernel) -> Compiled:
        self.script.calls.append(("compile", kernel.name))
        if self.script.reject:
            raise ChipReject(self.script.reject)
        return Compiled(kernel, self.script.compile_s, bf16_dots=self.script.bf16_dots,
                        primitives=self.script.primitives)

    def inputs(self, compiled: Compiled, seed: int) -> list:
        if not 0 <= seed < 2 ** 32:
            raise ValueError(f"seeds are 32-bit, as on a real device; got {seed}")
        rng = np.random.default_rng([seed, 0x1A9])
        out = []
        for spec in compiled.kernel.inputs:
            if spec.kind == "float":
                out.append(spec.value)
            elif spec.distribution == "uniform":
                out.append(round_to(rng.uniform(-spec.scale, spec.scale, spec.shape), spec.dtype))
            else:
                out.append(round_to(rng.standard_normal(spec.shape) * spec.scale, spec.dtype))
        return out

    def run(self, compiled: Compiled, inputs: list) -> np.ndarray:
        name = compiled.kernel.name
        honest = np.asarray(self.script.compute(*inputs), dtype=np.float64)
        if self.script.diverge:
            honest = honest * (1 + self.script.diverge) + self.script.diverge
        honest = honest * (1 + self.script.relative)
        out = honest.astype(numpy_dtype(compiled.kernel.output_dtype))
        if self.script.behaviour == "replay":
            out = self._first.setdefault(name, out)
        elif self.script.behaviour == "stale":
            previous = self._last.get(name, out)
            self._last[name] = out
            out = previous
        self.script.calls.append(("run", name))
        return check_output(out, compiled.kernel)

    def time(self, compiled: Compiled, inputs: list) -> Timed:
        n = next(self._timed)
        t = self.script.times
        seconds = t(n) if callable(t) else t[n % len(t)]
        return Timed(float(seconds), self.run(compiled, inputs))

    @contextmanager
    def profile(self, compiled: Compiled) -> Iterator["_Profile"]:
        yield _Profile(self.script)

    def digest(self, output: np.ndarray, key: int) -> np.ndarray:
        return digest_host(output, key)

    def fetch(self, value):
        if isinstance(value, list):
            return [v if isinstance(v, float) else np.asarray(v) for v in value]
        return np.asarray(value)


class _Profile:
    def __init__(self, script: Script) -> None:
        self.script = script

    def result(self, calls: int) -> DeviceTimes:
        p = self.script.profiled
        if not p:
            return DeviceTimes(None, self.script.no_profiler)
        return DeviceTimes(tuple(p[i % len(p)] for i in range(calls)))
