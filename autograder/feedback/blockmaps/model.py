"""A block map as typed data: the marks, the operand cut into blocks (``Field``), a field
projected onto a plane of drawn cells (``project``), and the map's JSON form carried
through results.json to the TA site (``encode``/``decode``, every field checked)."""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

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
    # The first leading slice with a block of the highest mark: where "the first wrong output" is.
    lead = max(f.marked, key=lambda k: (MARKS[f.marked[k].mark].rank, tuple(-i for i in k[:lead_n])), default=None)
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
