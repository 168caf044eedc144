"""A store split into pieces, written as one (pure data; no JAX), part of the
normal form (``normal``): ``o[:4] = x[:4] + y[:4]; o[4:] = x[4:] + y[4:]`` is
``o[...] = x[...] + y[...]``.

The pieces must tile the stored ref along one axis (static slices, the other
axes whole), each piece's value must be the same element-wise computation of
reads at that very piece of refs nothing in the program writes, and nothing
else may touch the stored ref: then the pieces compute, element for element,
what one store of the whole computation does. Anything else is left as it is.
"""
from __future__ import annotations

from typing import Any

# Element-wise primitives: a piece of the output depends on that piece of the inputs only.
ELEMENTWISE = frozenset({
    "add", "sub", "mul", "div", "max", "min", "neg", "abs", "sign", "exp", "exp2", "log", "log1p", "expm1",
    "tanh", "logistic", "sqrt", "rsqrt", "sin", "cos", "pow", "integer_pow", "square", "floor", "ceil",
    "round", "convert_element_type", "select_n", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not",
    "xor", "rem", "erf", "clamp",
})


def _slices(eqn: dict) -> tuple[tuple, list[int]] | None:
    """A ref access's one NDIndexer as ((start, size) per axis, the ref's shape); None
    for anything else (no indexer, dynamic starts, strides, several transforms)."""
    tree = dict(eqn.get("params", [])).get("tree")
    try:
        registry, transforms = tree["tree"]
        (indexer,), = [transforms["t"]]
        name, fields = indexer["dc"]
        f = dict(fields)
        if name != "NDIndexer" or f["int_indexer_shape"] != {"t": []}:
            return None
        shape, out = f["shape"]["t"], []
        for index in f["indices"]["t"]:
            kind, parts = index["dc"]
            p = dict(parts)
            if kind != "Slice" or p["stride"] != 1 or not all(type(p[k]) is int for k in ("start", "size")):
                return None
            out.append((p["start"], p["size"]))
    except (KeyError, TypeError, ValueError):
        return None
    return (tuple(out), shape) if len(out) == len(shape) and all(type(d) is int for d in shape) else None


def _whole(eqn: dict) -> dict:
    """The access without its indexer (``ref[...]``)."""
    params = []
    for k, v in eqn["params"]:
        if k == "tree":
            v = {"tree": [v["tree"][0], {"t": []}]}
        params.append([k, v])
    return {**eqn, "params": params}


class _Program:
    def __init__(self, eqns: list[dict]):
        self.eqns = eqns
        self.made = {o["v"]: i for i, e in enumerate(eqns) for o in e.get("out", [])}
        self.uses: dict[int, int] = {}
        for e in eqns:
            for a in e.get("in", []):
                if "v" in a:
                    self.uses[a["v"]] = self.uses.get(a["v"], 0) + 1
        self.written = {e["in"][0].get("v") for e in eqns if e["p"] in ("swap", "addupdate") and e.get("in")}

    def piece(self, atom: dict, at: tuple, seen: list[int]) -> Any:
        """The key of one piece's value (the same for every piece of one computation),
        collecting its equations in ``seen``; None when it is not element-wise reads at ``at``."""
        if "v" not in atom:
            return ("lit", repr(atom.get("lit")))
        i = self.made.get(atom["v"])
        if i is None:
            return None
        e = self.eqns[i]
        seen.append(i)
        if self.uses.get(atom["v"], 0) != 1:
            return None         # used elsewhere too: not this piece's alone
        if e["p"] == "get":
            got = _slices(e)
            ref = e["in"][0].get("v") if e.get("in") else None
            if got is None or got[0] != at or ref in self.written:
                return None
            return ("get", ref)
        if e["p"] not in ELEMENTWISE or len(e.get("out", [])) != 1:
            return None
        keys = [self.piece(a, at, seen) for a in e.get("in", [])]
        if any(k is None for k in keys):
            return None
        params = repr(sorted((k, repr(v)) for k, v in e.get("params", [])))
        return (e["p"], params, tuple(keys))


def _tiles(pieces: list[tuple], shape: list[int]) -> bool:
    """Slices that cover the ref exactly, differing along one axis, in order."""
    axes = [d for d in range(len(shape)) if len({p[d] for p in pieces}) > 1]
    if len(axes) != 1:
        return False
    d = axes[0]
    if any(p[a] != (0, shape[a]) for p in pieces for a in range(len(shape)) if a != d):
        return False
    at = 0
    for p in sorted(pieces, key=lambda p: p[d][0]):
        if p[d][0] != at:
            return False
        at += p[d][1]
    return at == shape[d]


def merged(eqns: list[dict]) -> list[dict]:
    """The equations with each split store written as one store (as given when none is)."""
    prog = _Program(eqns)
    by_ref: dict[int, list[int]] = {}
    for i, e in enumerate(eqns):
        if e["p"] in ("get", "swap", "addupdate") and e.get("in") and "v" in e["in"][0]:
            by_ref.setdefault(e["in"][0]["v"], []).append(i)
    drop: set[int] = set()
    whole: set[int] = set()
    for idx in by_ref.values():
        stores = [i for i in idx if eqns[i]["p"] == "swap"]
        if len(stores) < 2 or len(stores) != len(idx) or any(prog.uses.get(o["v"]) for i in stores
                                                             for o in eqns[i].get("out", [])):
            continue
        found = [(_slices(eqns[i]), i) for i in stores]
        if any(s is None for s, _i in found) or not _tiles([s[0] for s, _i in found], found[0][0][1]):
            continue
        keys, parts = [], []
        for (at, _shape), i in found:
            seen: list[int] = []
            keys.append(prog.piece(eqns[i]["in"][1], at, seen))
            parts.append(seen)
        if None in keys or len(set(keys)) != 1:
            continue
        whole.update([found[0][1], *[j for j in parts[0] if eqns[j]["p"] == "get"]])
        drop.update(i for _s, i in found[1:])
        drop.update(j for part in parts[1:] for j in part)
    if not drop:
        return eqns
    return [_whole(e) if i in whole else e for i, e in enumerate(eqns) if i not in drop]
