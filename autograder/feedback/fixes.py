"""The one-line fix of a problem, in the student's own terms: the axis, the
operand, the block and the semantics the finding's facts name, and the line of
the student's file where the construct is. Where the facts may not be shown (a
secret case's finding) or say too little, the catalogue's general line
(``findings.fix_line``). Plain text; imports no JAX.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ..findings import Finding, fix_line
from ..grading.identity.sources import Place, Sources
from ..grading.judge.regions import crossed_axes
from . import evidence


def _about_the_call(f: Finding) -> bool:
    """Where the catalogue points a finding's fix ("call": the pallas_call's line); blocks the
    grid never visits are the grid's doing too, whatever the ID."""
    x = f.facts()
    return f.kind.fix_at == "call" or bool(x.get("unwritten_count")) or f.problem == "unwritten-blocks"


@dataclass(frozen=True)
class Fix:
    what: str                 # the line itself
    specific: bool            # in the finding's own terms (or the assignment's hint), not the general line
    where: str = ""           # "at add.py:15" (the line that holds the fault), "in the pl.pallas_call at ..."
    at: Place | None = None   # that line, quoted as written, when the fault's line is known

    @property
    def text(self) -> str:
        """The line with where to make it: the problem list's form (once: not again where
        the line itself already names that line, "at line 28", "started at add.py:28")."""
        n = self.where.rpartition(":")[2]
        named = re.search(rf"(lines? |:)(\d+(, | and ))*{n}\b", self.what) if n.isdigit() else None
        said = self.where.startswith("at ") and named
        return f"{self.what} ({self.where})" if self.where and not said else self.what


def fix(f: Finding, assignment=None, *, visible: bool = True, sources: Sources | None = None,
        related=()) -> Fix:
    """``visible``: the finding's facts may be shown; ``assignment``: for its
    ``numerics_hint`` and the handout's names of dimensions; ``sources``: where
    the program's parts are; ``related``: the grading's other findings."""
    f = evidence.with_grid(f, sources)
    specific = _said(f, assignment, sources, related) if visible else evidence.fix(f, visible=False)
    own = visible and (evidence.seen(f, sources, related) or ("",))[0] in ("narrow-scratch", "narrow-read")
    if f.id == "numerics" and assignment is not None and assignment.numerics_hint and not own:
        specific = assignment.numerics_hint.rstrip(".")     # (unless the kernel's own line says more)
    found = evidence.fault(f, sources, related)
    return Fix(specific or fix_line(f), specific is not None, where(f, sources, related),
               found.place if found is not None else None)


def best(findings: list[Finding], assignment=None, *, shows=lambda f: True, sources: Sources | None = None,
         related=()) -> Fix:
    """The fix of one problem from every finding of it: the first that can be said
    in the student's terms, the static analysis's first (it knows the whole grid
    and every block), else the general line of the first finding."""
    ordered = sorted(findings, key=lambda f: f.rung != "static")
    chosen = next((f for f in ordered if shows(f) and _said(evidence.with_grid(f, sources), assignment, sources,
                                                              related)), None)
    if chosen is not None:
        return fix(chosen, assignment, visible=True, sources=sources, related=related)
    # No fact may be shown: the general line, at the place the static scan points to (a
    # file's line is no secret), else the first finding's.
    general = fix(findings[0], assignment, visible=shows(findings[0]))
    if not general.specific:      # what a static finding's own words say (no secret value in them)
        general = next((g for f in ordered if (g := fix(f, assignment, visible=False)).specific), general)
    if not general.specific and not any(shows(f) for f in findings):
        # Seen on secret cases only: every visible case passed this problem, so "on the
        # smallest case" points at a case that is right. Say what that evidence shows.
        only = findings[0].kind.fix_seen(SECRET_ONLY, {})
        general = Fix(only, True) if only else general
    for f in (ordered[0], findings[0]):
        placed = fix(f, assignment, visible=False, sources=sources, related=related)
        if placed.where:
            return Fix(general.what, general.specific, placed.where, placed.at)
    return general


SECRET_ONLY = "secret-only"     # a kind's ``seen`` fix for a problem no visible case shows


def where(f: Finding, sources: Sources | None, related=()) -> str:
    """'at add.py:15' (the line that holds the fault), else 'in the pl.pallas_call at
    add.py:14' or 'in kernel, add.py:9-12'; '' when unknown or when there are
    several calls and the finding does not say which."""
    found = evidence.fault(f, sources, related)
    if found is not None:
        return f"at {found.place.where}"
    kernels = sources.kernels if sources is not None else ()
    if len(kernels) != 1:
        return ""
    k = kernels[0]
    if _about_the_call(f):
        return f"in the pl.pallas_call at {k.call}" if k.cores == 1 else f"in the kernel call at {k.call}"
    if f.kind.fix_at == "body" and k.body and k.lines:
        return f"in {k.body}, {k.lines}"
    return ""


