"""Each finding's evidence as a block map: one maker per spatial finding (``MAKERS``:
the catalogue's kinds that are ``drawn``), and ``build``, which never raises on
evidence of another form."""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable

from ...findings import CATALOGUE
from .model import (
    MAX_ROWS,
    WIDTH,
    Block,
    BlockMap,
    Cell,
    Field,
    Index,
    Legend,
    Panel,
    _plane,
    _product,
    _rng,
    _t,
    blocks_along,
    elements,
    overlapping,
    project,
)

# ---- each finding's evidence as a field --------------------------------------

LEGEND_OUTSIDE = Legend("outside", "X", "asked for outside the array")
LEGEND_CLAMPED = Legend("clamped", "=", "read instead (start clamped inside)")


def _heading(operand: str, shape, block, grid, case: str, unit: str = "blocks") -> str:
    at = f"; grid {_t(grid)}" if grid else ""
    return f"{operand} {_t(shape)} in {' x '.join(map(str, block))} {unit}{at}; case {case}"


def _map(finding: str, title: str, f: Field, legend: list[Legend], notes: list[str], case: str) -> BlockMap:
    panel, more = project(f)
    used = {c.mark for c in panel.cells}
    shown = tuple(entry for entry in legend if entry.mark in used)
    if any(c.valid != (1.0, 1.0) for c in panel.cells):
        shown += (Legend("padding", "", "padding past the array's end"),)
    return BlockMap(finding, title, (panel,), shown, tuple(notes) + more, case)


def _outside(x: dict, case: str) -> BlockMap:
    """Blocks a grid point asks for outside the array, and the window the generic interpreter read."""
    shape, block = x["array_shape"], x["block_shape"]
    marked: dict[Index, Block] = {}
    for b in x["outside_blocks"]:
        idx = tuple(b["block_index"])
        marked[idx] = Block("outside", f"grid point {_t(b['grid_point'])} asks for block {_t(idx)}, elements "
                                       f"{_rng(elements(idx, block))}: outside the array {_t(shape)}")
    _clamped(marked, x["element_range"], x["read_instead"], block, shape, f"grid point {_t(x['grid_point'])}")
    note = (f"Grid point {_t(x['grid_point'])} asks for block {_t(x['block_index'])} (elements "
            f"{_rng(x['element_range'])}); the generic interpreter reads {_rng(x['read_instead'])} instead.")
    title = _heading(x["operand"], shape, block, x["grid"], case)
    return _map("out-of-bounds", title, Field(x["operand"], tuple(shape), tuple(block), marked),
                [LEGEND_OUTSIDE, LEGEND_CLAMPED], [note], case)


def _clamped(marked: dict, asked, read, block, shape, who: str) -> None:
    for idx in overlapping(read, block):
        if idx not in marked:
            marked[idx] = Block("clamped", f"block {_t(idx)}: the generic interpreter reads elements {_rng(read)} "
                                           f"here for {who}, which asked for {_rng(asked)} (outside)")


def _window(x: dict, case: str) -> BlockMap:
    """TPU interpret mode's IndexError: one window outside, drawn in blocks of its own size."""
    w = x["window"]
    shape, window, read = w["array_shape"], w["element_range"], w["read_instead"]
    block = [hi - lo for lo, hi in window]
    who = f"grid point {_t(w['grid_point'])}" if "grid_point" in w else "the DMA"
    marked: dict[Index, Block] = {}
    for idx in overlapping(window, block):
        if any(i < 0 or i * b >= s for i, b, s in zip(idx, block, shape)):
            marked[idx] = Block("outside", f"{who} {w['access']}s elements {_rng(window)}: outside the array "
                                           f"{_t(shape)}")
    _clamped(marked, window, read, block, shape, who)
    unit = "blocks" if "block_index" in w else "windows (the DMA's size)"
    title = _heading(w["operand"], shape, block, None, case, unit)
    note = f"{who[0].upper()}{who[1:]} {w['access']}s {_rng(window)}; the generic interpreter {_rng(read)}."
    return _map("out-of-bounds", title, Field(w["operand"], tuple(shape), tuple(block), marked),
                [LEGEND_OUTSIDE, LEGEND_CLAMPED], [note], case)


def out_of_bounds(x: dict, case: str) -> BlockMap | None:
    if "outside_blocks" in x and "read_instead" in x:
        return _outside(x, case)
    if x.get("window"):
        return _window(x, case)
    return None


