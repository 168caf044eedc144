"""A pallas_call's grid written one way (pure data; no JAX), part of the normal
form (``normal``): two kernels that visit the same blocks and compute the same
thing compare as one, however their grids are spelled.

- a one-axis grid whose index maps split the step into (t // c, t % c) is the
  two-axis grid (G // c, c) with maps that read the two axes (a flattened grid);
- the grid's axes that the first output's index map sends to output dimensions
  are put in the order of those dimensions (``grid=(nj, ni)`` with
  ``lambda j, i: (i, j)`` is ``grid=(ni, nj)`` with ``lambda i, j: (i, j)``),
  every index map's arguments, the kernel's ``program_id``/``num_programs``
  axes and the dimension semantics permuted to match. An axis no output
  dimension follows (a reduction) keeps its place, so a K axis outermost stays
  a different kernel from one with K innermost.

Index maps are evaluated, not pattern-matched: a tiny interpreter runs their
integer arithmetic at every grid point (floor division comes out of the tracer
as a dozen equations). Anything it does not recognise leaves the call as it is.
``cover`` says how a grid's length compares with the blocks of the array each
axis walks (one step too long and one too short are different kernels).
"""
from __future__ import annotations

from typing import Any

from .literals import _program_of, _scalar

MAX_POINTS = 4096       # grid points an index map is evaluated at, at most
AXIS_PRIMS = ("program_id", "num_programs")


def _fields(dc: Any) -> list | None:
    return dc["dc"][1] if isinstance(dc, dict) and isinstance(dc.get("dc"), list) and len(dc["dc"]) == 2 \
        and isinstance(dc["dc"][1], list) else None


def _get(dc: Any, name: str) -> Any:
    return next((v for k, v in _fields(dc) or [] if k == name), None)


def _set(dc: Any, name: str, value: Any) -> dict:
    return {"dc": [dc["dc"][0], [[k, value if k == name else v] for k, v in dc["dc"][1]]]}


def _ints(v: Any) -> list[int] | None:
    items = v.get("t") if isinstance(v, dict) else None
    return items if isinstance(items, list) and all(type(i) is int for i in items) else None


# ---- a tiny interpreter for index maps -------------------------------------------------

def _div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


_OPS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": _div, "rem": lambda a, b: a - b * _div(a, b), "max": max, "min": min,
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b, "and": lambda a, b: a and b, "or": lambda a, b: a or b,
}
_UNARY = {"neg": lambda a: -a, "sign": lambda a: (a > 0) - (a < 0), "not": lambda a: not a,
          "convert_element_type": lambda a: a}


def evaluate(jaxpr: dict, args: list[int]) -> list[int] | None:
    """An index map's outputs at one grid point (its scalar-prefetch refs absent),
    or None where it does something else than scalar integer arithmetic."""
    env: dict[int, Any] = {v["v"]: a for v, a in zip(jaxpr.get("invars", []), args)}

    def read(atom: dict):
        if "v" in atom:
            return env.get(atom["v"])
        value = _scalar(atom)
        return None if isinstance(value, float) else value
    for e in jaxpr.get("eqns", []):
        ins = [read(a) for a in e.get("in", [])]
        if any(x is None for x in ins) or len(e.get("out", [])) != 1:
            return None
        p = e["p"]
        try:
            if p in _OPS and len(ins) == 2:
                out = _OPS[p](*ins)
            elif p in _UNARY and len(ins) == 1:
                out = _UNARY[p](ins[0])
            elif p == "select_n" and len(ins) >= 2 and 0 <= int(ins[0]) < len(ins) - 1:
                out = ins[1 + int(ins[0])]
            else:
                return None
        except (ZeroDivisionError, TypeError, ValueError):
            return None
        env[e["out"][0]["v"]] = out
    outs = [read(a) for a in jaxpr.get("outvars", [])]
    return None if any(o is None for o in outs) else [int(o) for o in outs]


def _points(grid: list[int]) -> list[tuple[int, ...]] | None:
    total = 1
    for g in grid:
        total *= g
    if total > MAX_POINTS or total <= 0:
        return None
    points = [()]
    for g in grid:
        points = [p + (i,) for p in points for i in range(g)]
    return points


# ---- the call's parts ------------------------------------------------------------------

