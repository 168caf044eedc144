"""Block maps: a finding's spatial evidence drawn as the operand's array cut
into the kernel's blocks, with what went wrong marked. Pure Python: no JAX,
no numpy; the checks computed every fact (``grading.regions``), this only draws.

``build(finding_id, facts, case)`` turns a finding's evidence into a typed
``BlockMap`` (None when the evidence holds nothing to draw); ``text`` renders
it for the terminal and Markdown (monospace, at most 76 columns and about 16
lines, large grids downsampled and saying so, a one-line legend); ``figure``
as an HTML <figure> for the HTML report and the TA site: the title, the cells as
a self-contained inline SVG (``svg``: an image named by what it marks, a hover
title on every cell, no script), then the legend, the notes and every marked
cell in words. ``encode``/``decode`` carry a map through results.json to the TA site.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from html import escape
from typing import Any, Callable

WIDTH = 76          # text columns: a code block indented by 4 fits 80
MAX_ROWS = 8        # cell rows drawn (more are grouped, or cut for step numbers)
MAX_COLS = 24       # cell columns drawn at most (fewer when labels are wide)


@dataclass(frozen=True)
class Mark:
    char: str        # the text form's symbol (a cell's label replaces it)
    fill: str        # the SVG's fill
    rank: int        # a downsampled cell shows its highest-ranked block


# Fills: every mark that says something about a block stands out from a plain
# (white) block at 3:1 or more, so a cell too small for its symbol is still seen
# (WCAG 1.4.11, non-text contrast); its symbol is drawn in whichever of black
# and white reads at 4.5:1 on it (``label_colour``; tests/test_blockmaps.py
# computes both). Hues by kind: reds wrong, purples memory, orange order and
# sharing, blue partial or another core, amber moved or read instead.
MARKS: dict[str, Mark] = {
    "ok": Mark(".", "#ffffff", 0),
    "step": Mark(".", "#ffffff", 0),
    "partial": Mark("p", "#218bff", 1),
    "core1": Mark("*", "#218bff", 2),
    "moved": Mark(".", "#bf8700", 3),
    "clamped": Mark("=", "#bf8700", 3),
    "wrong": Mark("#", "#cf222e", 4),
    "changed": Mark("U", "#a475f9", 5),
    "unwritten": Mark("U", "#8250df", 6),
    "padded": Mark("P", "#cf222e", 6),
    "revisit": Mark("R", "#bc4c00", 7),
    "shared": Mark("S", "#bc4c00", 7),
    "race": Mark("!", "#bc4c00", 7),
    "outside": Mark("X", "#82071e", 8),
    "padding": Mark("", "#afb8c1", 0),     # the part of an edge block past the array (a shade; the edge is drawn)
}
PLAIN = frozenset({"ok", "step", "padding"})   # marks that say nothing is wrong with the block


@dataclass(frozen=True)
class Cell:
    row: int
    col: int
    mark: str
    label: str = ""                    # drawn instead of the mark's symbol (a count, a step)
    title: str = ""                    # the SVG's hover text: grid point, block index, elements
    valid: tuple[float, float] = (1.0, 1.0)   # share inside the array (rows, cols): edge blocks


@dataclass(frozen=True)
class Panel:
    caption: str
    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]
    cells: tuple[Cell, ...]
    inside: tuple[int, int, int, int]  # rows [r0, r1) and columns [c0, c1) inside the array


@dataclass(frozen=True)
class Legend:
    mark: str
    symbol: str
    meaning: str


@dataclass(frozen=True)
class BlockMap:
    finding: str
    title: str
    panels: tuple[Panel, ...]
    legend: tuple[Legend, ...]
    notes: tuple[str, ...]
    case: str


# ---- the operand, its blocks, and what is marked on them ---------------------

Index = tuple[int, ...]


@dataclass(frozen=True)
class Block:
    mark: str
    title: str
    count: int = 0


@dataclass(frozen=True)
class Field:
    """One operand cut into blocks; ``marked``: the blocks that are not plain."""
    operand: str
    shape: tuple[int, ...]
    block: tuple[int, ...]
    marked: dict[Index, Block]
    counted: bool = False              # cells are labelled with their counts
    plain: str = "ok"                  # the mark of an unmarked block inside the array
    unit: tuple[int, ...] = ()         # kernel blocks per field block (counts kept per group)


def _t(xs) -> str:
    return "(" + ", ".join(str(x) for x in xs) + ")"


def _rng(r) -> str:
    return ", ".join(f"{lo}:{hi}" for lo, hi in r)


def blocks_along(shape, block) -> tuple[int, ...]:
    return tuple(max(1, math.ceil(s / b)) for s, b in zip(shape, block))


def elements(index: Index, block, shape=None) -> list[list[int]]:
    """A block's element range (cut at the array's end when ``shape`` is given)."""
    out = [[i * b, (i + 1) * b] for i, b in zip(index, block)]
    return [[lo, min(hi, s)] for (lo, hi), s in zip(out, shape)] if shape is not None else out


def overlapping(window, block) -> list[Index]:
    """The blocks an element window touches (any window, aligned or not)."""
    spans = [range(math.floor(lo / b), math.ceil(hi / b)) for (lo, hi), b in zip(window, block)]
    return [tuple(p) for p in _product(spans)]


def _product(spans) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for span in spans:
        out = [p + (v,) for p in out for v in span]
    return out


def compact(n: int) -> str:
    """A count in at most 4 characters: 7, 412, 65k, 2M."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n // 1000}k"
    return f"{n // 1_000_000}M"


