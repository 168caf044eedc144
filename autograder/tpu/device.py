"""The device interface: all the TPU stage knows of the machine it times on.

One small protocol (is a device present and which chip; compile; make inputs
on the device; run; time one call; digest and fetch results) with two
implementations behind it: ``real.TpuDevice`` (JAX on a TPU) and
``fake.FakeDevice`` (scripted outputs and times, for tests and for a dry run
of the stage where no TPU exists). Nothing else in the grader knows which one
it holds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np


@dataclass(frozen=True)
class InputSpec:
    """One argument of the kernel as the device makes it: an array drawn on the
    device (``distribution`` times ``scale``), or a fixed Python float."""
    kind: Literal["array", "float"]
    shape: tuple[int, ...] = ()
    dtype: str = "float32"
    distribution: str = "normal"
    scale: float = 1.0
    value: float | None = None


@dataclass(frozen=True)
class Kernel:
    """A rebuilt kernel to compile: its checked program document and its signature."""
    name: str                           # e.g. "production" or "check:small" (for messages)
    program: bytes                      # the traced program, checked by the grader (schema)
    inputs: tuple[InputSpec, ...]
    output_shape: tuple[int, ...]
    output_dtype: str


@dataclass(frozen=True)
class DeviceInfo:
    kind: Literal["tpu", "fake"]
    chip: str                           # "v5e", ... (JAX's TPU table's names)
    jax: str
    libtpu: str
    hbm_bytes_per_s: float
    bf16_flops_per_s: float


@dataclass(frozen=True)
class Compiled:
    kernel: Kernel
    compile_s: float                    # compile time, recorded apart from the timing
    handle: Any = None                  # the implementation's executable


@dataclass(frozen=True)
class Timed:
    seconds: float
    source: Literal["profiler", "wall"]  # device time from a trace, or wall clock (an upper bound)
    output: Any                         # the call's output, where the device keeps it


class ChipReject(Exception):
    """The TPU compiler refused the kernel; the message is the compiler's."""


class Device(Protocol):
    def info(self) -> DeviceInfo | None:
        """The device here, or None when there is none."""

    def compile(self, kernel: Kernel) -> Compiled:
        """Compile for the chip; raises ChipReject with the compiler's message."""

    def inputs(self, compiled: Compiled, seed: int) -> Any:
        """Fresh inputs made on the device from ``seed`` (never sent from the host)."""

    def run(self, compiled: Compiled, inputs: Any) -> Any:
        """One untimed call (warm-up, checks); returns the output where the device keeps it."""

    def time(self, compiled: Compiled, inputs: Any) -> Timed:
        """One timed call: its time and its output."""

    def device_times(self, compiled: Compiled, inputs: list[Any]) -> list[float] | None:
        """One call per input set under a profiler trace: each call's device time
        read from the trace, or None where the profiler gives none."""

    def digest(self, output: Any, key: int) -> np.ndarray:
        """A small random projection of ``output`` (float64 on the host), computed
        where the output is: ``output @ r`` for a vector ``r`` drawn from ``key``."""

    def fetch(self, value: Any) -> Any:
        """Arrays (or a list of them) to host numpy."""


def projection(key: int, width: int) -> np.ndarray:
    """The vector ``digest`` multiplies by (the host draws the same one to check)."""
    return np.random.default_rng([key, 0xD16E57]).standard_normal(width)


def digest_host(output: np.ndarray, key: int) -> np.ndarray:
    """``digest`` on the host, in float64 (the fake device's, and the check's)."""
    out = np.asarray(output, dtype=np.float64)
    flat = out.reshape(-1, out.shape[-1]) if out.ndim else out.reshape(1, 1)
    return flat @ projection(key, flat.shape[-1])
