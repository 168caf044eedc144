"""A kernel's numbers, and which of them a size no test runs may not change
freely (pure data; no JAX).

A face (``canonical``) sets every number and dtype aside. That is right
between two graded sizes, each checked on its own, and for most numbers of a
size no test runs (the production size of the VMEM budget, a speed size of the
estimate, a numerics stress input) too: a check that reads that size reads
its program there, so its grid, blocks, scratch and index maps (a kernel's
*frame*) are that size's own, judged by the VMEM budget and the index-map scan
at that size (``grading.judge.faces``), and a stress input's run compares its
output. What no check at the size reads is held to the graded kernels: every
dtype of the kernels, and every integer of their bodies (a literal, a
parameter, a ref's shape), which the speed estimate counts as work. Each number
(every integer and dtype in a ``pallas_call``) has a slot, the same at every
size the function builds that kernel; a checked slot's values at the graded
sizes must follow one rule that also gives its value at the ungraded size:

- a constant (a block of 128 rows at every size);
- of a quantity q (a dimension of the case, a product of two, an operand's
  block count, or an integer of the frame at that size: a body's (bm, bn)
  follows its blocks, whatever picks them): ``floor(q / c) + e`` or
  ``ceil(q / c) + e`` (c a positive integer, e in -2..2: a loop of
  ``pl.cdiv(M, 128)`` steps, the last step ``K // 128 - 1``), ``q * c``,
  ``q + c``, ``min(q, c)``, the largest power of two dividing q, at most c,
  or q rounded down or up to a multiple of c (a mask bound ``(m // 8) * 8``);
- for a dtype: the same dtype, or the case's own at every size.

A slot that exists at the ungraded size only (a loop unrolled more times) has
nothing to follow and is not checked: the face says the same equations run.
Floats are not checked (no analysis that vouches for a size reads them).
"""
from __future__ import annotations

import base64
import math
import re
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from .canonical import DROPPED_PARAMS, KERNEL_CALLS, Canon, Jaxpr, jaxprs_in

Value = int | str          # an integer, or a dtype's name


@dataclass(frozen=True)
class Size:
    """What a size's rules read: its dimensions, its case dtype, and how many
    blocks each blocked operand of each kernel has along each dimension."""
    dims: tuple[tuple[str, int], ...]
    dtype: str
    blocks: tuple[tuple[str, int], ...] = ()

    def quantities(self) -> dict[str, int]:
        """The dimensions, every product of two of them, and the block counts."""
        d = dict(self.dims)
        out = dict(d)
        names = sorted(d)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                out[f"{a}*{b}"] = d[a] * d[b]
        out.update(self.blocks)
        return out


def _literal(lit: Any) -> Value | None:
    """An integer literal's value (a plain int, or a scalar integer array)."""
    if isinstance(lit, bool) or lit is None:
        return None
    if isinstance(lit, int):
        return lit
    if isinstance(lit, dict) and "a" in lit:
        dtype, shape, data = lit["a"]
        if shape or not isinstance(dtype, str) or not dtype.startswith(("int", "uint")):
            return None
        try:
            return int(np.frombuffer(base64.b64decode(data), dtype=np.dtype(dtype))[0])
        except (ValueError, TypeError, IndexError):
            return None
    return None


def _walk_value(v: Any, path: str, out: dict[str, Value]) -> None:
    """Every integer and dtype in a parameter value, by its path (sub-programs aside)."""
    if isinstance(v, bool) or v is None or isinstance(v, (str, float)):
        return
    if isinstance(v, int):
        out[path] = v
        return
    if isinstance(v, list):
        for i, x in enumerate(v):
            _walk_value(x, f"{path}[{i}]", out)
        return
    if isinstance(v, dict) and len(v) == 1:
        (tag, body), = v.items()
        if tag in ("jx", "cjx", "a"):
            return
        if tag == "dt" and isinstance(body, str):
            out[path] = "dtype:" + body
            return
        if tag == "dc" and isinstance(body, list) and len(body) == 2 and isinstance(body[1], list):
            for field_ in body[1]:
                if isinstance(field_, list) and len(field_) == 2 and isinstance(field_[0], str):
                    _walk_value(field_[1], f"{path}.{field_[0]}", out)
            return
        _walk_value(body, path if tag in ("t", "l") else f"{path}.{tag}", out)