def _blocks(indices, mark: str, title: Callable[[Index], str]) -> dict[Index, Block]:
    return {tuple(i): Block(mark, title(tuple(i))) for i in indices}


def unwritten(x: dict, case: str) -> BlockMap | None:
    if "unwritten_blocks" in x and "array_shape" in x:
        shape, block = x["array_shape"], x["block_shape"]
        marked = _blocks(x["unwritten_blocks"], "unwritten", lambda i: (
            f"block {_t(i)}, elements {_rng(elements(i, block, shape))}: no grid point writes it"))
        notes = [f"{x['unwritten_count']} of {math.prod(x['block_grid'])} output blocks are never written."]
        title = _heading(x["operand"], shape, block, x["grid"], case)
        return _map("uninitialized-memory", title, Field(x["operand"], tuple(shape), tuple(block), marked),
                    [Legend("unwritten", "U", "never written by any grid point")], notes, case)
    if x.get("changed_by_block"):
        fills = (f"Right with fills: {', '.join(x['fills_passing']) or 'none'}; "
                 f"wrong with: {', '.join(x['fills_failing'])}.")
        return counted("uninitialized-memory", x["changed_by_block"], case, "changed",
                       "elements that change with the fill", fills)
    return None


def _unravel(flat: int, dims) -> Index:
    out = []
    for d in reversed(dims):
        out.append(flat % d)
        flat //= d
    return tuple(reversed(out))


def _count_field(d: dict, mark: str, meaning: str) -> tuple[Field, list[str]]:
    """Per-block counts (``grading.regions.per_block``) as a field; a grid counted
    per group of blocks is drawn per group, and the note says so."""
    shape, group = d["array_shape"], d["group"]
    block = [b * g for b, g in zip(d["block_shape"], group)]
    if len(d["counts"]) != math.prod(d["cells"]):
        raise ValueError("counts do not cover the block grid")
    marked = {}
    for flat, n in enumerate(d["counts"]):
        if n:
            idx = _unravel(flat, d["cells"])
            rng = elements(idx, block, shape)
            size = math.prod(hi - lo for lo, hi in rng)
            unit = "block" if math.prod(group) == 1 else f"group of {' x '.join(map(str, group))} blocks"
            marked[idx] = Block(mark, f"{unit} {_t(idx)}, elements {_rng(rng)}: {n} of {size} {meaning}", n)
    return Field(d["operand"], tuple(shape), tuple(block), marked, counted=True, unit=tuple(group)), []


def _pattern(f: Field, what: str) -> str:
    """The shape of the marked blocks in one sentence: 'only the last column of blocks'
    is often the whole diagnosis."""
    p = _plane(f)
    rows_n, cols_n = blocks_along(p.shape, p.block)
    keys = set(p.marked)
    rows, cols = sorted({r for r, _c in keys}), sorted({c for _r, c in keys})
    if len(keys) == rows_n * cols_n:
        return f"Every block has {what}."
    if rows_n > 1 and keys == {(r, c) for r in rows for c in range(cols_n)}:
        return f"Only block row{'s' if len(rows) > 1 else ''} {', '.join(map(str, rows))} (of {rows_n}) " \
               f"{'have' if len(rows) > 1 else 'has'} {what}."
    if cols_n > 1 and keys == {(r, c) for r in range(rows_n) for c in cols}:
        return f"Only block column{'s' if len(cols) > 1 else ''} {', '.join(map(str, cols))} (of {cols_n}) " \
               f"{'have' if len(cols) > 1 else 'has'} {what}."
    return f"{len(keys)} of {rows_n * cols_n} blocks have {what}."


def counted(finding: str, d: dict, case: str, mark: str, meaning: str, *notes: str) -> BlockMap:
    f, more = _count_field(d, mark, meaning)
    per = math.prod(d["block_shape"])
    title = _heading(d["operand"], d["array_shape"], d["block_shape"], d["grid"], case)
    m = _map(finding, title, f, [Legend(mark, "n", f"{meaning} in the block (of {per})"),
                                 Legend("ok", ".", "none")], [_pattern(f, meaning), *notes, *more], case)
    if any(n.startswith("Each cell is") for n in m.notes):
        # A cell holds several blocks: its number is theirs together.
        m = replace(m, legend=tuple(replace(e, meaning=f"{meaning} in the cell") if e.mark == mark else e
                                    for e in m.legend))
    return m