class _Call:
    """A pallas_call equation's grid, index maps and kernel, as the document has them."""

    def __init__(self, eqn: dict):
        self.params = {k: v for k, v in eqn["params"]}
        self.gm = self.params.get("grid_mapping")
        self.grid = _ints(_get(self.gm, "grid"))
        self.mappings = (_get(self.gm, "block_mappings") or {}).get("t") or []
        self.maps = [_program_of(_get(m, "index_map_jaxpr")) for m in self.mappings]
        n = _get(self.gm, "num_index_operands")
        self.prefetch = n if type(n) is int else None
        outs = _get(self.gm, "num_outputs")
        self.outputs = outs if type(outs) is int else None

    @property
    def usable(self) -> bool:
        return (self.grid is not None and self.prefetch == 0 and bool(self.maps) and self.outputs
                and all(m is not None and not m[1] for m in self.maps))

    def table(self, k: int) -> dict[tuple[int, ...], list[int]] | None:
        points = _points(self.grid)
        if points is None:
            return None
        out = {}
        for p in points:
            got = evaluate(self.maps[k][0], list(p))
            if got is None:
                return None
            out[p] = got
        return out


def _kernel_axes(jaxpr: Any) -> set[int] | None:
    """The grid axes the kernel reads (program_id / num_programs); None when unreadable."""
    found: set[int] = set()
    stack = [jaxpr]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("p") in AXIS_PRIMS:
                axis = dict(node.get("params", [])).get("axis")
                if type(axis) is not int:
                    return None
                found.add(axis)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _renumbered(jaxpr: Any, new_of: dict[int, int]) -> Any:
    """The kernel with each program_id / num_programs axis renumbered."""
    if isinstance(jaxpr, list):
        return [_renumbered(x, new_of) for x in jaxpr]
    if not isinstance(jaxpr, dict):
        return jaxpr
    if jaxpr.get("p") in AXIS_PRIMS:
        params = [[k, new_of.get(v, v) if k == "axis" else v] for k, v in jaxpr.get("params", [])]
        return {**jaxpr, "params": params}
    return {k: _renumbered(v, new_of) for k, v in jaxpr.items()}


def _with_map(mapping: Any, jaxpr: dict) -> Any:
    old = _get(mapping, "index_map_jaxpr")
    new = {"cjx": {**old["cjx"], "jaxpr": jaxpr}} if "cjx" in old else {"jx": jaxpr}
    return _set(mapping, "index_map_jaxpr", new)


def _semantics_permuted(params: dict, order: list[int]) -> dict:
    cp = params.get("compiler_params")
    sem = _get(cp, "dimension_semantics") if _fields(cp) is not None else None
    if isinstance(sem, dict) and isinstance(sem.get("t"), list) and len(sem["t"]) == len(order):
        params = {**params, "compiler_params": _set(cp, "dimension_semantics", {"t": [sem["t"][a] for a in order]})}
    return params


# ---- the two rewrites -------------------------------------------------------------------

def _unflattened(call: _Call, params: dict) -> dict | None:
    """A one-axis grid whose maps read only t // c and t % c (and constants): two axes."""
    if len(call.grid) != 1 or call.grid[0] < 4:
        return None
    tables = [call.table(k) for k in range(len(call.maps))]
    if any(t is None for t in tables):
        return None
    g = call.grid[0]
    for c in range(2, g):
        if g % c:
            continue
        parts = [_as_split(t, c) for t in tables]
        if all(p is not None for p in parts) and any("j" in p for p in parts) and any("i" in p for p in parts):
            return _split_grid(call, params, c, parts)
    return None