def _walk_jaxpr(j: Jaxpr, prefix: str, out: dict[str, Value]) -> None:
    """The slots of one (sub-)program: its inputs' avals, and each live
    equation's literals and parameters, by (shingle, occurrence)."""
    for i, v in enumerate(j.doc.get("invars", [])):
        _walk_value(v.get("aval"), f"{prefix}/in{i}", out)
    seen: dict[str, int] = {}
    for e in j.live:
        occurrence = seen.get(e.shingle, 0)
        seen[e.shingle] = occurrence + 1
        slot = f"{prefix}/{e.prim}:{e.shingle}#{occurrence}"
        for i, a in enumerate(e.doc.get("in", [])):
            if "v" not in a:
                value = _literal(a.get("lit"))
                if value is not None:
                    out[f"{slot}/lit{i}"] = value
                _walk_value(a.get("aval"), f"{slot}/lit{i}.aval", out)
        for k, v in e.doc.get("params", []):
            if k not in DROPPED_PARAMS:
                _walk_value(v, f"{slot}/{k}", out)
        for n, sub in enumerate(e.subs):
            _walk_jaxpr(sub, f"{slot}/sub{n}", out)


# A kernel equation's parameters that hold its body (pallas_call's, pl.kernel's
# mpmd_map's); the others (grid, blocks, scratch, index maps) are its frame.
BODY_PARAMS = frozenset({"jaxpr", "jaxprs"})


def _body_subs(eqn: Any) -> set[int]:
    """Which of a kernel equation's sub-programs (by position) are its body."""
    out, n = set(), 0
    for k, v in eqn.doc.get("params", []):
        if k in DROPPED_PARAMS:
            continue
        count = len(list(jaxprs_in(v)))
        if k in BODY_PARAMS:
            out.update(range(n, n + count))
        n += count
    return out


