"""What a probe tells the spec reader: its name, its keys, and how to read them.

A probe is three things: a name the spec uses (with the keys of its
``[probes.<name>]`` table and how they are read), a planner of runs, and a judge
of their outcomes. All three live in the probe's own module
(``autograder.grading.probes``), so a new probe is one file plus its
registration. The spec layer sits below grading and cannot import those
modules: it defines only the shape of the terms (``ProbeTerms``), and
``tables.load`` is handed the vocabulary (``grading.assignments`` hands it the
registry's), so the reader never names a probe itself.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Callable, Literal

from .reader import TableReader

ProbeRung = Literal["static", "generic", "tpu-interpret"]


@dataclass(frozen=True)
class SpecContext:
    """What a probe's own keys are checked against (read before the probes table)."""
    dims: tuple
    tolerances: dict
    inputs: tuple


@dataclass(frozen=True)
class ProbeTerms:
    name: str
    title: str
    rung: ProbeRung                 # where its findings are seen
    ids: tuple[str, ...]            # the finding IDs it can produce
    per_case: bool = True           # False: runs once (on the first probe case)
    # The keys of its [probes.<name>] table beyond points, visibility and gates,
    # and the reader that turns them into the rubric's settings.
    keys: frozenset[str] = frozenset()
    read_settings: Callable[[TableReader, SpecContext], object] | None = None
    # It examines the kernel's behaviour: while the work is done outside the
    # kernel it has examined a copy, and earns nothing ([structure] probes_need_kernel).
    examines_kernel: bool = True

    @property
    def dynamic(self) -> bool:
        """Runs the kernel (as opposed to reading the traced program)."""
        return self.rung != "static"


# The probes a spec may name, by name (``grading.probes.TERMS``).
Vocabulary = Mapping[str, ProbeTerms]