def _as_split(table: dict, c: int) -> list | None:
    """Each output of a map as 'i' (t // c), 'j' (t % c) or a constant, else None."""
    outs = list(zip(*table.values())) if table else []
    kinds = []
    for values in outs:
        if all(v == t[0] // c for t, v in zip(table, values)):
            kinds.append("i")
        elif all(v == t[0] % c for t, v in zip(table, values)):
            kinds.append("j")
        elif len(set(values)) == 1:
            kinds.append(values[0])
        else:
            return None
    return kinds


def _split_grid(call: _Call, params: dict, c: int, parts: list[list]) -> dict | None:
    axes = _kernel_axes(params.get("jaxpr"))
    if axes is None or 0 in axes:
        return None        # the kernel reads t itself: no two-axis form without rewriting it
    new_maps = []
    for mapping, (old, _consts), kinds in zip(call.mappings, call.maps, parts):
        aval = old["invars"][0].get("aval")
        invars = [{"v": -101, "aval": aval}, {"v": -102, "aval": aval}]
        outs = [{"v": -101} if k == "i" else {"v": -102} if k == "j" else {"lit": k, "aval": aval} for k in kinds]
        new_maps.append(_with_map(mapping, {**old, "invars": invars, "eqns": [], "outvars": outs}))
    gm = _set(_set(call.gm, "grid", {"t": [call.grid[0] // c, c]}), "block_mappings", {"t": new_maps})
    # The maps' arguments: two grid indices where there was one.
    avals = _get(gm, "index_map_avals")
    if isinstance(avals, dict) and isinstance(avals.get("t"), list) and len(avals["t"]) == 1:
        gm = _set(gm, "index_map_avals", {"t": avals["t"] * 2})
    tree = _get(gm, "index_map_tree")
    if tree == {"tree": ["default", {"t": [{"t": [{"leaf": 0}]}, {"d": []}]}]}:
        gm = _set(gm, "index_map_tree", {"tree": ["default", {"t": [{"t": [{"leaf": 0}, {"leaf": 1}]}, {"d": []}]}]})
    return {**params, "grid_mapping": gm}


def _axis_order(call: _Call) -> list[int] | None:
    """The grid axes in the order the first output's dimensions follow them (axes no
    output dimension follows keep their places), or None when it stays as it is."""
    first_out = len(call.maps) - call.outputs
    m = call.maps[first_out][0]
    invars = [v.get("v") for v in m.get("invars", [])]
    follows = {}
    for d, out in enumerate(m.get("outvars", [])):
        if "v" in out and out["v"] in invars and m.get("eqns") == []:
            follows.setdefault(invars.index(out["v"]), d)
    mapped = sorted(follows)
    if len(mapped) < 2 or len(invars) != len(call.grid):
        return None
    order = list(range(len(call.grid)))
    for slot, axis in zip(mapped, sorted(mapped, key=follows.get)):
        order[slot] = axis
    return None if order == list(range(len(call.grid))) else order


def _reordered(call: _Call, params: dict) -> dict | None:
    order = _axis_order(call)
    if order is None:
        return None
    new_of = {old: new for new, old in enumerate(order)}
    new_maps = []
    for mapping, (old, _consts) in zip(call.mappings, call.maps):
        invars = old.get("invars", [])
        new_maps.append(_with_map(mapping, {**old, "invars": [invars[a] for a in order]}))
    gm = _set(_set(call.gm, "grid", {"t": [call.grid[a] for a in order]}), "block_mappings", {"t": new_maps})
    params = {**params, "grid_mapping": gm, "jaxpr": _renumbered(params.get("jaxpr"), new_of)}
    return _semantics_permuted(params, order)


def call_params(eqn: dict) -> list:
    """A pallas_call equation's parameters with its grid in normal form (as given
    when nothing applies)."""
    call = _Call(eqn)
    if not call.usable:
        return eqn["params"]
    params = dict(call.params)
    flat = _unflattened(call, params)
    if flat is not None:
        params = flat
        call = _Call({"params": list(params.items())})
    again = _reordered(call, params) if call.usable else None
    params = again or params
    return [[k, params[k]] for k, _v in eqn["params"]]


def cover(eqn: dict) -> tuple[str, ...] | None:
    """Per grid axis, how its length compares with the blocks of the array
    dimension the output's index map sends it to: "=" (one step per block),
    "+1"/"-1" (one step too many or too few), "more"/"fewer"; "?" for an axis no
    output dimension follows."""
    call = _Call(eqn)
    if not call.usable:
        return None
    first_out = len(call.maps) - call.outputs
    mapping, m = call.mappings[first_out], call.maps[first_out][0]
    shape = (_get(mapping, "array_aval") or {}).get("sa", [None])[0]
    blocks = [_get(b, "block_size") for b in (_get(mapping, "block_shape") or {}).get("t", [])]
    invars = [v.get("v") for v in m.get("invars", [])]
    if not isinstance(shape, list) or len(blocks) != len(shape) or m.get("eqns") != []:
        return None
    rel = ["?"] * len(call.grid)
    for d, out in enumerate(m.get("outvars", [])):
        if "v" in out and out["v"] in invars and type(blocks[d]) is int and blocks[d] > 0:
            axis = invars.index(out["v"])
            diff = call.grid[axis] - -(-shape[d] // blocks[d])
            rel[axis] = "=" if diff == 0 else f"{diff:+d}" if abs(diff) == 1 else "more" if diff > 0 else "fewer"
    return tuple(rel)
