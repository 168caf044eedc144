"""Memory poisoning: TPU interpret mode rerun with other fills of the memory a
kernel has not written (outputs, scratch, padding) than its test run's.

Every kernel run of a grading fills unwritten memory with values drawn element
by element from the secret run key (``grading.fills``): the case's own test
run holds one fill, and this probe reruns the case with others. A kernel
cannot recognise a fill (by a value, a range, or two buffers that agree), nor
tell this probe's runs from the test's. The fills are read at run time, so
the runs reuse the test run's compiled executable. An output that changes
with the fill depends on memory the kernel never wrote; confined to partial
edge blocks, on their padding.
"""
from __future__ import annotations

import numpy as np

from ...findings import Finding
from ...pallas_surface.static.facts import IndexMaps
from ...spec import ProbeTerms
from ..judge import regions
from ..run.fills import poisoning_fills
from ..run.plan import Variant
from .base import Exposes, Probe, ProbeResults


def plan_poisoning(assignment, case, rubric, run_key) -> tuple[Variant, ...]:
    return (Variant("index-maps", "static", analysis="index-maps"),
            *(Variant(f.name, "tpu-interpret", fill=f) for f in poisoning_fills(run_key)))


def _differs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return ~((a == b) | (np.isnan(a) & np.isnan(b)))


def _partial_mask(scan: IndexMaps | None, shape: tuple[int, ...]) -> np.ndarray | None:
    """Elements of the output that lie in partial edge blocks, from the index-map scan."""
    if scan is None or not scan.calls:
        return None
    outs = [op for op in scan.calls[-1].operands if op.is_output]
    if not outs or not outs[0].partial_count:
        return None
    op = outs[0]
    mask = np.zeros(shape, dtype=bool)
    block = op.block_shape
    for b in np.ndindex(*op.block_grid):
        starts = [i * s for i, s in zip(b, block)]
        if any(st + s > dim for st, s, dim in zip(starts, block, shape)):
            mask[tuple(slice(st, min(st + s, dim)) for st, s, dim in zip(starts, block, shape))] = True
    return mask


def judge_poisoning(r: ProbeResults) -> list[Finding]:
    test = r.plan.test_run(r.case.name, "tpu-interpret")
    own = test.fill.name if test is not None and test.fill is not None else "the test's"
    outputs = {own: r.output(r.correctness.get("tpu-interpret"))}
    for variant, run in r.runs.items():
        if run.fill is not None:
            outputs[run.fill.name] = r.output(r.outcomes.get(variant))
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
    by_name = {run.fill.name: v for v, run in r.runs.items() if run.fill is not None}
    variant = next((by_name[k] for k in failing if k in by_name), None)
    scan = r.facts("index-maps")
    # Where the fill shows through, block by block: what the block map draws.
    evidence = dict(fills_passing=passing, fills_failing=failing, differing=int(diff.sum()),
                    total=int(diff.size), first_differing=first, variant=variant,
                    changed_by_block=regions.per_block(diff, regions.output_operand(scan, diff.shape)))
    partial = _partial_mask(scan, diff.shape)
    confined = partial is not None and not (diff & ~partial).any()
    if confined and not passing:
        # Wrong whatever the padding holds: a logic error that the padding only
        # decorates with NaN; the correctness runs report it.
        return []
    if confined:
        return [r.finding("padding-dependence",
                          "the output changes with the values in the padding of partial edge blocks: "
                          + _fills_text(passing, failing), **evidence, partial_elements=int(partial.sum()))]
    return [r.finding("uninitialized-memory", "the output depends on memory the kernel never wrote: "
                      + _fills_text(passing, failing), **evidence)]


def _fills_text(passing: list[str], failing: list[str]) -> str:
    # fill-1 is the test run's own fill; every run is TPU interpret mode's (the probe's rung).
    if passing:
        return f"rerun in TPU interpret mode, right with {', '.join(passing)}, wrong with {', '.join(failing)}"
    return (f"rerun in TPU interpret mode, wrong with every fill tried ({', '.join(failing)}), "
            "and different with each")


POISONING = Probe(
    ProbeTerms("poisoning", "Memory poisoning: NaN and random fills", "tpu-interpret",
               ("uninitialized-memory", "padding-dependence")),
    plan_poisoning, judge_poisoning,
    note="memory poisoning (below) in TPU interpret mode.",
    exposes=(Exposes("uninitialized-memory", "with other values in the memory it never wrote"),))
