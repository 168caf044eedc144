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
# What the steps writing an output block read: said for grids up to this many points
# (a graded case's; a production-size grid is scanned for coverage, not for this).
MAX_READ_POINTS = 1 << 16


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
    """Facts about one operand; JSON-ready (lists and ints only). Every fact is
    computed over the whole grid with array operations (a production-size grid
    has hundreds of thousands of points)."""
    points = grid_points(grid)
    idx = np.asarray(op.block_indices, dtype=np.int64).reshape(len(points), -1)
    block = np.asarray(op.block_shape, dtype=np.int64)
    shape = np.asarray(op.array_shape, dtype=np.int64)
    starts = idx * block
    # (Compared as block indices, not starts: a huge index must not wrap around.)
    outside = (idx >= -(-shape // block)) | (idx < 0)
    facts: dict = {"operand": op.name, "is_output": op.is_output, "array_shape": list(op.array_shape),
                   "block_shape": list(op.block_shape), "grid": list(grid)}
    keys = _keys(idx)
    oob = outside.any(axis=1)
    oob_rows = np.nonzero(oob)[0]
    facts["out_of_bounds"] = [
        {"grid_point": points[r].tolist(), "block_index": idx[r].tolist(),
         "element_range": _range(starts[r], op.block_shape), "array_shape": list(op.array_shape)}
        for r in oob_rows[:MAX_EXAMPLES]]
    facts["out_of_bounds_count"] = int(len(oob_rows))
    facts["outside_blocks"] = [{"block_index": idx[r].tolist(), "grid_point": points[r].tolist()}
                               for r in _first_rows(keys, oob_rows)[:MAX_BLOCKS]]
    prow = np.nonzero(((~outside) & (starts + block > shape)).any(axis=1) & ~oob)[0]
    first_partial = _first_rows(keys, prow)
    facts["partial_blocks"] = [{"block_index": idx[r].tolist(), "element_range": _range(starts[r], op.block_shape)}
                               for r in first_partial[:MAX_EXAMPLES]]
    facts["partial_count"] = len(first_partial)
    if op.is_output:
        facts.update(_output_facts(op, idx, keys, points, oob, grid, parallel_axes))
    else:
        # An input block no grid point reads (a reduction cut short at some size).
        facts["unread_count"] = _unvisited(op, idx, oob)[0]
    return facts


def _unvisited(op: Operand, idx: np.ndarray, oob: np.ndarray) -> tuple[int, list, tuple[int, ...]]:
    """How many of the array's blocks no grid point visits, the first of them, and
    the array's blocks per dimension."""
    nblocks = tuple(int(-(-s // b)) for s, b in zip(op.array_shape, op.block_shape))
    if not nblocks:
        return 0, [], nblocks
    visited = np.zeros(int(np.prod(nblocks)), dtype=bool)
    if (~oob).any():
        visited[np.ravel_multi_index(idx[~oob].T, nblocks)] = True
    missing = np.nonzero(~visited)[0]
    first = [list(map(int, b)) for b in zip(*np.unravel_index(missing[:MAX_BLOCKS], nblocks))]
    return int(len(missing)), first, nblocks


def _output_facts(op: Operand, idx: np.ndarray, keys: np.ndarray, points: np.ndarray, oob: np.ndarray,
                  grid: tuple[int, ...], parallel_axes: tuple[int, ...]) -> dict:
    count, missing, nblocks = _unvisited(op, idx, oob)
    found, shared = _parallel_shared(idx, keys, points, parallel_axes)
    return {"unwritten_blocks": missing, "unwritten_count": count, "block_grid": list(nblocks),
            "revisits": _revisits(idx, keys, points), "revisited_blocks": _revisited_blocks(idx, keys),
            "reduction_axes": [a for a in range(len(grid)) if grid[a] > 1 and _constant_along(keys, grid, a)],
            "parallel_shared": found, "shared_blocks": shared}


def _keys(idx: np.ndarray) -> np.ndarray:
    """One integer per distinct block index (any values, negative ones included):
    the index in mixed radix over the span each dimension takes."""
    if idx.shape[1] == 0 or not len(idx):
        return np.zeros(len(idx), dtype=np.int64)
    low = idx.min(axis=0)
    span = [int(x) for x in idx.max(axis=0) - low + 1]
    if np.prod(np.asarray(span, dtype=float)) < 2.0 ** 62:
        return np.ravel_multi_index((idx - low).T, tuple(span)).astype(np.int64)
    # (Block indices a map spreads wider than that: sorting rows is slower but exact.)
    return np.unique(idx, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _first_rows(keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Among ``rows``, the first row of each distinct block, in grid order."""
    if not len(rows):
        return rows
    _, first = np.unique(keys[rows], return_index=True)
    return rows[np.sort(first)]


def _writers(keys: np.ndarray, points: np.ndarray, row: int) -> list[list[int]]:
    """The grid points whose output block is row ``row``'s, in the generic interpreter's order."""
    return points[np.nonzero(keys == keys[row])[0][:MAX_WRITERS]].tolist()


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Runs of one output block at consecutive grid points: each run's first row,
    and the run before it of the same block (-1: the block's first run)."""
    starts = np.nonzero(np.r_[True, keys[1:] != keys[:-1]])[0] if len(keys) else np.zeros(0, dtype=np.int64)
    run_keys = keys[starts]
    order = np.argsort(run_keys, kind="stable")
    before = np.full(len(starts), -1, dtype=np.int64)
    same = run_keys[order[1:]] == run_keys[order[:-1]]
    before[order[1:][same]] = order[:-1][same]
    return starts, before


def _revisited_blocks(idx: np.ndarray, keys: np.ndarray) -> list[list[int]]:
    """Every output block written again after the grid moved on to another one."""
    starts, before = _runs(keys)
    again = starts[before >= 0]
    return [idx[r].tolist() for r in _first_rows(keys, again)[:MAX_BLOCKS]]


def _constant_along(keys: np.ndarray, grid: tuple[int, ...], axis: int) -> bool:
    """The output block does not move along ``axis``: a reduction axis."""
    g = keys.reshape(grid)
    return bool((g == np.take(g, [0], axis=axis)).all())


def _revisits(idx: np.ndarray, keys: np.ndarray, points: np.ndarray) -> list[dict]:
    """Output blocks that come back after the grid moved on to another block."""
    starts, before = _runs(keys)
    ends = np.r_[starts[1:] - 1, len(keys) - 1] if len(starts) else starts
    found = []
    for j in np.nonzero(before >= 0)[0][:MAX_EXAMPLES]:
        r = int(starts[j])
        found.append({"block_index": idx[r].tolist(), "grid_point": points[r].tolist(),
                      "previous_grid_point": points[ends[before[j]]].tolist(),
                      "writers": _writers(keys, points, r)})
    return found


def _parallel_shared(idx: np.ndarray, keys: np.ndarray, points: np.ndarray,
                     parallel_axes: tuple[int, ...]) -> tuple[list, list]:
    """One output block written from grid points that differ along a parallel axis: the
    chip may give those points to different cores. Examples, and every such block."""
    if not parallel_axes or not len(keys):
        return [], []
    axes = np.asarray(parallel_axes)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    firsts = first[inverse.reshape(-1)]
    differ = points[:, axes] != points[firsts][:, axes]
    rows = _first_rows(keys, np.nonzero(differ.any(axis=1))[0])[:MAX_BLOCKS]
    found = [{"block_index": idx[r].tolist(), "grid_points": [points[firsts[r]].tolist(), points[r].tolist()],
              "axis": int(axes[np.argmax(differ[r])]), "writers": _writers(keys, points, int(r))}
             for r in rows[:MAX_EXAMPLES]]
    return found, [idx[r].tolist() for r in rows]


def reads(out: Operand, inp: Operand, grid: tuple[int, ...]) -> list[dict]:
    """For each output block (the first MAX_BLOCKS, in grid order), the distinct blocks of
    ``inp`` that the grid points writing it read: what the kernel can know when it computes
    that block. Empty for a grid too large to list (``MAX_READ_POINTS``)."""
    n = len(grid_points(grid))
    if n > MAX_READ_POINTS:
        return []
    oidx = np.asarray(out.block_indices, dtype=np.int64).reshape(n, -1)
    iidx = np.asarray(inp.block_indices, dtype=np.int64).reshape(n, -1)
    okeys = _keys(oidx)
    found = []
    for r in _first_rows(okeys, np.arange(n))[:MAX_BLOCKS]:
        read = np.unique(iidx[okeys == okeys[r]], axis=0)[:MAX_BLOCKS]
        found.append({"block": oidx[r].tolist(), "reads": read.tolist()})
    return found
