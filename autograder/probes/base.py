"""The probe type and what a probe's judge can read about its runs."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..compare import Comparison, compare
from ..findings import Finding
from ..sandbox import RunOutcome, read_output
from ..spec import Assignment, Case, ProbeRubric


@dataclass(frozen=True)
class Probe:
    name: str
    title: str
    rung: str                       # where its findings are seen
    ids: tuple[str, ...]            # the finding IDs it can produce
    plan: Callable[[Assignment, Case, ProbeRubric], list[dict]]
    judge: Callable[["ProbeResults"], list[Finding]]
    per_case: bool = True           # False: runs once (on the first probe case)


@dataclass
class ProbeResults:
    """Outcomes of one probe's runs on one case, plus the case's correctness runs."""
    assignment: Assignment
    case: Case
    rubric: ProbeRubric
    reference: np.ndarray
    out_dir: Path
    outcomes: dict[str, RunOutcome]          # variant -> outcome
    correctness: dict[str, RunOutcome] = field(default_factory=dict)   # rung -> outcome
    probe_rung: str = "tpu-interpret"        # the rung its findings are seen on
    check: str = ""                          # the probe's name
    # numerics: variant -> (stress case, its float64 reference); inputs other than the case's
    stress: dict[str, tuple[Case, np.ndarray]] = field(default_factory=dict)

    def facts(self, variant: str) -> dict | None:
        o = self.outcomes.get(variant)
        return o.event.get("facts") if o is not None and o.status == "ok" else None

    def output(self, outcome: RunOutcome | None) -> np.ndarray | None:
        if outcome is None:
            return None
        out = read_output(outcome, self.out_dir)
        if isinstance(out, str):
            return None
        shape = self.assignment.shape(self.assignment.output.shape, self.case)
        return out if out.shape == tuple(shape) else None

    def compare(self, out: np.ndarray) -> Comparison:
        a = self.assignment
        return compare(out, self.reference, a.tolerance(self.case.dtype), a.reduction_length(self.case),
                       a.numerics_bound)

    def passes(self, outcome: RunOutcome | None) -> bool | None:
        """True/False when the run produced a comparable output, else None."""
        out = self.output(outcome)
        return None if out is None else self.compare(out).ok

    def finding(self, id: str, message: str, **evidence) -> Finding:
        return Finding.make(id, self.probe_rung, message, case=self.case.name, check=self.check,
                            **evidence)

