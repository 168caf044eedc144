"""How a kernel is timed so that a student cannot game it (pure; no JAX).

At least ``min_calls`` calls and ``min_total_s`` of timed work per shape,
stopping once the relative standard error of the mean falls below
``target_rse`` or a cap (calls or seconds) is hit; the median is the shape's
time, and shapes combine by geometric mean. A run that stops at the cap with
the error still above the target is "noisy" and held for review.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Callable, Literal


@dataclass(frozen=True)
class Rule:
    min_calls: int = 10
    min_total_s: float = 0.1
    target_rse: float = 0.01
    max_calls: int = 2000
    max_total_s: float = 20.0
    warmup: int = 3
    sample: int = 3                 # timed outputs checked (the same calls in every kernel of a run; stage)

    def noisy(self, stopped: str, rse: float) -> bool:
        """Stopped at the cap with the error still above the target (a kernel
        so fast that the cap comes first is not noisy when its error is small)."""
        return stopped == "cap" and rse >= self.target_rse


DEFAULT = Rule()


@dataclass(frozen=True)
class Samples:
    times: tuple[float, ...]
    stopped: Literal["converged", "cap"]
    rule: Rule = Rule()

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def rse(self) -> float:
        return rse(self.times)

    @property
    def noisy(self) -> bool:
        return self.rule.noisy(self.stopped, self.rse)


def rse(times: tuple[float, ...] | list[float]) -> float:
    """Relative standard error of the mean."""
    if len(times) < 2:
        return math.inf
    mean = statistics.fmean(times)
    return statistics.stdev(times) / math.sqrt(len(times)) / mean if mean > 0 else math.inf


def measure(call: Callable[[int], float], rule: Rule = Rule()) -> Samples:
    """Call ``call(i)`` (one timed call on fresh inputs; returns its seconds)
    until the stopping rule holds."""
    times: list[float] = []
    while True:
        times.append(float(call(len(times))))
        total = sum(times)
        if len(times) >= rule.min_calls and total >= rule.min_total_s and rse(times) < rule.target_rse:
            return Samples(tuple(times), "converged", rule)
        if len(times) >= rule.max_calls or total >= rule.max_total_s:
            return Samples(tuple(times), "cap", rule)
