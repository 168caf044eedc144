"""Where: the line of the student's file that holds a finding's fault (``fault``),
read from its facts and the kernel's (``grading.identity.sources``); see the
package's docstring."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from ...findings import Finding
from ...grading.identity.sources import KernelSource, Place, SemMismatch, Sources
from ...grading.judge.regions import crossed_axes
from .formula import _line, formula_fault


@dataclass(frozen=True)
class Fault:
    what: str          # what the line is: "the grid", "the index map of input 0", ...
    place: Place


def oob_axis(x: dict) -> tuple[int, int, int, int] | None:
    """An out-of-bounds finding's array axis, block size, block index and block
    count along it (the first axis the block falls outside on), else None."""
    w = x.get("window") if isinstance(x.get("window"), dict) else x
    shape, block, point = w.get("array_shape"), w.get("block_index"), w.get("grid_point")
    if not shape or not block or point is None:
        return None
    sizes = x.get("block_shape") or [hi - lo for lo, hi in w["element_range"]]
    axis = next((d for d, (n, b, i) in enumerate(zip(shape, sizes, block)) if i < 0 or i * b >= n), None)
    if axis is None:
        return None
    return axis, sizes[axis], block[axis], -(-shape[axis] // sizes[axis])


def grid_too_long(x: dict) -> int | None:
    """The grid axis an out-of-bounds block comes from by running past the
    array's blocks (the grid's length is the fault, not the index map), else None.
    Not a grid that fits the array while the map walks another axis (``crossed``)."""
    found = oob_axis(x)
    w = x.get("window") if isinstance(x.get("window"), dict) else x
    grid, point = x.get("grid") or [], w.get("grid_point")
    if found is None or point is None or crossed(x):
        return None
    _axis, _b, i, count = found
    steps = [g for g in range(min(len(grid), len(point))) if point[g] == i and grid[g] > count]
    return steps[0] if i >= 0 and len(steps) == 1 else None


def crossed(x: dict) -> bool:
    """An index map sends a grid axis to another block axis (``regions.crossed_axes``); on a
    secret case, whose facts are withheld, the operand the static scan kept (``map_axes``)."""
    return bool(x.get("map_axes")) or crossed_axes(x) is not None


def _operand(name: str, k: KernelSource) -> tuple[str, int] | None:
    """("input"|"output", position) of an operand as a finding names it: 'input 0',
    'output 0', or a ref's name as the interpreter says it ('input "x_ref"')."""
    m = re.fullmatch(r'(input|output) (\d+)', name or "")
    if m:
        return m[1], int(m[2])
    m = re.fullmatch(r'(?:input|output) "([^"]+)"', name or "")
    if m and m[1] in k.refs:
        i = k.refs.index(m[1])
        return ("input", i) if i < k.inputs else ("output", i - k.inputs)
    return None


def _index_map(f: Finding, k: KernelSource) -> Fault | None:
    x = f.facts()
    w = x.get("window") if isinstance(x.get("window"), dict) else x
    which = _operand(str(w.get("operand") or x.get("map_axes") or ""), k)     # (a secret case: kept)
    if which is None:
        return None
    maps = k.in_maps if which[0] == "input" else k.out_maps
    place = maps[which[1]] if which[1] < len(maps) else None
    return Fault(f"the index map of {which[0]} {which[1]}", place) if place is not None else None


def _line_of(where: str, sources: Sources) -> Place | None:
    """'add.py:36:11 (kernel)' (a race report's access) as a quoted line."""
    m = re.match(r"\s*([^\s:]+\.py):(\d+)", where or "")
    return sources.place(m[1], int(m[2])) if m else None


def _race(f: Finding, sources: Sources, first: str = "write") -> Fault | None:
    accesses = [a for a in f.facts().get("accesses") or [] if isinstance(a, dict)]
    # The write first: a DMA landing in a buffer, or the second core's store (a read
    # first for a buffer read before its copy is waited on).
    accesses.sort(key=lambda a: a.get("access") != first)
    for a in accesses:
        place = _line_of(str(a.get("where", "")), sources)
        if place is not None:
            return Fault("the racing " + str(a.get("access", "access")), place)
    return None


def _never_stored(x: dict) -> bool:
    """Most wrong elements hold the fill itself: never stored. A few among many values
    computed from the fill (an accumulator never zeroed) are the fill's rounding."""
    never = x.get("never_written")
    return bool(isinstance(never, int) and never and x.get("first_never")
                and 2 * never >= int(x.get("wrong_unwritten") or 0))