def wrong(x: dict, case: str, finding: str = "wrong-result") -> BlockMap | None:
    d = x.get("wrong_by_block")
    if not d:
        return None
    nan = f"{x['nonfinite']} of the wrong elements are NaN or Inf." if x.get("nonfinite") else ""
    return counted(finding, d, case, "wrong", "wrong elements", *filter(None, [nan]))


def padding(x: dict, case: str) -> BlockMap | None:
    d = x.get("changed_by_block")
    if not d:
        return None
    f, more = _count_field(d, "padded", "valid elements that change with the padding fill")
    shape, block = d["array_shape"], d["block_shape"]
    marked = dict(f.marked)
    notes = []
    for axis, (s, b) in enumerate(zip(shape, block)):
        if s % b:
            notes.append(f"Along axis {axis} the last block covers {s - s % b}:{s - s % b + b}; "
                         f"{s}:{s - s % b + b} of it is padding past the array's end.")
    for idx in _product([range(n) for n in blocks_along(shape, block)]):
        if idx not in marked and any((i + 1) * b > s for i, b, s in zip(idx, block, shape)):
            marked[idx] = Block("partial", f"block {_t(idx)}, elements {_rng(elements(idx, block))}: a partial "
                                           "edge block; only the part inside the array is valid")
    field = Field(f.operand, f.shape, f.block, marked)
    legend = [Legend("padded", "P", "partial block whose valid outputs change with the padding"),
              Legend("partial", "p", "partial edge block (part padding)")]
    title = _heading(d["operand"], shape, block, d["grid"], case)
    return _map("padding-dependence", title, field, legend, notes + more, case)


def _writers_text(writers, limit: int = 6) -> str:
    shown = " -> ".join(_t(w) for w in writers[:limit])
    return shown + (f" -> ... ({len(writers)} in all)" if len(writers) > limit else "")


def revisit(x: dict, case: str) -> BlockMap | None:
    """Output blocks written again after other blocks, or from both sides of a parallel axis."""
    if "array_shape" not in x or "writers" not in x:
        return None
    shape, block, b = x["array_shape"], x["block_shape"], tuple(x["block_index"])
    if x["kind"] == "non-consecutive":
        mark, blocks = "revisit", x["revisited_blocks"]
        legend = Legend("revisit", "R", "written again after the grid moved to other blocks")
        note = f"Block {_t(b)} is written at grid points {_writers_text(x['writers'])}, other blocks in between."
    else:
        mark, blocks = "shared", x["shared_blocks"]
        legend = Legend("shared", "S", f"written from grid points along parallel axis {x['axis']}")
        note = (f"Block {_t(b)} is written at grid points {_writers_text(x['writers'])}; they differ along "
                f"axis {x['axis']}, marked parallel, which two cores may split.")
    marked = _blocks(blocks, mark, lambda i: f"block {_t(i)}, elements {_rng(elements(i, block, shape))}: "
                     + (f"written at grid points {_writers_text(x['writers'])}" if i == b else legend.meaning))
    title = _heading(x["operand"], shape, block, x["grid"], case)
    return _map("output-block-revisit", title, Field(x["operand"], tuple(shape), tuple(block), marked),
                [legend], [note], case)


def race(x: dict, case: str) -> BlockMap | None:
    """The two racing accesses' window on the array they race on, in windows of that size."""
    acc = x.get("accesses") or []
    if "array_shape" not in x or len(acc) != 2:
        return None
    shape = x["array_shape"]
    block = [hi - lo for lo, hi in acc[0]["element_range"]]
    # Where each access is, not the detector's thread key: for a DMA its first number is
    # the copy's id and its second always 0, which reads as "core 0" for both cores.
    who = [f"{a['access']} at {a['where']}" for a in acc]
    marked = {}
    for idx in overlapping(acc[0]["element_range"], block):
        marked[idx] = Block("race", f"elements {_rng(acc[0]['element_range'])}: {who[0]}; and "
                                    f"{_rng(acc[1]['element_range'])}: {who[1]}; no order between them")
    title = _heading(x["operand"], shape, block, None, case, "windows (the accesses' size)")
    cores = f"{x['cores']} core{'s' if x['cores'] != 1 else ''}"
    note = (f"The race detector ({cores} simulated) saw a {who[0]} and a {who[1]} of "
            f"buffer ({acc[0]['buffer']}), taken to be {x['operand']}, with no order between them.")
    return _map("data-race", title, Field(x["operand"], tuple(shape), tuple(block), marked),
                [Legend("race", "!", "two accesses with no order between them, one a write")], [note], case)


