"""How far a real TPU's transcendentals are from float64, and what the TPU stage's
chip check allows for them (pure data; no JAX).

Measured on a real TPU v5e (jax 0.10.2, libtpu 0.0.42.1) by the chip check's
``numerics`` phase (``benchmarks/chip_check.py``; docs/chip-data/*numerics.json):
each operation alone in a kernel over 512 x 1024 float32 inputs spread across the
range named, against numpy in float64. Where the result can be near zero (log
near 1, tanh near 0) the figure is the absolute error; elsewhere the relative one.
XLA on a CPU is within a few float32 ulps of float64 for every one of them, so a
kernel right on the interpreters can miss a float32 tolerance on the chip: a
log-sum-exp softmax by up to 4.4e-5 (relative 6-7e-5). The stage's check adds
``ALLOWANCE`` times the largest error of each transcendental a kernel uses to the
relative tolerance (the errors of a chain of them add, and an absolute error in a
logarithm becomes a relative one after exp).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpError:
    error: float          # the largest error seen
    kind: str             # "relative" or "absolute"
    inputs: str           # the range measured


# primitive name -> error, per chip (JAX's chip name). Only v5e was measured.
MEASURED = {
    "v5e": {
        "exp": OpError(6.4e-6, "relative", "[-30, 30]"),
        "exp2": OpError(4.9e-6, "relative", "[-30, 30]"),
        "log": OpError(1.07e-4, "absolute", "[1e-3, 1e3]"),
        "log1p": OpError(1.06e-4, "absolute", "[-0.5, 10]"),
        "tanh": OpError(4.4e-5, "absolute", "[-8, 8]"),
        "logistic": OpError(5.7e-6, "relative", "[-20, 20] (as 1 / (1 + exp(-x)))"),
        "erf": OpError(3.9e-7, "absolute", "[-4, 4]"),
        "sin": OpError(2.0e-7, "relative", "[-10, 10]"),
        "sqrt": OpError(1.9e-7, "relative", "[0, 100]"),
        "rsqrt": OpError(2.5e-7, "relative", "[0.01, 100]"),
        "reciprocal": OpError(1.2e-7, "relative", "[0.01, 100] (as 1 / x)"),
        "div": OpError(1.2e-7, "relative", "[0.01, 100] (as 1 / x)"),
    },
}
MEASURED_WITH = "jax 0.10.2, libtpu 0.0.42.1"
ALLOWANCE = 4.0
# What the chip check may loosen to, at most: a right kernel never needed more; a wrong one is far past it.
MAX_EXTRA_RTOL = 1e-3


def extra_rtol(chip: str, primitives: tuple[str, ...] | frozenset[str]) -> tuple[float, tuple[str, ...]]:
    """(relative tolerance to add, the measured operations it is for) for a kernel using ``primitives``
    on ``chip`` (0.0 and () where nothing was measured)."""
    table = MEASURED.get(chip, {})
    used = tuple(sorted(p for p in set(primitives) if p in table))
    extra = min(ALLOWANCE * sum(table[p].error for p in used), MAX_EXTRA_RTOL)
    return extra, used