# How a wrong output block's unread input block lies (``grading.judge.reads``).
READS = ("grid-short", "block-narrow", "map-misses", "map-fixed")


def unread(f: Finding, related: Iterable[Finding] = ()) -> dict | None:
    """The input block a wrong output block needed and its steps never read: from a wrong
    result's own facts, or, for blocks the grid never visits, from a wrong result whose
    blocks are too narrow (widening the block is the fix of both)."""
    x = f.facts()
    if f.id == "wrong-result":
        u = x.get("unread_needed")
        return u if isinstance(u, dict) and u.get("kind") in READS else None
    if f.id == "uninitialized-memory" and (x.get("unwritten_count") or f.problem == "unwritten-blocks"):
        for r in related:
            u = r.facts().get("unread_needed") if r.id == "wrong-result" else None
            if isinstance(u, dict) and u.get("kind") == "block-narrow":
                return u
    return None


def _unread_fault(u: dict, k: KernelSource) -> Fault | None:
    if u["kind"] == "grid-short":
        return Fault("the grid", k.grid_at) if k.grid_at is not None else None
    which = _operand(str(u.get("input", "")), k)
    if which is None or which[0] != "input" or which[1] >= len(k.in_maps) or k.in_maps[which[1]] is None:
        return None
    return Fault(f"the index map of input {which[1]}", k.in_maps[which[1]])


def _kernel_fault(f: Finding, k: KernelSource, related: Iterable[Finding], sources: Sources) -> Fault | None:
    x = f.facts()
    u = unread(f, related)
    if u is not None and (found := _unread_fault(u, k)) is not None:
        return found
    if (found := formula_fault(f, k, sources)) is not None:
        return Fault(*found)
    if f.id == "out-of-bounds" and crossed(x) and (found := _index_map(f, k)) is not None:
        return found    # the grid fits the array; the map sends its axes to the wrong block axes
    if f.id == "out-of-bounds":
        # A grid one step too long, or one that also leaves output blocks unvisited on the
        # same case (its axes swapped, a length from the wrong dimension): the grid's fault.
        unvisited = any(r.id == "uninitialized-memory" and r.problem == "unwritten-blocks" and r.case == f.case
                        for r in related)
        if (grid_too_long(x) is not None or unvisited) and k.grid_at is not None:
            return Fault("the grid", k.grid_at)
        return _index_map(f, k)
    if f.id == "output-block-revisit":
        if x.get("kind") == "parallel-shared" and k.semantics is not None:
            return Fault("the dimension semantics", k.semantics)
        return Fault("the grid", k.grid_at) if k.grid_at is not None else None
    if f.id == "grid-order-dependence" and f.problem != "hang":
        return Fault("the dimension semantics", k.semantics) if k.semantics is not None else None
    if f.id == "numerics" and narrow_scratch(x, k):
        return Fault("the scratch's dtype", k.scratch)
    if f.id == "numerics" and (reads := narrow_reads(x, k)):
        return Fault("the cast to 16 bits", reads[0])    # (float32 inputs rounded before anything else)
    if f.id == "numerics" and x.get("nonfinite") and len(exps := k.lines_of("exp", "exp2")) == 1:
        return Fault("the exponential", exps[0])     # (an inf from the one exp: its argument grew too large)
    if (f.id == "compile-reject" and x.get("rule_id") == "matmul-accumulator"
            or f.id == "numerics" and not x.get("nonfinite")) and len(k.narrow_dots) == 1:
        # The one product with a 16-bit result: what the compiler refuses, and the
        # precision a bfloat16 product loses (an overflow's NaN is another story).
        return Fault("the product", k.narrow_dots[0])
    if f.id == "uninitialized-memory" and (reset := reset_axis(f, k)) is not None:
        return Fault("the reset's condition", reset[1])
    if f.id == "uninitialized-memory":
        if (x.get("unwritten_count") or f.problem == "unwritten-blocks") and k.grid_at is not None:
            return Fault("the grid", k.grid_at)
        if _never_stored(x) and k.never_run:
            return Fault("the pl.when around the store", k.never_run[0][1])   # (its condition is never true)
        if (_never_stored(x) or stores_miss(x, k)) and len(k.stores) == 1:
            return Fault("the store", k.stores[0])      # (no scratch: the one store is what misses its rows)
        return None
    if f.id == "dma-protocol" and (m := dma_fact(f, k)) is not None:
        # (a copy started into the wrong slot: its start is the odd one out)
        if m.kind == "unwaited":
            return Fault("the copy never waited on", m.start)
        return Fault("the copy's start", m.start) if m.kind == "slot" else Fault("the wait", m.wait)
    if f.id == "dma-protocol" and f.problem == "mode-dependent":
        race = next((r for r in related if r.id == "data-race" and r.case == f.case), None)
        # Wrong only when copies land late: the read that comes before its wait is the fault.
        early = x.get("mode_failing") == "on_wait"
        found = _race(race, sources, "read" if early else "write") if race is not None else None
        if found is not None and found.what == "the racing read" and early:
            return Fault("the read before its wait", found.place)
        if found is not None:
            return Fault("the copy's start", found.place) if found.what == "the racing write" else found
        return Fault("the copy's start", k.dma_starts[-1]) if len(k.dma_starts) == 1 else None
    if f.id == "padding-dependence" and (read := padded_reads(x)):
        # The block spec whose last block sticks out past the array (the first such input).
        which = _operand(str(read[0][0]["operand"]), k)
        if which is not None and which[0] == "input" and which[1] < len(k.in_maps) and k.in_maps[which[1]]:
            return Fault(f"the block spec of input {which[1]}", k.in_maps[which[1]])
    return None


