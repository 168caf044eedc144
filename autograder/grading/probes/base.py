"""The probe type, and what a probe's judge reads about its runs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from ...findings import Finding
from ...isolation.outcome import Outcome
from ...spec import Assignment, Case, ProbeRubric, ProbeTerms
from ..judge.compare import Comparison, compare
from ..run.plan import Draw, Plan, Run, Variant

# The seeds the grid-order probe tries when its table names none; the races
# probe's two-core run uses the first, so one run serves both (plan.build).
DEFAULT_SEEDS = (1, 2, 3)


@dataclass(frozen=True)
class Exposes:
    """What a run of a probe exposes when it hangs, or raises what no error rule reads,
    where the case's own test on the same rung finished and passed: a probe run is
    that test run with one switch turned, so the kernel depends on what it changed.
    ``variant``: the run it is said of ("": every other run of the probe)."""
    finding: str        # the finding ID it is charged as
    changed: str        # what the run changed, as "the kernel hung <changed>" ends
    variant: str = ""


@dataclass(frozen=True)
class Probe:
    """A probe: the terms the spec reader is handed (``spec.ProbeTerms``: name,
    title, rung, IDs, keys and how to read them), its planner and judge, its note
    for the handout's glossary (what the check does, after its title), and what a
    run of it that hangs or raises exposes. The module that defines it is the
    whole probe: ``probes.REGISTRY`` lists it, and the spec reader is handed its terms."""
    terms: ProbeTerms
    plan: Callable[[Assignment, Case, ProbeRubric, int], tuple[Variant, ...]]
    judge: Callable[["ProbeResults"], list[Finding]]
    note: str
    exposes: tuple[Exposes, ...] = ()
    # Why its judge withheld a verdict on what its runs showed (None: it judged): the
    # test then says so ("not run, not charged: ..."), never that it found nothing.
    aside: Callable[["ProbeResults"], str | None] | None = None

    def __post_init__(self) -> None:
        if not self.note:
            raise ValueError(f"probe {self.terms.name}: needs a glossary note")
        for e in self.exposes:
            if e.finding not in self.terms.ids:
                raise ValueError(f"probe {self.terms.name}: a run that hangs can only expose an ID the probe "
                                 f"produces ({list(self.terms.ids)}); got {e.finding!r}")

    def exposed_by(self, variant: str) -> Exposes | None:
        """What this variant's run exposes when it hangs or raises (its own entry, else the probe's)."""
        return (next((e for e in self.exposes if e.variant == variant), None)
                or next((e for e in self.exposes if e.variant == ""), None))

    @property
    def name(self) -> str:
        return self.terms.name

    @property
    def title(self) -> str:
        return self.terms.title

    @property
    def rung(self) -> str:
        return self.terms.rung

    @property
    def per_case(self) -> bool:
        return self.terms.per_case

    @property
    def dynamic(self) -> bool:
        return self.terms.dynamic


@dataclass(frozen=True)
class ProbeResults:
    """One probe's runs on one case and their outcomes, the case's correctness
    outcomes, and the float64 reference of every draw involved."""
    plan: Plan
    probe: Probe
    case: Case
    rubric: ProbeRubric
    runs: Mapping[str, Run]                 # variant -> run
    outcomes: Mapping[str, Outcome]         # variant -> outcome (present for runs that happened)
    correctness: Mapping[str, Outcome]      # rung -> outcome of the case's correctness run
    references: Mapping[Draw, np.ndarray]

    @property
    def assignment(self) -> Assignment:
        return self.plan.assignment

    def facts(self, variant: str):
        o = self.outcomes.get(variant)
        return o.facts if o is not None and o.status == "ok" else None

    def output(self, outcome: Outcome | None) -> np.ndarray | None:
        return None if outcome is None else outcome.output

    def compare(self, out: np.ndarray, run: Run | None = None) -> Comparison:
        a = self.assignment
        draw = run.draw if run is not None else self.plan.test_run(self.case.name, self.plan.rungs[0]).draw
        case = draw.case
        return compare(out, self.references[draw], a.tolerance(case), a.reduction_length(case),
                       a.numerics_bound)

    def passes(self, outcome: Outcome | None, run: Run | None = None) -> bool | None:
        """True/False when the run produced a comparable output, else None."""
        out = self.output(outcome)
        return None if out is None else self.compare(out, run).ok

    def finding(self, id: str, message: str, variant: str | None = None, **evidence) -> Finding:
        run = self.runs.get(variant) if variant else None
        return Finding.make(id, self.probe.rung, message, case=self.case.name, check=self.probe.name,
                            run=run.index if run is not None else None, **evidence)
