"""Dynamic probes: TPU interpret mode with other memory fills, grid orders,
core counts, race detection and DMA execution modes."""
from __future__ import annotations

import re

import numpy as np

from ..findings import Finding
from .base import Probe, ProbeResults

FILLS = {"zero": 0.0, "large-positive": 1e30, "large-negative": -1e30}
RACE_MARK = "RACE DETECTED"
SEMAPHORE_MARK = "emaphore"


def plan_poisoning(assignment, case, rubric):
    runs = [{"variant": "index-maps", "kind": "static", "rung": "static", "analysis": "index-maps"}]
    for name, value in FILLS.items():
        runs.append({"variant": f"fill-{name}", "rung": "tpu-interpret", "fill": value, "params": {}})
    return runs


def _differs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return ~((a == b) | (np.isnan(a) & np.isnan(b)))


def _partial_mask(facts: dict | None, shape: tuple[int, ...]) -> np.ndarray | None:
    """Elements of the output that lie in partial edge blocks, from the index-map scan."""
    if not facts or not facts.get("calls"):
        return None
    outs = [op for op in facts["calls"][-1]["operands"] if op["is_output"]]
    if not outs or not outs[0]["partial_count"]:
        return None
    op = outs[0]
    mask = np.zeros(shape, dtype=bool)
    block = op["block_shape"]
    # Every block index whose block extends past the edge on some axis.
    nblocks = op["block_grid"]
    for b in np.ndindex(*nblocks):
        starts = [i * s for i, s in zip(b, block)]
        if any(st + s > dim for st, s, dim in zip(starts, block, shape)):
            mask[tuple(slice(st, min(st + s, dim)) for st, s, dim in zip(starts, block, shape))] = True
    return mask


def judge_poisoning(r: ProbeResults) -> list[Finding]:
    outputs = {"nan": r.output(r.correctness.get("tpu-interpret"))}
    for name in FILLS:
        outputs[name] = r.output(r.outcomes.get(f"fill-{name}"))
    outputs = {k: v for k, v in outputs.items() if v is not None}
    if len(outputs) < 2:
        return []
    verdicts = {k: r.compare(v).ok for k, v in outputs.items()}
    names = list(outputs)
    diff = np.zeros(next(iter(outputs.values())).shape, dtype=bool)
    for other in names[1:]:
        diff |= _differs(outputs[names[0]], outputs[other])
    passing = [k for k, ok in verdicts.items() if ok]
    if not diff.any() or all(verdicts.values()):
        return []
    failing = [k for k, ok in verdicts.items() if not ok]
    first = [int(i) for i in np.argwhere(diff)[0]]
    evidence = dict(fills_passing=passing, fills_failing=failing, differing=int(diff.sum()),
                    total=int(diff.size), first_differing=first)
    partial = _partial_mask(r.facts("index-maps"), diff.shape)
    confined = partial is not None and not (diff & ~partial).any()
    if confined and not passing:
        # Wrong whatever the padding holds: a logic error that the padding only
        # decorates with NaN; the correctness runs report it.
        return []
    if confined:
        return [r.finding("padding-dependence",
                          f"the output changes with the values in the padding of partial edge blocks: "
                          f"right with {', '.join(passing) or 'no'} fill, wrong with {', '.join(failing)}",
                          **evidence, partial_elements=int(partial.sum()))]
    return [r.finding("uninitialized-memory",
                      f"the output depends on memory the kernel never wrote: right with "
                      f"{', '.join(passing) or 'no'} fill, wrong with {', '.join(failing)}", **evidence)]


def plan_grid_order(assignment, case, rubric):
    runs = []
    for seed in rubric.seeds:
        runs.append({"variant": f"seed-{seed}", "rung": "tpu-interpret", "record": True,
                     "params": {"random_seed": seed}})
        runs.append({"variant": f"seed-{seed}-2cores", "rung": "tpu-interpret", "record": True,
                     "params": {"random_seed": seed, "num_cores_or_threads": 2}})
    return runs


def judge_grid_order(r: ProbeResults) -> list[Finding]:
    generic_ok = r.passes(r.correctness.get("generic"))
    results = {v: (o, r.passes(o)) for v, o in r.outcomes.items()}

    def reordered(o) -> bool:
        """Did this run really use another order than row-major on one core?"""
        order = o.event.get("order", [])
        points = [tuple(p[0]) for p in order]
        return points != sorted(points) or any(p[1] for p in order)

    # A run that fails in plain row-major order fails for another reason (the
    # correctness runs report it), not because of the order.
    bad = [(v, o) for v, (o, ok) in results.items() if ok is False and reordered(o)]
    good = [v for v, (o, ok) in results.items() if ok]
    if not bad or not (generic_ok or good):
        return []
    variant, outcome = bad[0]
    order = outcome.event.get("order", [])
    seed = int(variant.split("-")[1])
    cores = 2 if variant.endswith("2cores") else 1
    cmp = r.compare(r.output(outcome))
    return [r.finding("grid-order-dependence",
                      f"the result is wrong when grid points run in another order (random_seed={seed}, "
                      f"{cores} core{'s' if cores > 1 else ''}) though it is right in row-major order",
                      seed=seed, cores=cores, order=order[:24], order_length=len(order),
                      failing_variants=[v for v, _ in bad], passing_variants=good,
                      generic_passed=bool(generic_ok), mismatch_text=f"{cmp.mismatches} of {cmp.total}",
                      interpret_params={"random_seed": seed, "num_cores_or_threads": cores})]