# ---- a field drawn on a plane of cells ---------------------------------------

@dataclass(frozen=True)
class _Plane:
    """The field's last two axes (a 1-D array is one row), at one leading block."""
    shape: tuple[int, int]
    block: tuple[int, int]
    marked: dict[tuple[int, int], Block]
    notes: tuple[str, ...]
    unit: tuple[int, int] = (1, 1)


def _plane(f: Field) -> _Plane:
    lead_n = max(len(f.shape) - 2, 0)
    unit = f.unit or (1,) * len(f.shape)
    if len(f.shape) == 1:
        marked = {(0, k[0]): b for k, b in f.marked.items()}
        return _Plane((1, f.shape[0]), (1, f.block[0]), marked, (), (1, unit[0]))
    lead = max(f.marked, key=lambda k: (MARKS[f.marked[k].mark].rank, f.marked[k].count), default=None)
    lead = lead[:lead_n] if lead is not None else (0,) * lead_n
    marked = {k[lead_n:]: b for k, b in f.marked.items() if k[:lead_n] == lead}
    notes: tuple[str, ...] = ()
    along = blocks_along(f.shape[:lead_n], f.block[:lead_n])
    if math.prod(along) > 1:
        rest = len(f.marked) - len(marked)
        axes = "axis" if lead_n == 1 else "axes"
        notes = (f"Showing blocks {_t(lead + ('·', '·'))}: the array has {' x '.join(map(str, along))} blocks "
                 f"along its leading {axes}" + (f", and {rest} more marked blocks outside this slice." if rest
                                                else "."),)
    return _Plane((f.shape[-2], f.shape[-1]), (f.block[-2], f.block[-1]), marked, notes, (unit[-2], unit[-1]))


def _span(n_in: int, keys: list[int], limit: int) -> tuple[int, int, int]:
    """Block indices drawn along one axis (outside blocks included) and the group size."""
    lo, hi = min([0, *keys]), max([n_in, *(k + 1 for k in keys)])
    return lo, hi, max(1, math.ceil((hi - lo) / limit))