def dma_fact(f: Finding, k: KernelSource) -> SemMismatch | None:
    """The traced kernel's DMA fact that speaks to ``f``: its first wait amiss, or a copy never
    waited on, though not for a hang (a wait nothing satisfies: a copy left over did not stop it)."""
    m = k.sem_mismatches[0] if k.sem_mismatches else None
    return None if m is None or m.kind == "unwaited" and f.problem == "hang" else m


def narrow_reads(x: dict, k: KernelSource) -> tuple[Place, ...]:
    """A precision problem (no NaN or Inf) in a kernel that casts float32 values it reads to
    16 bits (``KernelSource.ops``' narrow_read): those casts' lines, else ()."""
    return () if x.get("nonfinite") else k.lines_of("narrow_read")


def stores_miss(x: dict, k: KernelSource) -> bool:
    """Elements never stored beside others computed from memory nothing wrote, in a kernel
    with no scratch (nothing it could accumulate into): its stores and reads miss their
    rows (a pl.ds start that is not a multiple of its size), not an accumulator's reset."""
    return (not k.scratch_refs and bool(k.stores) and isinstance(x.get("never_written"), int)
            and x["never_written"] > 0 and bool(x.get("first_never")) and isinstance(x.get("wrong_unwritten"), int))


def narrow_scratch(x: dict, k: KernelSource) -> bool:
    """A precision problem (no NaN or Inf) in a kernel whose scratch is 16-bit on some case
    and whose products are not: the accumulator's dtype is the fault."""
    return not x.get("nonfinite") and bool(k.narrow_scratch) and not k.narrow_dots and k.scratch is not None


def padded_reads(x: dict) -> list[tuple[dict, int]]:
    """An input-padding finding's partial input blocks (``partial_inputs``), as (input,
    axis) pairs with the first pair's block and array size along the axis: the padding
    one reduction sums. [] where the facts do not say (a secret case's are withheld)."""
    if x.get("problem") != "input-padding" or not isinstance(x.get("partial_inputs"), list):
        return []
    pairs = []
    for e in x["partial_inputs"]:
        ok = isinstance(e, dict) and all(isinstance(e.get(k), list) for k in ("axes", "array_shape", "block_shape"))
        for axis in e["axes"] if ok else ():
            if isinstance(axis, int) and 0 <= axis < min(len(e["array_shape"]), len(e["block_shape"])) \
                    and all(isinstance(v[axis], int) and v[axis] > 0 for v in (e["array_shape"], e["block_shape"])):
                pairs.append((e, axis))
    size = lambda p: (p[0]["block_shape"][p[1]], p[0]["array_shape"][p[1]])    # noqa: E731
    return [p for p in pairs if size(p) == size(pairs[0])] if pairs else []


