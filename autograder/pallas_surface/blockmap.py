"""What an operand's block indices over the whole grid say (numpy only, no JAX).

The child evaluates every index map at every grid point (see
pallas_surface.scan_index_maps); this module turns those block indices into
facts: blocks starting outside the array, partial edge blocks, output blocks
never written, output blocks revisited at non-consecutive grid points or
shared across a parallel axis. Grid points are in the generic interpreter's
order: row-major, last axis fastest.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_EXAMPLES = 3
# Every block a map draws (blocks outside the array, never written, revisited),
# up to this many: enough for any grid a student's map can show, bounded on the wire.
MAX_BLOCKS = 256
# Grid points listed as writing one output block, in order.
MAX_WRITERS = 32


@dataclass(frozen=True)
class Operand:
    name: str                        # e.g. "input 0 (x)" or "output 0"
    is_output: bool
    array_shape: tuple[int, ...]
    block_shape: tuple[int, ...]     # elements per block dim (squeezed dims count as 1)
    block_indices: np.ndarray        # [grid points, ndim] block index per grid point


def grid_points(grid: tuple[int, ...]) -> np.ndarray:
    """All grid points in row-major order, shape [prod(grid), len(grid)]."""
    if not grid:
        return np.zeros((1, 0), dtype=np.int64)
    mesh = np.meshgrid(*[np.arange(g) for g in grid], indexing="ij")
    return np.stack([m.reshape(-1) for m in mesh], axis=1)


def _range(start: np.ndarray, block: tuple[int, ...]) -> list[list[int]]:
    return [[int(s), int(s) + int(b)] for s, b in zip(start, block)]


def analyse(op: Operand, grid: tuple[int, ...], parallel_axes: tuple[int, ...]) -> dict:
    """Facts about one operand; JSON-ready (lists and ints only)."""
    points = grid_points(grid)
    idx = np.asarray(op.block_indices, dtype=np.int64).reshape(len(points), -1)
    block = np.asarray(op.block_shape, dtype=np.int64)
    shape = np.asarray(op.array_shape, dtype=np.int64)
    starts = idx * block
    outside = (starts >= shape) | (starts < 0)
    facts: dict = {"operand": op.name, "is_output": op.is_output, "array_shape": list(op.array_shape),
                   "block_shape": list(op.block_shape), "grid": list(grid)}

    oob_rows = np.nonzero(outside.any(axis=1))[0]
    facts["out_of_bounds"] = [
        {"grid_point": points[r].tolist(), "block_index": idx[r].tolist(),
         "element_range": _range(starts[r], op.block_shape), "array_shape": list(op.array_shape)}
        for r in oob_rows[:MAX_EXAMPLES]]
    facts["out_of_bounds_count"] = int(len(oob_rows))
    facts["outside_blocks"] = _first_seen(idx, points, oob_rows)

    partial = (~outside) & (starts + block > shape)
    prow = np.nonzero(partial.any(axis=1) & ~outside.any(axis=1))[0]
    seen_partial = {}
    for r in prow:
        seen_partial.setdefault(tuple(idx[r].tolist()), _range(starts[r], op.block_shape))
    facts["partial_blocks"] = [{"block_index": list(k), "element_range": v}
                               for k, v in list(seen_partial.items())[:MAX_EXAMPLES]]
    facts["partial_count"] = len(seen_partial)

    if op.is_output:
        nblocks = tuple(int(-(-s // b)) for s, b in zip(op.array_shape, op.block_shape))
        valid = [tuple(r) for r, bad in zip(idx.tolist(), outside.any(axis=1)) if not bad]
        written = set(valid)
        missing = [list(b) for b in np.ndindex(*nblocks) if b not in written] if nblocks else []
        facts["unwritten_blocks"] = missing[:MAX_BLOCKS]
        facts["unwritten_count"] = len(missing)
        facts["block_grid"] = list(nblocks)
        facts["revisits"] = _revisits(idx, points)
        facts["revisited_blocks"] = _revisited_blocks(idx)
        facts["reduction_axes"] = [a for a in range(len(grid)) if grid[a] > 1 and _constant_along(idx, points, a)]
        facts["parallel_shared"], facts["shared_blocks"] = _parallel_shared(idx, points, parallel_axes)
    return facts


def _first_seen(idx: np.ndarray, points: np.ndarray, rows: np.ndarray) -> list[dict]:
    """Each distinct block among ``rows``, with the first grid point that asks for it."""
    seen: dict[tuple, list[int]] = {}
    for r in rows:
        key = tuple(idx[r].tolist())
        if key not in seen:
            seen[key] = points[r].tolist()
            if len(seen) >= MAX_BLOCKS:
                break
    return [{"block_index": list(b), "grid_point": p} for b, p in seen.items()]


def _writers(idx: np.ndarray, points: np.ndarray, block: tuple) -> list[list[int]]:
    """The grid points whose output block is ``block``, in the generic interpreter's order."""
    rows = np.nonzero((idx == np.asarray(block)).all(axis=1))[0]
    return [points[r].tolist() for r in rows[:MAX_WRITERS]]


def _revisited_blocks(idx: np.ndarray) -> list[list[int]]:
    """Every output block written again after the grid moved on to another one."""
    done: set[tuple] = set()
    found: dict[tuple, None] = {}
    prev = None
    for b in map(tuple, idx.tolist()):
        if b != prev:
            if b in done:
                found.setdefault(b)
            if prev is not None:
                done.add(prev)
        prev = b
    return [list(b) for b in list(found)[:MAX_BLOCKS]]


def _constant_along(idx: np.ndarray, points: np.ndarray, axis: int) -> bool:
    """The output block does not move along ``axis``: a reduction axis."""
    seen: dict[tuple, tuple] = {}
    for p, b in zip(points.tolist(), map(tuple, idx.tolist())):
        key = tuple(p[:axis] + p[axis + 1:])
        if seen.setdefault(key, b) != b:
            return False
    return True


def _revisits(idx: np.ndarray, points: np.ndarray) -> list[dict]:
    """Output blocks that come back after the grid moved on to another block."""
    last_run_end: dict[tuple, int] = {}
    prev = None
    found = []
    for r, b in enumerate(map(tuple, idx.tolist())):
        if b != prev and b in last_run_end:
            found.append({"block_index": list(b), "grid_point": points[r].tolist(),
                          "previous_grid_point": points[last_run_end[b]].tolist(),
                          "writers": _writers(idx, points, b)})
            if len(found) >= MAX_EXAMPLES:
                break
        last_run_end[b] = r
        prev = b
    return found


def _parallel_shared(idx: np.ndarray, points: np.ndarray, parallel_axes: tuple[int, ...]) -> tuple[list, list]:
    """One output block written from grid points that differ along a parallel axis: the
    chip may give those points to different cores. Examples, and every such block."""
    if not parallel_axes:
        return [], []
    first: dict[tuple, int] = {}
    found: list[dict] = []
    shared: dict[tuple, None] = {}
    for r, b in enumerate(map(tuple, idx.tolist())):
        if b not in first:
            first[b] = r
            continue
        a, p = points[first[b]], points[r]
        axes = [ax for ax in parallel_axes if a[ax] != p[ax]]
        if axes and b not in shared:
            shared[b] = None
            if len(found) < MAX_EXAMPLES:
                found.append({"block_index": list(b), "grid_points": [a.tolist(), p.tolist()],
                              "axis": axes[0], "writers": _writers(idx, points, b)})
            if len(shared) >= MAX_BLOCKS:
                break
    return found, [list(b) for b in shared]