def _cell(f: Field, p: _Plane, at: tuple[int, int], rows: range, cols: range, n_in) -> Cell | None:
    members = [(k, p.marked[k]) for k in _product([rows, cols]) if k in p.marked]
    inside = [k for k in _product([rows, cols]) if 0 <= k[0] < n_in[0] and 0 <= k[1] < n_in[1]]
    if not members and not inside:
        return None
    plain = len(inside) > len([k for k, _b in members if k in inside])
    marks = [b.mark for _k, b in members] + ([f.plain] if plain else [])
    mark = max(marks, key=lambda m: MARKS[m].rank)
    count = sum(b.count for _k, b in members)
    label = (compact(count) if count else ".") if f.counted else ""
    if len(rows) == 1 and len(cols) == 1:
        k = (rows[0], cols[0])
        title = p.marked[k].title if k in p.marked else f"block {_t(k)}, elements {_rng(elements(k, p.block, p.shape))}"
        # A partial edge block: the share of it inside the array (the rest is padding).
        valid = tuple((s - i * b) / b if 0 < s - i * b < b else 1.0 for i, b, s in zip(k, p.block, p.shape))
        return Cell(at[0], at[1], mark, label, title, valid)
    title = (f"blocks {rows[0]}-{rows[-1]} x {cols[0]}-{cols[-1]}: {len(members)} marked"
             + (f", {count} elements in all" if f.counted else ""))
    return Cell(at[0], at[1], mark, label, title)


def _label_width(f: Field) -> int:
    return max([1, *(len(compact(b.count)) for b in f.marked.values() if f.counted)])


