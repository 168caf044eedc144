"""Memory poisoning: TPU interpret mode rerun with zero and +/-1e30 fills.

The fills are read at run time, so the three runs reuse the plain run's
compiled executable. An output that changes with the fill depends on memory
the kernel never wrote; confined to partial edge blocks, on their padding.
"""
from __future__ import annotations

import numpy as np

from ...pallas_surface.facts import IndexMaps
from ...spec import vocabulary
from .. import regions
from ..findings import Finding
from ..plan import Variant
from .base import Probe, ProbeResults

FILLS = {"zero": 0.0, "large-positive": 1e30, "large-negative": -1e30}


def plan_poisoning(assignment, case, rubric) -> tuple[Variant, ...]:
    return (Variant("index-maps", "static", analysis="index-maps"),
            *(Variant(f"fill-{name}", "tpu-interpret", fill=value) for name, value in FILLS.items()))


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
    variant = next((f"fill-{k}" for k in failing if k != "nan"), None)
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
    # "nan" is TPU interpret mode's default fill: the plain run.
    if passing:
        return f"right with the {', '.join(passing)} fill, wrong with {', '.join(failing)}"
    return f"wrong with every fill tried ({', '.join(failing)}), and different with each"


POISONING = Probe(vocabulary.POISONING, plan_poisoning, judge_poisoning)