def plan_races(assignment, case, rubric):
    runs = [{"variant": f"races-{n}core", "rung": "tpu-interpret", "races": True, "capture": True,
             "params": {"detect_races": True, "num_cores_or_threads": n}} for n in (1, 2)]
    runs.append({"variant": "dma-eager", "rung": "tpu-interpret", "capture": True,
                 "params": {"dma_execution_mode": "eager"}})
    return runs


def _race_report(text: str) -> list[str]:
    """The race detector's first report: the two accesses, with the student's file by
    name only (the grader's folders mean nothing to a student) and without the
    vector clocks (they explain nothing to one either)."""
    lines = [re.sub(r"(?:/[^\s/,:]+)+/([^\s/,:]+\.py:\d+)", r"\1", ln) for ln in text.splitlines()
             if ln.strip() and not ln.strip().startswith("clock:")]
    return lines[:6]


def judge_races(r: ProbeResults) -> list[Finding]:
    found: list[Finding] = []
    for cores in (1, 2):
        o = r.outcomes.get(f"races-{cores}core")
        if o is None:
            continue
        text = o.event.get("captured", "")
        if o.event.get("races_found") or RACE_MARK in text:
            lines = _race_report(text)
            found.append(r.finding("data-race", f"the race detector found conflicting accesses "
                                   f"({cores} core{'s' if cores > 1 else ''} simulated)",
                                   report=lines, cores=cores,
                                   interpret_params={"detect_races": True,
                                                     "num_cores_or_threads": cores}))
            break
    # DMA protocol: the two execution modes must agree, must not hang, and must
    # leave no semaphore signalled.
    on_wait = r.correctness.get("tpu-interpret")
    eager = r.outcomes.get("dma-eager")
    generic = r.correctness.get("generic")
    # Only the TPU interpreter blocks on DMA and semaphore waits: a kernel that
    # hangs on the generic interpreter too hangs in its own code (an endless loop).
    generic_finished = generic is None or generic.status not in ("timeout", "skipped")
    for label, o in (("on_wait", on_wait), ("eager", eager)):
        if o is not None and o.status == "timeout" and generic_finished:
            limit = o.event.get("limit_s")
            within = f" (no result within {limit:g} s)" if isinstance(limit, (int, float)) else ""
            found.append(r.finding("dma-protocol", f"TPU interpret mode hung with "
                                   f"dma_execution_mode='{label}'{within}: a DMA wait that nothing "
                                   "satisfies (waited before it was started, or more waits than starts)",
                                   mode=label, problem="hang", limit_s=limit))
            return found
    ok_wait, ok_eager = r.passes(on_wait), r.passes(eager)
    if ok_wait is not None and ok_eager is not None and ok_wait != ok_eager:
        good, badm = ("on_wait", "eager") if ok_wait else ("eager", "on_wait")
        found.append(r.finding("dma-protocol",
                               f"the result is right when DMAs complete at {'their wait' if good == 'on_wait' else 'their start'} "
                               f"and wrong when they complete at {'their start' if badm == 'eager' else 'their wait'}: "
                               "a buffer is read before its DMA is waited on, or refilled while in use",
                               mode_passing=good, mode_failing=badm, problem="mode-dependent"))
    text = (eager.event.get("captured", "") if eager else "")
    if not found and SEMAPHORE_MARK in text:
        lines = [ln for ln in text.splitlines() if SEMAPHORE_MARK in ln][:4]
        found.append(r.finding("dma-protocol", "a semaphore was left non-zero when the kernel ended: "
                               "a DMA was started and never waited on", report=lines,
                               problem="semaphore-left"))
    return found


POISONING = Probe("poisoning", "Memory poisoning: NaN, zero and ±large fills", "tpu-interpret",
                  ("uninitialized-memory", "padding-dependence"), plan_poisoning, judge_poisoning)
GRID_ORDER = Probe("grid-order", "Grid order: shuffled parallel axes, two cores", "tpu-interpret",
                   ("grid-order-dependence",), plan_grid_order, judge_grid_order)
RACES = Probe("races", "Races and DMA protocol", "tpu-interpret", ("data-race", "dma-protocol"),
              plan_races, judge_races)