def _said(f: Finding, assignment, sources: Sources | None, related) -> str | None:
    """The fix in this finding's own terms: its facts' numbers (an axis, a block), else
    what its evidence shows (``evidence``: the catalogue's words for it)."""
    return (evidence.reads_fix(f, related) or _specific(f, _dims(f, assignment))
            or evidence.fix(f, sources, related))


def _tuple(values) -> str:
    return "(" + ", ".join(str(v) for v in values) + ("," if len(values) == 1 else "") + ")"


def _semantics(values) -> str:
    return "(" + ", ".join(f'"{v}"' for v in values) + ("," if len(values) == 1 else "") + ")"


def _specific(f: Finding, dims: dict) -> str | None:
    x = f.facts()
    try:
        if f.id == "output-block-revisit":
            return _revisit(x)
        if f.id == "out-of-bounds":
            return _out_of_bounds(x, dims, f.case)
        if f.id == "uninitialized-memory" and x.get("unwritten_count") and (short := _grid_short(x)):
            return short
        if f.id == "uninitialized-memory" and x.get("unwritten_count"):
            blocks = math.prod(x["block_grid"]) if x.get("block_grid") else None
            of = f" of the {blocks}" if blocks else ""
            return (f"the grid never visits {x['unwritten_count']}{of} blocks of {x['operand']} (e.g. block "
                    f"{_tuple(x['unwritten_blocks'][0])}): make the grid cover every output block")
        if f.id == "vmem-overflow":
            mib = 2 ** 20
            return (f"the blocks and scratch need {x['bytes'] / mib:.1f} MiB of VMEM at the real problem size, "
                    f"over the {x['limit_bytes'] / mib:.0f} MiB of a {x['chip']}: use fixed block sizes "
                    "(e.g. 128-512 per dimension) and tile the large dimensions with the grid")
        if f.id == "wrong-result" and x.get("first_mismatches") and f.case \
                and not any(x.get(k) for k in evidence.FORMULA_FACTS):
            # (Rows that are the right rows scaled, outputs mixed along an axis: the evidence says more.)
            first = ", ".join(str(i) for i in x["first_mismatches"][0])
            return (f"check the kernel's formula and index maps against the reference on case {f.case}; "
                    f"its first wrong output is at [{first}]")
    except (KeyError, IndexError, TypeError, ValueError):
        return None     # facts of another shape than these lines read: the general line
    return None


def _grid_short(x: dict[str, Any]) -> str | None:
    """Blocks never visited that are the trailing blocks of one array axis, a grid axis
    as long as the blocks it does visit there: that grid axis is short (a floor division
    where the size is not a multiple of the block), said in the student's numbers."""
    shape, block, counts = x.get("array_shape"), x.get("block_shape"), x.get("block_grid")
    grid, missing = list(x.get("grid") or []), [list(b) for b in x.get("unwritten_blocks") or []]
    if not (shape and block and counts and grid and missing) or not len(shape) == len(block) == len(counts):
        return None
    moved = [a for a in range(len(shape)) if any(b[a] for b in missing)]
    if len(moved) != 1:
        return None
    a = moved[0]
    reached = min(b[a] for b in missing)
    steps = [g for g, n in enumerate(grid) if n == reached]
    if len(steps) != 1 or reached >= counts[a]:
        return None
    size, b, plural = shape[a], block[a], "s" if reached != 1 else ""
    floor = f", not {size} // {b} = {reached}" if size // b == reached else ""
    return (f"grid axis {steps[0]} has {reached} step{plural}, but {x.get('operand', 'the output')} has "
            f"pl.cdiv({size}, {b}) = {counts[a]} blocks of {b} along dimension {a} ({size} elements): give the "
            f"grid pl.cdiv({size}, {b}) steps there{floor}")