def _kernels(j: Jaxpr, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Each kernel equation with its slot prefix (outer work aside)."""
    seen: dict[str, int] = {}
    for e in j.live:
        occurrence = seen.get(e.shingle, 0)
        seen[e.shingle] = occurrence + 1
        slot = f"{prefix}/{e.prim}:{e.shingle}#{occurrence}"
        if e.prim in KERNEL_CALLS:
            yield slot, e
        else:
            for n, sub in enumerate(e.subs):
                yield from _kernels(sub, f"{slot}/sub{n}")


def _fields(value: Any, cls: str) -> dict[str, Any] | None:
    """A document's dataclass value of class ``cls`` as {field: value}."""
    if isinstance(value, dict) and "dc" in value and value["dc"][0] == cls:
        return dict(value["dc"][1])
    return None


def _tagged(value: Any, tag: str) -> Any:
    """The body of a tagged value (``{"t": [...]}``), or None when it is not one."""
    return value[tag] if isinstance(value, dict) and len(value) == 1 and tag in value else None


def _block_counts(slot: str, eqn: Any) -> dict[str, int]:
    """How many blocks each blocked operand of a kernel has along each
    dimension (``pl.cdiv(array, block)``): what a grid is made of. (Each field
    as the document has it: a forged one of another type counts no block.)"""
    grid_mapping = _fields(dict(eqn.doc.get("params", [])).get("grid_mapping"), "GridMapping")
    if grid_mapping is None:
        return {}
    out = {}
    for j, mapping in enumerate(_tagged(grid_mapping.get("block_mappings"), "t") or []):
        fields = _fields(mapping, "BlockMapping") or {}
        shape = (_tagged(fields.get("array_aval"), "sa") or [[]])[0]
        blocks = _tagged(fields.get("block_shape"), "t") or []
        for i, (dim, block) in enumerate(zip(shape, blocks)):
            size = (_fields(block, "Blocked") or {}).get("block_size")
            if isinstance(dim, int) and isinstance(size, int) and size > 0:
                out[f"{slot}/blocks{j}.{i}"] = -(-dim // size)
    return out


@dataclass(frozen=True)
class Numbers:
    """One program's kernel numbers by slot, its blocks per operand, and which
    slots are in a kernel's body (the rest are its frame: grid, blocks, scratch,
    index maps, compiler parameters)."""
    slots: dict[str, Value]
    blocks: tuple[tuple[str, int], ...]
    body: frozenset[str] = frozenset()

    def frame(self) -> tuple[tuple[str, int], ...]:
        """The frame's integers, by slot: what a body's numbers may derive from."""
        return tuple((k, v) for k, v in sorted(self.slots.items()) if k not in self.body and isinstance(v, int))


def of(document: dict) -> Numbers:
    """Every number of a checked program document's kernels, by slot."""
    program = document.get("program", document)
    j = Canon().jaxpr(program["jaxpr"])
    out: dict[str, Value] = {}
    blocks: dict[str, int] = {}
    body: set[str] = set()
    for slot, e in _kernels(j):
        blocks.update(_block_counts(slot, e))
        for k, v in e.doc.get("params", []):
            if k not in DROPPED_PARAMS:
                _walk_value(v, f"{slot}/{k}", out)
        bodies = _body_subs(e)
        for n, sub in enumerate(e.subs):
            before = set(out)
            _walk_jaxpr(sub, f"{slot}/sub{n}", out)
            if n in bodies:
                body.update(set(out) - before)
    return Numbers(out, tuple(sorted(blocks.items())), frozenset(body))


# ---- rules ---------------------------------------------------------------------------------

def _interval(lo: float, hi: float, points) -> tuple[float, float]:
    for a, b in points:
        lo, hi = max(lo, a), min(hi, b)
    return lo, hi


def _has_integer(lo: float, hi: float, lo_open: bool = False) -> bool:
    first = math.floor(lo) + 1 if lo_open else math.ceil(lo)
    return first <= hi and first >= 1


def _floor_fits(points: list[tuple[int, int]]) -> bool:
    """Some integer c >= 1 with v == q // c at every (q, v)."""
    lo, hi = 0.0, math.inf
    for q, v in points:
        if v < 0 or q < 0:
            return False
        if v == 0:
            lo = max(lo, float(q))          # c > q
            continue
        lo, hi = max(lo, q / (v + 1)), min(hi, q / v)   # q/(v+1) < c <= q/v
    return _has_integer(lo, hi, lo_open=True)


def _ceil_fits(points: list[tuple[int, int]]) -> bool:
    """Some integer c >= 1 with v == ceil(q / c) at every (q, v)."""
    lo, hi = 1.0, math.inf
    for q, v in points:
        if v < 1 or q < 1:
            return False
        lo = max(lo, q / v)                 # q/v <= c
        if v > 1:
            hi = min(hi, math.nextafter(q / (v - 1), 0))   # c < q/(v-1)
    return _has_integer(lo, hi)


def _same(values: list[int]) -> bool:
    return len(set(values)) == 1


def _lowbit(q: int) -> int:
    return q & -q if q > 0 else 0


def _min_fits(points: list[tuple[int, int]]) -> bool:
    """Some c with v == min(q, c) at every (q, v)."""
    fixed = {v for q, v in points if v < q}
    if any(v > q for q, v in points) or len(fixed) > 1:
        return False
    return not fixed or all(next(iter(fixed)) >= q for q, v in points if v == q)


def _pow2_fits(points: list[tuple[int, int]]) -> bool:
    """Some c with v == min(largest power of two dividing q, c) at every (q, v)."""
    return _min_fits([(_lowbit(q), v) for q, v in points])


def _multiple_fits(points: list[tuple[int, int]]) -> bool:
    """Some c >= 1 with v == c * floor(q / c) at every (q, v), or v == c * ceil(q / c):
    q rounded down or up to a multiple of c (a mask bound ``(m // 8) * 8``, a
    padded length ``pl.cdiv(n, 128) * 128``). c divides every v, and exceeds
    every q - v (down) or v - q (up)."""
    g = 0
    for _q, v in points:
        g = math.gcd(g, v)
    # c divides every v; the larger c, the looser the bound on the remainders, so
    # c = g (the largest divisor of g) fits whenever any c does.
    down = [q - v for q, v in points]
    up = [v - q for q, v in points]
    return g > 0 and ((min(down) >= 0 and max(down) < g) or (min(up) >= 0 and max(up) < g))


def _integer_rule(points: list[tuple[dict[str, int], int]]) -> bool:
    """Does one rule give every (quantities, value)?"""
    values = [v for _q, v in points]
    if _same(values):
        return True
    for name in points[0][0]:
        qv = [(q[name], v) for q, v in points]
        for e in (0, -1, 1, -2, 2):
            shifted = [(q, v - e) for q, v in qv]
            if _floor_fits(shifted) or _ceil_fits(shifted):
                return True
        if all(q and v % q == 0 for q, v in qv) and _same([v // q for q, v in qv]):
            return True
        if _same([v - q for q, v in qv]) or _min_fits(qv) or _pow2_fits(qv) or _multiple_fits(qv):
            return True
    return False


def _dtype_rule(points: list[tuple[Size, str]]) -> bool:
    values = [v for _s, v in points]
    return _same(values) or all(v == "dtype:" + s.dtype for s, v in points)


@dataclass(frozen=True)
class Departure:
    """A slot whose value at the ungraded size follows no rule of the graded sizes'."""
    slot: str
    value: Value
    where: str               # the slot in words
    graded: tuple = ()       # its values at the graded sizes, in their order


def describe(slot: str) -> str:
    """A slot in words, for the feedback: where in which kernel it is."""
    parts = slot.strip("/").split("/")
    calls = [i for i, p in enumerate(parts) if p.split(":")[0] in KERNEL_CALLS]
    kernel = calls[-1] if calls else 0
    inner = parts[kernel + 1:]
    params = parts[kernel].split("#", 1)[-1] if not inner else ""
    if inner and not inner[0].startswith("sub"):
        params, inner = inner[0], inner[1:]
    m = re.search(r"grid_mapping\.grid\[(\d+)\]", params)
    if m:
        return f"the grid's axis {m.group(1)}"
    m = re.search(r"block_mappings\[(\d+)\]\.(block_shape|transformed_block_aval|array_aval)\D*(\d+)?", params)
    if m:
        what = "array" if m.group(2) == "array_aval" else "block"
        return f"operand {m.group(1)}'s {what}"
    m = re.search(r"scratch_avals\[(\d+)\]", params)
    if m:
        return f"scratch buffer {m.group(1)}"
    prims = [p.split(":")[0] for p in inner if ":" in p]
    m = re.match(r"in(\d+)", inner[-1]) if inner else None
    if m and not prims:
        return f"the shape of the kernel body's ref {m.group(1)}"
    if prims:
        return f"a number of {prims[-1]} in the kernel body"
    return "a number of the kernel"


def _quantities(size: Size, n: Numbers) -> dict[str, int]:
    """What a body's number may derive from at one size: the size's dimensions
    (and products of two), each operand's block counts, and every integer of the
    kernels' frame there (a grid length, a block size, a scratch buffer's rows),
    one of each that takes the same values at every size (the rest say nothing more)."""
    return {**Size(size.dims, size.dtype, n.blocks).quantities(), **dict(n.frame())}


def _distinct(quantities: list[dict[str, int]]) -> list[dict[str, int]]:
    """The quantities every size has, one of each series of values (fewer to try)."""
    common = set.intersection(*(set(q) for q in quantities))
    seen: dict[tuple[int, ...], str] = {}
    for k in sorted(common, key=lambda k: (len(k), k)):
        seen.setdefault(tuple(q[k] for q in quantities), k)
    keep = set(seen.values())
    return [{k: q[k] for k in keep} for q in quantities]


def departures(ungraded: tuple[Size, Numbers], graded: list[tuple[Size, Numbers]]) -> list[Departure]:
    """The numbers of the ungraded program that no rule of the graded ones gives:
    every dtype of its kernels, and every integer of their bodies. The integers of
    a kernel's frame (its grid, blocks, scratch, index maps) are not asked: a check
    that reads the size reads them there (the VMEM budget, the index-map scan), and
    a body's integer may derive from them (a tile chosen by the shape)."""
    size_u, numbers_u = ungraded
    quantities_u = _quantities(size_u, numbers_u)
    graded = [(s, n.slots, _quantities(s, n)) for s, n in graded]
    distinct: dict[tuple[int, ...], list[dict[str, int]]] = {}    # by the graded sizes a slot has
    found = []
    for slot, value in sorted(numbers_u.slots.items()):
        where = tuple(i for i, (_s, got, _q) in enumerate(graded) if slot in got)
        seen = [(graded[i][0], graded[i][1][slot]) for i in where]
        if not seen:
            continue          # at this size only (an unrolled loop's extra copy): nothing to follow
        if isinstance(value, str) or any(isinstance(v, str) for _s, v in seen):
            ok = all(isinstance(v, str) for _s, v in seen) and isinstance(value, str) and \
                _dtype_rule([*seen, (size_u, value)])
        elif slot not in numbers_u.body:
            continue
        else:
            if where not in distinct:
                distinct[where] = _distinct([graded[i][2] for i in where] + [quantities_u])
            values = [v for _s, v in seen] + [value]
            ok = _integer_rule(list(zip(distinct[where], values)))
        if not ok:
            found.append(Departure(slot, value, describe(slot), tuple(v for _s, v in seen)))
    said: set[str] = set()
    return [d for d in found if not (d.where in said or said.add(d.where))]
