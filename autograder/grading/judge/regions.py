"""Where in an operand a check saw something, as JSON-like evidence a block map
can draw: the operand's geometry from the index-map scan, and counts of marked
elements (wrong, changed by a fill) per block. numpy only, no JAX.

Checks call this where they make a finding; the feedback's ``blockmaps`` draws
what it returns and never recomputes it.
"""
from __future__ import annotations

import math

import numpy as np

from ...pallas_surface.static.facts import IndexMaps, OperandMap

# A dense count per block up to this many blocks; a bigger grid is counted per
# group of blocks (the evidence says how many blocks a cell holds).
MAX_CELLS = 4096


def clamped(element_range, array_shape) -> list[list[int]]:
    """The window the generic interpreter really reads or writes for a block (or
    DMA) that starts outside its array: lax.dynamic_slice moves each start back
    until the window fits (to 0 when the window is longer than the array)."""
    out = []
    for (lo, hi), dim in zip(element_range, array_shape):
        size = hi - lo
        start = min(max(lo, 0), max(dim - size, 0))
        out.append([int(start), int(start + min(size, dim))])
    return out


def output_operand(scan: IndexMaps | None, shape) -> OperandMap | None:
    """The output the grader compares, as the index-map scan saw it: output 0 of
    the last pallas_call, when its array has the compared output's shape."""
    if scan is None or not scan.calls:
        return None
    outs = [op for op in scan.calls[-1].operands if op.is_output]
    if not outs or tuple(outs[0].array_shape) != tuple(shape):
        return None
    return outs[0]


def geometry(op: OperandMap) -> dict:
    """What a map needs to cut the operand into blocks (JSON-ready)."""
    return {"operand": op.operand, "array_shape": list(op.array_shape), "block_shape": list(op.block_shape),
            "grid": list(op.grid)}


def block_grid(array_shape, block_shape) -> list[int]:
    return [max(1, math.ceil(a / b)) for a, b in zip(array_shape, block_shape)]


def counts_by_block(mask: np.ndarray, block_shape) -> dict:
    """How many elements of ``mask`` are set in each block: a dense row-major list
    over the block grid, or over groups of blocks (``group`` per axis) when the
    grid has more than MAX_CELLS blocks."""
    blocks = block_grid(mask.shape, block_shape)
    group = [1] * len(blocks)
    while math.prod(math.ceil(n / g) for n, g in zip(blocks, group)) > MAX_CELLS:
        axis = max(range(len(blocks)), key=lambda a: math.ceil(blocks[a] / group[a]))
        group[axis] *= 2
    cell = [b * g for b, g in zip(block_shape, group)]
    cells = [math.ceil(s / c) for s, c in zip(mask.shape, cell)]
    padded = np.zeros([n * c for n, c in zip(cells, cell)], dtype=bool)
    padded[tuple(slice(0, s) for s in mask.shape)] = mask
    split = padded.reshape([v for n, c in zip(cells, cell) for v in (n, c)])
    counts = split.sum(axis=tuple(range(1, 2 * len(cells), 2)))
    return {"cells": cells, "group": group, "counts": [int(c) for c in counts.reshape(-1)]}


def per_block(mask: np.ndarray, op: OperandMap | None) -> dict | None:
    """The operand's geometry and the count of set elements per block, or None
    without a scan of this output (a check then says nothing of where)."""
    if op is None or mask.ndim == 0 or tuple(mask.shape) != tuple(op.array_shape):
        return None
    return {**geometry(op), **counts_by_block(mask, op.block_shape)}


def _ints(v) -> list[int] | None:
    ok = isinstance(v, (list, tuple)) and all(isinstance(i, int) and not isinstance(i, bool) for i in v)
    return list(v) if ok else None


def crossed_axes(x: dict) -> tuple[int, int] | None:
    """(g, a) when an out-of-bounds block comes from an index map that sends grid axis
    g to block axis a != g: at every example the block's index along a (the first axis
    it falls outside on) is grid axis g's step, grid axis a's step is not, and the
    grid's length along g fits the array's blocks along g but runs past those along a.
    The grid is right there and the map's order of axes is the fault (a map that returns
    (j, i) for a grid laid out (rows, columns)). None when the facts do not show it: a
    grid one step too long, its axes swapped, facts of another form. Pure; no JAX."""
    w = x.get("window") if isinstance(x.get("window"), dict) else x
    shape, grid = _ints(w.get("array_shape")), _ints(x.get("grid"))
    ranges = w.get("element_range")
    sizes = _ints(x.get("block_shape")) or (
        [hi - lo for lo, hi in ranges] if isinstance(ranges, list) and all(
            isinstance(r, list) and len(r) == 2 and _ints(r) for r in ranges) else None)
    if not shape or not grid or not sizes or len(sizes) != len(shape) or 0 in sizes:
        return None
    examples = [e for e in x.get("examples") or [] if isinstance(e, dict)] or [w]
    pairs = [(_ints(e.get("grid_point")), _ints(e.get("block_index"))) for e in examples]
    if any(p is None or b is None or len(p) != len(grid) or len(b) != len(shape) for p, b in pairs):
        return None
    counts = [-(-n // s) for n, s in zip(shape, sizes)]
    first = pairs[0][1]
    a = next((d for d in range(len(shape)) if not 0 <= first[d] < counts[d]), None)
    if a is None or a < len(grid) and all(p[a] == b[a] for p, b in pairs):
        return None     # no block outside, or grid axis a's own step runs past: the grid's length
    found = [g for g in range(min(len(grid), len(shape))) if g != a
             and all(p[g] == b[a] for p, b in pairs) and counts[a] < grid[g] <= counts[g]]
    return (found[0], a) if len(found) == 1 else None
