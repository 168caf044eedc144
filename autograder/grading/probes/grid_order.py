"""Grid order: TPU interpret mode with random seeds (parallel axes shuffled)
and two cores, the order each run used recorded."""
from __future__ import annotations

from dataclasses import replace

from ...findings import Finding
from ...spec import vocabulary
from ..run.plan import Variant, numerics_case
from .base import Exposes, Probe, ProbeResults
from .races import RACES_2CORES


def plan_grid_order(assignment, case, rubric, run_key) -> tuple[Variant, ...]:
    """Every seed, on one core and two, on the probe case (the spec's first ``probe_cases``
    name, else its first case); on every other graded case, visible or secret, the first
    seed on two cores, which is also the races probe's two-core run. Why not every seed on
    every case: in the emulated Gradescope container this probe's four runs on each of
    matmul's four cases were 16 of its 40 s; an order bug shows under any shuffle, and
    the case a kernel is wrong on is still run shuffled."""
    seeds = tuple(rubric.settings or vocabulary.DEFAULT_SEEDS)
    if not _probe_case(assignment, case):
        return tuple(v for v in _variants(assignment, seeds[:1]) if v.name.endswith("-2cores"))
    return _variants(assignment, seeds)


def _probe_case(assignment, case) -> bool:
    return case.name == numerics_case(assignment, assignment.cases)[0].name


def _variants(assignment, seeds) -> tuple[Variant, ...]:
    out = []
    for seed in seeds:
        out.append(Variant(f"seed-{seed}", "tpu-interpret", record=True,
                           params=(("random_seed", seed),)))
        two = Variant(f"seed-{seed}-2cores", "tpu-interpret", record=True,
                      params=(("num_cores_or_threads", 2), ("random_seed", seed)))
        # The races probe's two-core run is this one with the race detector on (it
        # changes nothing a kernel computes): one run serves both (plan.build).
        if two.params == RACES_2CORES.params and assignment.probe("races") is not None:
            two = replace(two, races=True, capture=True)
        out.append(two)
    return tuple(out)


# Grid points of the recorded order kept as evidence: a block map draws each one's step.
MAX_ORDER = 1024


def _grid(order: list) -> list[int]:
    """The grid the recorded run walked (every point of it ran, once per point)."""
    points = [p for p, _core in order]
    return [max(p[a] for p in points) + 1 for a in range(len(points[0]))] if points else []


def _reordered(order) -> bool:
    """Did this run really use another order than row-major on one core?"""
    points = [tuple(p[0]) for p in order]
    return points != sorted(points) or any(p[1] for p in order)


def judge_grid_order(r: ProbeResults) -> list[Finding]:
    generic_ok = r.passes(r.correctness.get("generic"))
    results = {v: (o, r.passes(o)) for v, o in r.outcomes.items()}
    # A run that fails in plain row-major order fails for another reason (the
    # correctness runs report it), not because of the order.
    bad = [(v, o) for v, (o, ok) in results.items() if ok is False and _reordered(o.order)]
    good = [v for v, (o, ok) in results.items() if ok]
    if not bad or not (generic_ok or good):
        return []
    variant, outcome = bad[0]
    params = r.runs[variant].params_dict
    seed, cores = params["random_seed"], params.get("num_cores_or_threads", 1)
    cmp = r.compare(r.output(outcome))
    order = [[list(p), c] for p, c in outcome.order]
    return [r.finding("grid-order-dependence",
                      f"the result is wrong when grid points run in another order (random_seed={seed}, "
                      f"{cores} core{'s' if cores > 1 else ''}) though it is right in row-major order",
                      variant=variant, seed=seed, cores=cores, order=order[:MAX_ORDER],
                      order_length=len(order), grid=_grid(order), failing_variants=[v for v, _ in bad],
                      passing_variants=good, generic_passed=bool(generic_ok),
                      mismatch_text=f"{cmp.mismatches} of {cmp.total}",
                      interpret_params={"random_seed": seed, "num_cores_or_threads": cores})]


GRID_ORDER = Probe(
    vocabulary.GRID_ORDER, plan_grid_order, judge_grid_order,
    note="reruns in TPU interpret mode with the parallel axes shuffled (by seed) and on two simulated cores: "
         "a result that changes depends on the grid order.",
    exposes=(Exposes("grid-order-dependence", "with its grid points in another order"),))