def _revisit(x: dict[str, Any]) -> str | None:
    sem = list(x.get("dimension_semantics") or [])
    grid = list(x.get("grid") or [])
    if not sem or len(sem) != len(grid):
        return None
    last = len(grid) - 1
    if x.get("kind") == "parallel-shared":
        axis = int(x["axis"])
    else:
        writers = [tuple(p) for p in x.get("writers") or x.get("grid_points") or []]
        varying = [a for a in range(len(grid)) if len({p[a] for p in writers}) > 1]
        if len(varying) != 1:
            return None
        axis = varying[0]
    fixed = ["parallel" if a != axis and s == "parallel" else "arbitrary" if a == axis else s
             for a, s in enumerate(sem)]
    if axis == last:
        return (f'grid axis {axis} is already last: mark it "arbitrary", '
                f"dimension_semantics={_semantics(fixed)}")
    order = [a for a in range(len(grid)) if a != axis] + [axis]
    moved = [fixed[a] for a in order]
    mark = ('(it is "arbitrary" already)' if sem[axis] == "arbitrary" and moved == [sem[a] for a in order]
            else f'and mark it "arbitrary": dimension_semantics={_semantics(moved)},')
    return (f"make grid axis {axis} (the output block stays the same along it) the last grid axis "
            f"{mark} with the grid's order {_tuple(order)} of the axes and the index maps' arguments "
            "reordered to match")


def _out_of_bounds(x: dict[str, Any], dims: dict, case: str | None) -> str | None:
    found = evidence.oob_axis(x)
    if found is None:
        return None
    axis, b, i, count = found
    w = x.get("window") if isinstance(x.get("window"), dict) else x
    n, point = w["array_shape"][axis], w["grid_point"]
    operand = dims.get("name") or w.get("operand", "an operand")
    dim = dims.get(axis)
    size = dim or str(n)
    along = f"along {dim}" if dim else f"along its axis {axis}"
    on = f" on case {case}" if case else ""
    if (swap := crossed_axes(x)) is not None:
        return _crossed(x, dims, swap, operand, f"grid point {_tuple(point)} asks {operand} for block "
                                                f"{_tuple(w['block_index'])}{on}")
    g = evidence.grid_too_long(x)
    if g is not None:
        return (f"grid axis {g} runs {x['grid'][g]} steps{on}, but {operand} has pl.cdiv({size}, {b}) = {count} "
                f"blocks {along}: make that axis pl.cdiv({size}, {b}) long")
    return (f"grid point {_tuple(point)} asks {operand} for block {i} {along}, which has pl.cdiv({size}, {b}) = "
            f"{count} blocks (0 to {count - 1}): keep that index map below {count}")


def _crossed(x: dict[str, Any], dims: dict, swap: tuple[int, int], operand: str, asks: str) -> str:
    """An index map that sends grid axis g to block axis a (``regions.crossed_axes``), in the
    case's numbers: the grid fits the array along g, the map's order of axes is the fault."""
    g, a = swap
    w = x.get("window") if isinstance(x.get("window"), dict) else x
    sizes = x.get("block_shape") or [hi - lo for lo, hi in w["element_range"]]

    def blocks(axis: int) -> str:
        n, b = w["array_shape"][axis], sizes[axis]
        along = f"along {dims[axis]}" if dims.get(axis) else f"along its axis {axis}"
        return f"pl.cdiv({dims.get(axis) or n}, {b}) = {-(-n // b)} blocks {along}"
    return (f"the index map sends grid axis {g} to block axis {a}: {asks}, but grid axis {g} runs "
            f"{x['grid'][g]} steps, which fit the {blocks(g)}, while {operand} has {blocks(a)}: keep the grid and "
            f"return the block index in the array's axis order (grid axis {g}'s step as block index {g})")


def _dims(f: Finding, assignment) -> dict[int, str]:
    """The handout's name of each axis of the array a finding is about (axis ->
    "N"), when its shape on the finding's case is an input's or the output's and
    every array of that shape names the axis alike; {} otherwise."""
    if assignment is None or f.case is None:
        return {}
    x = f.facts()
    w = x.get("window") if isinstance(x.get("window"), dict) else x
    shape = tuple(w.get("array_shape") or ())
    try:
        case = assignment.case(f.case)
    except KeyError:
        return {}
    arrays = [i for i in assignment.inputs if i.kind == "array"]
    named = [i.shape for i in arrays] + [assignment.output.shape]
    matches = [n for n in named if assignment.shape(n, case) == shape]
    if not matches or any(n != matches[0] for n in matches):
        return {}
    dims: dict = dict(enumerate(matches[0]))
    # "input k" of the pallas_call is the function's k-th argument when the shapes agree.
    operand = str(w.get("operand", ""))
    k = int(operand[6:]) if operand.startswith("input ") and operand[6:].isdigit() else None
    if k is not None and k < len(arrays) and assignment.shape(arrays[k].shape, case) == shape:
        dims["name"] = arrays[k].name
    elif operand == "output 0":
        dims["name"] = "the output"
    return dims