def project(f: Field, caption: str = "") -> tuple[Panel, tuple[str, ...]]:
    """The field as one panel of at most MAX_ROWS x MAX_COLS cells, and the notes
    that say what was left out or grouped."""
    p = _plane(f)
    n_in = blocks_along(p.shape, p.block)
    lo_r, hi_r, g_r = _span(n_in[0], [k[0] for k in p.marked], MAX_ROWS)
    width = max(_label_width(f), len(str(hi_r)), 1) + 1
    lo_c, hi_c, g_c = _span(n_in[1], [k[1] for k in p.marked], min(MAX_COLS, (WIDTH - 8) // width))
    cells = []
    for r, r0 in enumerate(range(lo_r, hi_r, g_r)):
        for c, c0 in enumerate(range(lo_c, hi_c, g_c)):
            cell = _cell(f, p, (r, c), range(r0, min(r0 + g_r, hi_r)), range(c0, min(c0 + g_c, hi_c)), n_in)
            if cell is not None:
                cells.append(cell)
    inside = (-(lo_r // g_r) if lo_r else 0, math.ceil((n_in[0] - lo_r) / g_r),
              -(lo_c // g_c) if lo_c else 0, math.ceil((n_in[1] - lo_c) / g_c))
    u_r, u_c = p.unit
    panel = Panel(caption, tuple(str(v * u_r) for v in range(lo_r, hi_r, g_r)) if len(f.shape) > 1 else ("",),
                  tuple(str(v * u_c) for v in range(lo_c, hi_c, g_c)), tuple(cells), inside)
    notes = p.notes
    if g_r * u_r > 1 or g_c * u_c > 1:
        kernel = blocks_along(p.shape, (p.block[0] // u_r, p.block[1] // u_c))
        notes += (f"Each cell is {g_r * u_r} x {g_c * u_c} blocks (the array has {kernel[0]} x {kernel[1]}); "
                  "it shows its most severe block" + (" and their total count." if f.counted else "."),)
    return panel, notes


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
    who = [f"{a['access']} by id {a['who']} (core {a['core']}, {a['where']})" for a in acc]
    marked = {}
    for idx in overlapping(acc[0]["element_range"], block):
        marked[idx] = Block("race", f"elements {_rng(acc[0]['element_range'])}: {who[0]}; and "
                                    f"{_rng(acc[1]['element_range'])}: {who[1]}; no order between them")
    title = _heading(x["operand"], shape, block, None, case, "windows (the accesses' size)")
    note = (f"The race detector ({x['cores']} cores simulated) saw a {who[0]} and a {who[1]} of "
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
SPATIAL = frozenset(MAKERS)


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


# ---- text (terminal, Markdown code block) ------------------------------------

def _wrap(text: str, width: int = WIDTH) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + ([line] if line else [])


def _symbol(cell: Cell) -> str:
    return cell.label or MARKS[cell.mark].char


def _panel_lines(p: Panel) -> list[str]:
    """One panel: a column header, a row per cell row, the array's edge drawn
    where blocks outside it are (| between columns, - between rows)."""
    grid = {(c.row, c.col): _symbol(c) for c in p.cells}
    w = max([2, *(len(v) for v in grid.values()), *(len(v) for v in p.col_labels)]) + 1
    rl = max(len(v) for v in p.row_labels)
    r0, r1, c0, c1 = p.inside

    def row(values: list[str], lead: str) -> str:
        out = lead.rjust(rl) + " "
        for c, v in enumerate(values):
            edge = "|" if (c == c0 and c0 > 0) or (c == c1 and c1 < len(values)) else " "
            out += edge + v.rjust(w - 1)
        return out.rstrip()

    def rule() -> str:
        return " " * (rl + 1 + c0 * w) + "-" * (w * (c1 - c0))

    lines = [p.caption] if p.caption else []
    lines.append(row(list(p.col_labels), ""))
    for r, label in enumerate(p.row_labels):
        if (r == r0 and r0 > 0) or (r == r1 and r1 < len(p.row_labels)):
            lines.append(rule())
        lines.append(row([grid.get((r, c), "") for c in range(len(p.col_labels))], label))
    return lines


def _beside(blocks: list[list[str]], gap: int = 4) -> list[str] | None:
    widths = [max(len(line) for line in b) for b in blocks]
    if sum(widths) + gap * (len(blocks) - 1) > WIDTH:
        return None
    height = max(len(b) for b in blocks)
    return ["".join(line.ljust(wd + gap) for line, wd in
                    zip((b[i] if i < len(b) else "" for b in blocks), widths)).rstrip() for i in range(height)]


def legend_line(m: BlockMap) -> str:
    """The legend in one line (a mark drawn only as a shade has no symbol: SVG only)."""
    return "; ".join(f"{e.symbol} {e.meaning}" for e in m.legend if e.symbol)


def text(m: BlockMap) -> str:
    """The map as monospace lines of at most WIDTH columns: title, panels, legend, notes."""
    panels = [_panel_lines(p) for p in m.panels]
    body = _beside(panels) if len(panels) > 1 else None
    if body is None:
        body = [line for i, p in enumerate(panels) for line in ([""] if i else []) + p]
    lines = _wrap(m.title) + body + _wrap("Legend: " + legend_line(m))
    for note in m.notes:
        lines += _wrap(note)
    return "\n".join(line[:WIDTH] for line in lines)


# ---- SVG and HTML (the HTML report and the TA site) --------------------------

CHAR_PX = 6.8       # an estimate of a 12px character's width, for the layout
PAD = MARKS["padding"].fill
TEXT_DARK, TEXT_LIGHT = "#1f2328", "#ffffff"
MAX_LISTED = 100    # marked cells listed in words under a drawn map


def _luminance(colour: str) -> float:
    """WCAG 2's relative luminance of a #rrggbb colour."""
    def channel(v: int) -> float:
        c = v / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: str, b: str) -> float:
    """WCAG 2's contrast ratio of two #rrggbb colours (1 to 21)."""
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def label_colour(fill: str) -> str:
    """The text colour that reads best on a fill (black or white)."""
    return max((TEXT_DARK, TEXT_LIGHT), key=lambda t: contrast(fill, t))


def _cell_px(panels: tuple[Panel, ...]) -> int:
    cols = max(len(p.col_labels) for p in panels) * len(panels)
    return 28 if cols <= 20 else max(12, 560 // cols)


def _svg_cell(c: Cell, x: float, y: float, s: int, outside: bool) -> str:
    mark = MARKS[c.mark]
    dash = ' stroke-dasharray="3 2"' if outside else ""
    out = [f'<g><title>{escape(c.title)}</title>',
           f'<rect x="{x:g}" y="{y:g}" width="{s}" height="{s}" fill="{mark.fill}" stroke="#6e7781"{dash}/>']
    vr, vc = c.valid
    if vr < 1:
        out.append(f'<rect x="{x:g}" y="{y + vr * s:g}" width="{s}" height="{(1 - vr) * s:g}" fill="{PAD}" '
                   'fill-opacity="0.6"/>')
    if vc < 1:
        out.append(f'<rect x="{x + vc * s:g}" y="{y:g}" width="{(1 - vc) * s:g}" height="{s}" fill="{PAD}" '
                   'fill-opacity="0.6"/>')
    label = c.label or (mark.char if c.mark not in ("ok", "step") else "")
    if label and len(label) * CHAR_PX * 0.85 <= s + 2:
        out.append(f'<text x="{x + vc * s / 2:g}" y="{y + vr * s / 2 + 4:g}" text-anchor="middle" font-size="11" '
                   f'fill="{label_colour(mark.fill)}">{escape(label)}</text>')
    return "".join(out) + "</g>"


def _svg_panel(p: Panel, x0: float, y0: float, s: int) -> tuple[list[str], float, float]:
    """One panel at (x0, y0): caption, labels, cells, the array's edge. Returns its
    elements, width and height."""
    out, y = [], y0
    if p.caption:
        out.append(f'<text x="{x0:g}" y="{y + 12:g}" font-weight="600">{escape(p.caption)}</text>')
        y += 18
    left = x0 + max(len(v) for v in p.row_labels) * CHAR_PX + 6
    for c, label in enumerate(p.col_labels):
        out.append(f'<text x="{left + c * s + s / 2:g}" y="{y + 11:g}" text-anchor="middle" font-size="10" '
                   f'fill="#57606a">{escape(label)}</text>')
    y += 15
    for r, label in enumerate(p.row_labels):
        out.append(f'<text x="{left - 5:g}" y="{y + r * s + s / 2 + 4:g}" text-anchor="end" font-size="10" '
                   f'fill="#57606a">{escape(label)}</text>')
    r0, r1, c0, c1 = p.inside
    for cell in p.cells:
        outside = not (r0 <= cell.row < r1 and c0 <= cell.col < c1)
        out.append(_svg_cell(cell, left + cell.col * s, y + cell.row * s, s, outside))
    edge = {(cell.row, cell.col): cell.valid for cell in p.cells}
    h = (r1 - r0 - 1 + edge.get((r1 - 1, c0), (1.0, 1.0))[0]) * s
    w = (c1 - c0 - 1 + edge.get((r0, c1 - 1), (1.0, 1.0))[1]) * s
    out.append(f'<rect x="{left + c0 * s:g}" y="{y + r0 * s:g}" width="{w:g}" height="{h:g}" fill="none" '
               'stroke="#1f2328" stroke-width="2"><title>the array\'s extent</title></rect>')
    width = max(left - x0 + len(p.col_labels) * s, len(p.caption) * CHAR_PX)
    return out, width, y - y0 + len(p.row_labels) * s


def marked_counts(m: BlockMap) -> list[tuple[Legend, int]]:
    """Each legend entry that marks something, with how many cells it marks."""
    cells = [c for p in m.panels for c in p.cells]
    return [(e, sum(c.mark == e.mark for c in cells)) for e in m.legend if e.mark not in PLAIN]


def accessible_name(m: BlockMap) -> str:
    """What the drawing shows, in words: its title, its panels and how many cells
    each mark marks (the legend, the notes and each marked cell follow as text)."""
    parts = [m.title]
    if len(m.panels) > 1:
        parts.append("Panels, left to right: " + "; ".join(p.caption for p in m.panels))
    marked = [f"{e.meaning}: {n} cell{'' if n == 1 else 's'}" for e, n in marked_counts(m) if n]
    parts.append("Marked: " + "; ".join(marked) if marked else "Nothing marked")
    return ". ".join(parts) + ". The legend, the notes and each marked cell follow as text."


def marked_cells(m: BlockMap) -> list[str]:
    """Each marked cell's hover text (a mouse shows it; a keyboard, a screen reader
    or a touch screen never does), its panel named where there are several."""
    return [(f"{p.caption}: " if len(m.panels) > 1 and p.caption else "") + c.title
            for p in m.panels for c in p.cells if c.mark not in PLAIN]


def svg(m: BlockMap) -> str:
    """The map's panels as one self-contained <svg> element: every text escaped, no
    script, no external reference; an image whose accessible name says what is
    marked, each cell's <title> its hover text. The title, legend and notes are
    HTML text beside it (``figure``), where they reflow and every reader gets them."""
    s = _cell_px(m.panels)
    parts, x, height = [], 8.0, 0.0
    for p in m.panels:
        els, w, h = _svg_panel(p, x, 4, s)
        parts += els
        x, height = x + w + 40, max(height, h)
    width, total = x - 40 + 8, height + 10
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="blockmap" role="img" '
            f'aria-label="{escape(accessible_name(m))}" width="{width:.0f}" height="{total:.0f}" '
            f'viewBox="0 0 {width:.0f} {total:.0f}" font-family="system-ui, sans-serif" font-size="12">'
            f'<title>{escape(m.title)}</title>')
    return head + "".join(parts) + "</svg>"


def _legend_item(e: Legend) -> str:
    fill = MARKS[e.mark].fill
    style = f"background:{fill};color:{label_colour(fill)}" + (";opacity:.6" if e.mark == "padding" else "")
    return (f'<li><span class="swatch" style="{style}" aria-hidden="true">{escape(e.symbol)}</span>'
            f'{escape(e.meaning)}</li>')


def figure(m: BlockMap, lead: str = "") -> str:
    """The map as an HTML <figure>: the title as its caption (``lead`` before it),
    the drawing, then the legend, the notes and every marked cell in words, as
    text that reflows and that a keyboard and a screen reader reach."""
    cells = marked_cells(m)
    listed = "".join(f"<li>{escape(t)}</li>" for t in cells[:MAX_LISTED])
    if len(cells) > MAX_LISTED:
        listed += f"<li>and {len(cells) - MAX_LISTED} more</li>"
    caption = (f'<span class="lead">{escape(lead)}</span> ' if lead else "") + escape(m.title)
    legend = "".join(_legend_item(e) for e in m.legend)
    notes = "".join(f"<p>{escape(n)}</p>" for n in m.notes)
    details = (f'<details class="map-cells"><summary>Each marked cell in words ({len(cells)})</summary>'
               f"<ul>{listed}</ul></details>" if cells else "")
    return (f'<figure class="blockmap"><figcaption>{caption}</figcaption>{svg(m)}'
            f'<ul class="map-legend" aria-label="Legend">{legend}</ul>'
            f'<div class="map-notes">{notes}</div>{details}</figure>')


# ---- carried through results.json (extra_data) to the TA site ----------------

def encode(m: BlockMap) -> dict:
    """JSON-ready data of a map (``decode`` reads it back)."""
    return _plain(m)


def _plain(v: Any) -> Any:
    if hasattr(v, "__dataclass_fields__"):
        return {f.name: _plain(getattr(v, f.name)) for f in fields(v)}
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    return v


def _text(v: Any, limit: int = 2000) -> str:
    if not isinstance(v, str) or len(v) > limit:
        raise ValueError("a map's text must be a bounded string")
    return v


def _cell_of(d: dict) -> Cell:
    valid = tuple(float(v) for v in d["valid"])
    if len(valid) != 2 or d["mark"] not in MARKS or not all(0.0 <= v <= 1.0 for v in valid):
        raise ValueError("a map cell needs a known mark and two shares in [0, 1]")
    return Cell(int(d["row"]), int(d["col"]), d["mark"], _text(d["label"], 8), _text(d["title"]), valid)


def _panel_of(d: dict) -> Panel:
    inside = tuple(int(v) for v in d["inside"])
    cells = tuple(_cell_of(c) for c in d["cells"][:MAX_ROWS * MAX_COLS * 2])
    if len(inside) != 4:
        raise ValueError("a panel's inside is four numbers")
    return Panel(_text(d["caption"], 200), tuple(_text(v, 40) for v in d["row_labels"][:64]),
                 tuple(_text(v, 40) for v in d["col_labels"][:64]), cells, inside)  # type: ignore[arg-type]


def decode(d: Any) -> BlockMap | None:
    """A map read back from results.json, every field checked (None when it is not one)."""
    try:
        legend = tuple(Legend(e["mark"], _text(e["symbol"], 8), _text(e["meaning"], 200)) for e in d["legend"][:8])
        if any(e.mark not in MARKS for e in legend):
            return None
        return BlockMap(_text(d["finding"], 40), _text(d["title"], 400),
                        tuple(_panel_of(p) for p in d["panels"][:2]), legend,
                        tuple(_text(n, 400) for n in d["notes"][:6]), _text(d["case"], 200))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
