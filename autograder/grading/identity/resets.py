"""Where a kernel resets what it accumulates: each top-level ``pl.when(pl.program_id(a)
== 0)`` whose body stores, read from the program document's kernel jaxpr (plain data,
no JAX). A reset keyed to a parallel grid axis while the reduction runs along another
(``@pl.when(qi == 0)`` in a flash kernel whose key axis is last) is the line of a
read-first bug: its accumulators carry one output block's sums into the next.

The document is the student's tracer's claim: anything of another form than these
readers expect is no reset (the feedback then names the kernel's lines).
"""
from __future__ import annotations

import base64
from typing import Any, Iterator

STORES = ("swap", "masked_swap")


def _args(e: dict) -> list:
    return e.get("in") if isinstance(e.get("in"), list) else []


def _param(e: dict, name: str) -> Any:
    params = e.get("params")
    if not isinstance(params, list):
        return None
    return next((p[1] for p in params if isinstance(p, list) and len(p) == 2 and p[0] == name), None)


def _zero(arg: Any) -> bool:
    """A literal 0 as the document writes one: {"lit": 0}, or a numpy scalar {"lit": {"a":
    [dtype, [], base64]}}."""
    if not isinstance(arg, dict):
        return False
    if "lit" in arg:
        lit = arg["lit"]
        return _zero(lit) if isinstance(lit, dict) else lit == 0 and type(lit) in (int, float)
    raw = arg.get("a")
    if isinstance(raw, list) and len(raw) == 3 and raw[1] == [] and isinstance(raw[2], str):
        try:
            return not any(base64.b64decode(raw[2], validate=True)) and len(raw[2]) <= 16
        except ValueError:
            return False
    return False


def _first_step_axis(pred: Any, made: dict) -> int | None:
    """The grid axis ``a`` of a predicate ``program_id(a) == 0`` (through casts), else None."""
    e = made.get(pred.get("v")) if isinstance(pred, dict) else None
    for _ in range(4):
        if e is None or e.get("p") != "convert_element_type" or not _args(e):
            break
        e = made.get(_args(e)[0].get("v")) if isinstance(_args(e)[0], dict) else None
    if e is None or e.get("p") != "eq" or len(_args(e)) != 2:
        return None
    a, b = _args(e)
    pid = a if _zero(b) else b if _zero(a) else None
    source = made.get(pid.get("v")) if isinstance(pid, dict) else None
    if source is None or source.get("p") != "program_id":
        return None
    axis = _param(source, "axis")
    return axis if type(axis) is int and 0 <= axis < 8 else None


def _stores(node: Any) -> bool:
    return any(e.get("p") in STORES for e in _eqns(node))


def _eqns(node: Any) -> Iterator[dict]:
    if isinstance(node, dict):
        if "p" in node and "params" in node:
            yield node
        for value in node.values():
            yield from _eqns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _eqns(value)


def resets(jaxpr: dict | None) -> list[tuple[int, Any]]:
    """(grid axis, source index) of each top-level reset at the first step of an axis."""
    eqns = [e for e in (jaxpr or {}).get("eqns", []) if isinstance(e, dict)]
    made = {o["v"]: e for e in eqns for o in (e.get("out") or []) if isinstance(o, dict) and "v" in o}
    found = []
    for e in eqns:
        if e.get("p") != "cond" or not _args(e):
            continue
        axis = _first_step_axis(_args(e)[0], made)
        if axis is not None and _stores(_param(e, "branches")):
            found.append((axis, e.get("src")))
    return found


def semantics(dc: Any) -> tuple[str, ...]:
    """The dimension semantics a document's compiler params name ("parallel", ...), else ()."""
    for holder in (dc, *(dc.values() if isinstance(dc, dict) and "dc" not in dc else ())):
        if isinstance(holder, dict) and isinstance(holder.get("dc"), list) and len(holder["dc"]) == 2:
            value = next((v for k, v in holder["dc"][1] if k == "dimension_semantics"), None)
            items = value.get("t") if isinstance(value, dict) else value
            if isinstance(items, list) and all(isinstance(s, str) for s in items):
                return tuple(s.lower().rsplit(".", 1)[-1] for s in items)
    return ()