def reset_axis(f: Finding, k: KernelSource) -> tuple[int, Place, int] | None:
    """Memory read before written (not blocks never visited nor elements never stored), in a
    kernel that resets at the first step of a parallel grid axis while
    its one reduction ("arbitrary") axis is another: (that axis, the reset's line, the
    reduction's axis). Accumulators reset per query block carry sums across output blocks."""
    x = f.facts()
    if f.problem == "unwritten-blocks" or x.get("unwritten_count") or _never_stored(x):
        return None     # blocks never visited, elements never stored: not what a reset keeps
    sem = k.dimension_semantics
    axes = {a for a, _p in k.resets}
    reduction = [i for i, s in enumerate(sem) if s == "arbitrary"]
    if len(axes) != 1 or len(reduction) != 1:
        return None
    axis = axes.pop()
    if axis >= len(sem) or sem[axis] != "parallel":
        return None
    return axis, next(p for a, p in k.resets if a == axis), reduction[0]


def _length(f: Finding, sources: Sources | None) -> tuple[dict, tuple[Place, str] | None] | None:
    """A length from the wrong dimension (``judge.causes.one_length``): its fact, and the
    one ``.shape[dim]`` the module reads (the kernel's own, where the module reads more)."""
    lf = f.facts().get("length_from")
    if not isinstance(lf, dict) or not all(isinstance(lf.get(k), int) for k in ("axis", "dim", "rank")):
        return None
    reads = sources.shape_reads(lf["dim"], lf["rank"]) if sources is not None else ()
    span = re.search(r":(\d+)-(\d+)$", sources.kernels[0].lines) if sources and len(sources.kernels) == 1 else None
    if len(reads) > 1 and span is not None:
        reads = tuple(r for r in reads if int(span[1]) <= _line(r[0]) <= int(span[2]))
    return lf, reads[0] if len(reads) == 1 else None


def _wrong_dimension(f: Finding, sources: Sources | None) -> tuple[str, dict] | None:
    """The fix a length from the wrong dimension calls for, in each visible case's sizes."""
    found = _length(f, sources)
    if found is None:
        return None
    lf, read = found
    cases = [c for c in lf.get("cases") or [] if isinstance(c, list) and len(c) == 3]
    if not cases:
        return None     # (seen on secret cases only: their sizes are not said)
    expr = read[1] if read is not None and read[1] else f"a length read from .shape[{lf['dim']}]"
    fixed = re.sub(r"\[\s*-?\d+\s*\]$", f"[{lf['axis']}]", expr) if read is not None and read[1] else ""
    return "wrong-dimension", {
        "expr": expr, "dim": lf["dim"], "axis": lf["axis"], "fixed": f": {fixed}" if fixed else "",
        "wrong": ", ".join(f"{n} on {c}" for c, _r, n in cases),
        "right": ", ".join(f"{r} on {c}" for c, r, _n in cases)}


def with_grid(f: Finding, sources: Sources | None) -> Finding:
    """An out-of-bounds error TPU interpret mode raised names the grid point, not the
    grid: the kernel's grid on that very case, from its program, where it is known."""
    if f.id != "out-of-bounds" or "grid" in f.facts() or sources is None or len(sources.kernels) != 1:
        return f
    k = sources.kernels[0]
    return f.with_facts(grid=list(k.grid)) if k.grid and f.case is not None and f.case == sources.case else f


def fault(f: Finding, sources: Sources | None, related: Iterable[Finding] = ()) -> Fault | None:
    """The line that holds ``f``'s fault, from its evidence (``related``: the
    grading's other findings, e.g. the race report beside a DMA bug)."""
    if sources is None:
        return None
    if f.id == "data-race":
        return _race(f, sources)
    if f.id == "not-a-kernel":
        outside = dict(sources.outside)
        named = [p for p in (f.facts().get("outside") or {}) if p in outside]
        return Fault("the work outside the kernel", outside[named[0]]) if named else None
    if f.id == "submission-error" and f.problem in ("timeout", "import-timeout"):
        at = f.facts().get("at")
        place = sources.place(at[0], at[1]) if isinstance(at, list) and len(at) == 2 else None
        return Fault("where it was running", place) if place is not None else None
    if (length := _length(f, sources)) is not None and length[1] is not None:
        return Fault("the length", length[1][0])
    if f.id == "out-of-bounds" and isinstance(f.facts().get("slice"), dict):    # refused while tracing
        place = sources.innermost(f.facts().get("frames"))
        return Fault("the slice", place) if place is not None else None
    if len(sources.kernels) != 1:
        return None
    return _kernel_fault(with_grid(f, sources), sources.kernels[0], related, sources)