def _ravel(point, grid) -> int:
    flat = 0
    for p, g in zip(point, grid):
        flat = flat * g + p
    return flat


def _order_panel(caption: str, grid, steps: dict, cores: dict, rows: int, cols: int, ref: bool) -> Panel:
    cells = []
    for flat in range(rows * cols):
        r, c = divmod(flat, cols)
        point = _unravel(r * grid[-1] + c, grid)
        rm, step, core = _ravel(point, grid), steps[point], cores[point]
        if ref:
            cells.append(Cell(r, c, "step", str(rm), f"grid point {_t(point)}: step {rm} in row-major order"))
            continue
        mark = "core1" if core else ("moved" if step != rm else "step")
        cells.append(Cell(r, c, mark, f"{step}{'*' if core else ''}",
                          f"grid point {_t(point)}: step {step}, core {core} (row-major: step {rm})"))
    lead = [_unravel(r, grid[:-1]) if len(grid) > 1 else () for r in range(rows)]
    return Panel(caption, tuple(",".join(map(str, p)) for p in lead), tuple(map(str, range(cols))),
                 tuple(cells), (0, rows, 0, cols))


def grid_order(x: dict, case: str) -> BlockMap | None:
    """The order that broke the result: each grid point's step, beside row-major order."""
    order, grid = x.get("order") or [], x.get("grid") or []
    points = [tuple(p) for p, _core in order]
    if not grid or len(points) != math.prod(grid) or len(set(points)) != len(points) \
            or x.get("order_length") != len(points):
        return None
    steps = {p: i for i, p in enumerate(points)}
    cores = {tuple(p): int(core) for p, core in order}
    width = len(str(len(points))) + 2
    rows_all = math.prod(grid[:-1]) if len(grid) > 1 else 1
    rows, cols = min(rows_all, MAX_ROWS), min(grid[-1], max(2, (WIDTH - 12) // (2 * width)))
    cores_n = x.get("cores", 1)
    panels = (_order_panel("row-major (generic): right", grid, steps, cores, rows, cols, True),
              _order_panel(f"seed {x.get('seed')}, {cores_n} core{'s' if cores_n > 1 else ''}: wrong",
                           grid, steps, cores, rows, cols, False))
    notes = []
    if rows < rows_all or cols < grid[-1]:
        notes.append(f"The first {rows} x {cols} of {rows_all} x {grid[-1]} grid points are shown.")
    if x.get("mismatch_text"):
        notes.append(f"In this order {x['mismatch_text']} outputs are wrong.")
    legend = (Legend("step", "n", "the step it ran at"), Legend("moved", "", "another step than row-major"),
              Legend("core1", "*", "on core 1"))
    used = {c.mark for p in panels for c in p.cells}
    title = f"Grid {_t(grid)}: each grid point numbered by the step it ran at; case {case}"
    return BlockMap("grid-order-dependence", title, panels, tuple(e for e in legend if e.mark in used),
                    tuple(notes), case)


MAKERS: dict[str, Callable[[dict, str], BlockMap | None]] = {
    "out-of-bounds": out_of_bounds,
    "uninitialized-memory": unwritten,
    "padding-dependence": padding,
    "output-block-revisit": revisit,
    "data-race": race,
    "grid-order-dependence": grid_order,
    "wrong-result": wrong,
    "numerics": lambda x, case: wrong(x, case, "numerics"),
}
# The findings whose evidence draws (tests/test_catalogue.py: exactly the ones with a maker).
SPATIAL = frozenset(fid for fid, kind in CATALOGUE.items() if kind.drawn)


def build(finding: str, facts: dict, case: str) -> BlockMap | None:
    """The map of one finding's evidence, or None when it holds nothing to draw
    (a finding made before its check recorded where, or a shape it cannot place)."""
    maker = MAKERS.get(finding)
    if maker is None:
        return None
    try:
        return maker(facts, case)
    except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError):
        # Evidence of another form (older, or partial): no map rather than a wrong one.
        return None
