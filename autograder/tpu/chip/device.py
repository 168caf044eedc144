"""The device interface: all the TPU stage knows of the machine it times on.

One small protocol (is a device present and which chip; compile; make inputs
on the device; run; time one call; profile a run of calls; digest and fetch
results) with two implementations behind it: ``real.JaxDevice`` (JAX on a
TPU, or on JAX's CPU or GPU backend with the generic interpreter standing in
for Mosaic: the same code, not a TPU measurement) and ``fake.FakeDevice``
(scripted outputs and times, for tests and for a dry run of the stage).
Nothing else in the grader knows which one it holds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ContextManager, Literal, Protocol

import numpy as np

Kind = Literal["tpu", "cpu", "gpu", "fake"]
SEED_BITS = 32          # jax.random.key keeps the low 32 bits of a seed: every device gets 32-bit seeds


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
    kind: Kind
    chip: str                           # JAX's name for the chip ("v5e", "v4i", ...), "cpu", "gpu", or "unknown"
    jax: str
    libtpu: str
    hbm_bytes_per_s: float              # this device's figures (a megacore device's two cores together);
    bf16_flops_per_s: float             # 0.0 where unknown (no roofline floor then)
    device_kind: str = ""               # the backend's own words ("TPU v5 lite")
    cores: int = 1                      # TensorCores in one JAX device

    @property
    def label(self) -> str:
        """How results measured here are labelled."""
        if self.kind == "cpu" or self.kind == "gpu":
            return (f"not a TPU measurement: JAX's {self.kind.upper()} backend, the generic interpreter standing in "
                    "for Mosaic")
        if self.kind == "fake":
            return "a dry run on a fake device: scripted times, not measured"
        return f"TPU {self.chip}" + (f" ({self.device_kind})" if self.device_kind else "")


@dataclass(frozen=True)
class Compiled:
    kernel: Kernel
    compile_s: float                    # compile time, recorded apart from the timing
    handle: Any = None                  # the implementation's executable
    bf16_dots: int = 0                  # float32 products this device computes from bfloat16-rounded operands
    primitives: tuple[str, ...] = ()    # the operations inside the kernels (the chip check's allowance)


@dataclass(frozen=True)
class Timed:
    seconds: float                      # wall clock around the call (an upper bound on device time)
    output: Any                         # the call's output, where the device keeps it


@dataclass(frozen=True)
class DeviceTimes:
    """What a profiler trace said of a run of calls: each call's device time,
    or None and why not."""
    times: tuple[float, ...] | None
    why: str = ""


class Profile(Protocol):
    def result(self, calls: int) -> DeviceTimes:
        """After the trace: one device time per call of the compiled kernel, in order."""


class ChipReject(Exception):
    """The TPU compiler refused the kernel; the message is the compiler's."""


class CompileFailed(Exception):
    """Compiling failed for a reason other than the TPU compiler refusing the kernel."""


class OutputMismatch(Exception):
    """The executable's output is not the kernel's one array of the declared shape and dtype."""


class Device(Protocol):
    def info(self) -> DeviceInfo | None:
        """The device here, or None when there is none (``absent`` says why)."""

    def absent(self) -> str:
        """Why there is no device ("" when there is one)."""

    def compile(self, kernel: Kernel) -> Compiled:
        """Compile for the chip; ChipReject with the compiler's message when it
        refuses, CompileFailed for anything else."""

    def inputs(self, compiled: Compiled, seed: int) -> Any:
        """Fresh inputs made on the device from a 32-bit ``seed`` (never sent from the host)."""

    def run(self, compiled: Compiled, inputs: Any) -> Any:
        """One untimed call (warm-up, checks); its one output, where the device
        keeps it, of the kernel's shape and dtype (OutputMismatch otherwise)."""

    def time(self, compiled: Compiled, inputs: Any) -> Timed:
        """One timed call: its wall time and its output (as ``run``'s)."""

    def profile(self, compiled: Compiled) -> ContextManager[Profile]:
        """A profiler trace around the calls made inside it; its ``result``
        picks out this kernel's executions by the name of its compiled module."""

    def digest(self, output: Any, key: int) -> np.ndarray:
        """A small random projection of ``output`` (float64 on the host), computed
        where the output is: ``output @ r`` for a vector ``r`` drawn from ``key``."""

    def fetch(self, value: Any) -> Any:
        """An output, or a list of inputs, to host numpy."""


def projection(key: int, width: int) -> np.ndarray:
    """The vector ``digest`` multiplies by (the host draws the same one to check)."""
    return np.random.default_rng([key, 0xD16E57]).standard_normal(width)


def digest_host(output: np.ndarray, key: int) -> np.ndarray:
    """``digest`` on the host, in float64 (the fake device's, and the check's)."""
    out = np.asarray(output, dtype=np.float64)
    flat = out.reshape(-1, out.shape[-1]) if out.ndim else out.reshape(1, 1)
    return flat @ projection(key, flat.shape[-1])


def check_output(value: Any, kernel: Kernel) -> Any:
    """The one output of a call, its shape and dtype asserted (an executable
    returns a list of outputs: a list here is never broadcast as an array)."""
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise OutputMismatch(f"{kernel.name}: the program returned {len(value)} outputs, not one")
        value = value[0]
    shape, dtype = tuple(getattr(value, "shape", ())), str(getattr(value, "dtype", type(value).__name__))
    if shape != tuple(kernel.output_shape) or dtype != kernel.output_dtype:
        raise OutputMismatch(f"{kernel.name}: the output is {dtype}{list(shape)}, not the declared "
                             f"{kernel.output_dtype}{list(kernel.output_shape)}")
    return value
