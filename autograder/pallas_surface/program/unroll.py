"""The DMAs a kernel issues, in order, with every index a number: the kernel's jaxpr
evaluated on integers only (pure data; no JAX).

A double-buffered kernel indexes its copies with its loop counter (the slot ``c % 2``,
``sem.at[1 - slot]``) and its grid position, so the equations alone give a wait's
semaphore as a variable, not a slot. What those indices are, though, is plain integer
arithmetic on numbers the document states: a ``fori_loop``'s bounds (a scan's
``length``, a while's condition), the grid, literals. ``dma_eqns`` runs that
arithmetic (``add``, ``rem``, ``lt``, ``select_n``, nested ``jit`` s, ``cond``
branches chosen by their index) for every grid point in order and every loop step,
and returns each ``dma_start`` and ``dma_wait`` it reaches as the equation it was,
its operands replaced by what they held: a literal for a number, the kernel's own
ref for a ref. ``dmas.copy_of`` then reads them as it reads a static kernel's.

Everything else (a float, a value read from a ref, an unknown primitive) is unknown;
a DMA whose index is unknown, a branch chosen by an unknown, or a DMA under an
equation this reader does not enter gives ``None``: no fact, as before. The document
is the tracer's claim, so the walk is bounded (``STEPS`` equations in all, ``POINTS``
grid points, ``DEPTH`` nested jaxprs) and a malformed one reads as ``None``, never as
an exception. Cost: a loop with no DMA inside is not stepped through (its results
are unknown), so the budget goes to the loops that copy.
"""
from __future__ import annotations

import base64
import binascii
import itertools
import operator
from dataclasses import dataclass
from typing import Any, Callable

DMA = ("dma_start", "dma_wait")
STORES = ("swap", "masked_swap")
STEPS = 20_000      # equations evaluated in all (a 64-step loop of 30 equations on 8 grid points is 15,360)
POINTS = 64         # grid points walked
DEPTH = 12          # nested jaxprs


class _Unread(Exception):
    """The walk cannot go on: over budget, malformed, or a DMA it cannot place."""


@dataclass(frozen=True)
class RefOf:
    """A ref: the kernel's own variable id (or a scoped allocation's)."""
    var: int


def _trunc_div(a: int, b: int) -> int | None:
    if b == 0:
        return None
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _rem(a: int, b: int) -> int | None:
    q = _trunc_div(a, b)
    return None if q is None else a - b * q


# Integer and boolean scalar primitives, as lax defines them on integers (``div`` and
# ``rem`` round toward zero; ``jnp``'s ``%`` and ``//`` are jits of these).
ARITH: dict[str, Callable[..., Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "neg": operator.neg,
    "max": max, "min": min, "abs": abs, "sign": lambda a: (a > 0) - (a < 0),
    "div": _trunc_div, "rem": _rem,
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "eq": operator.eq, "ne": operator.ne,
    "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "not": lambda a: (not a) if type(a) is bool else ~a,
    "clamp": lambda lo, x, hi: max(lo, min(x, hi)),
    "multiple_of": lambda a: a,
}
CALLS = ("jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call", "remat", "checkpoint")


def _params(eqn: dict) -> dict:
    p = eqn.get("params")
    return {k[0]: k[1] for k in p if isinstance(k, list) and len(k) == 2 and isinstance(k[0], str)} \
        if isinstance(p, list) else {}


def _jaxpr_of(value: Any) -> dict | None:
    """A parameter's jaxpr: {"cjx": {"jaxpr": ...}} (closed) or {"jx": ...}."""
    if isinstance(value, dict) and isinstance(value.get("cjx"), dict):
        value = value["cjx"].get("jaxpr")
    elif isinstance(value, dict) and "jx" in value:
        value = value["jx"]
    return value if isinstance(value, dict) and isinstance(value.get("eqns"), list) else None


def has_dma(node: Any, prims: tuple[str, ...] = DMA) -> bool:
    """Whether a DMA primitive (one of ``prims``) is anywhere under ``node``."""
    stack = [node]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if v.get("p") in prims:
                return True
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def _number(value: Any) -> bool:
    return type(value) in (int, bool)


def _atom(value: Any) -> dict:
    """An operand as ``dmas.copy_of`` reads it: a literal, a ref's variable, or neither."""
    if isinstance(value, RefOf):
        return {"v": value.var}
    if _number(value):
        return {"lit": int(value)}
    return {"unknown": True}


def dma_eqns(jaxpr: Any, grid: tuple[int, ...] = ()) -> list[dict] | None:
    """Every DMA equation the kernel issues, in order over the grid (row-major) and its
    loops, its operands resolved (see the module's docstring); None where it cannot tell."""
    if isinstance(jaxpr, dict) and isinstance(jaxpr.get("eqns"), list) and not has_dma(jaxpr["eqns"]):
        return []
    walk = _walked(jaxpr, grid, DMA)
    return walk.found if walk is not None else None


def _walked(jaxpr: Any, grid: tuple[int, ...], targets: tuple[str, ...]) -> _Walk | None:
    """The kernel walked at every grid point in order, ``targets`` reached; None where it
    cannot tell (malformed, over a bound, a target under what the walk does not enter)."""
    if not isinstance(jaxpr, dict) or not isinstance(jaxpr.get("eqns"), list):
        return None
    if not all(type(g) is int and g >= 0 for g in grid) or _size(grid) > POINTS:
        return None
    walk = _Walk(grid, targets)
    refs = [RefOf(v["v"]) if isinstance(v, dict) and type(v.get("v")) is int else None
            for v in jaxpr.get("invars") or []]
    try:
        for point in itertools.product(*(range(g) for g in grid)):
            walk.point = point
            walk.jaxpr(jaxpr, refs, 0)
    except (_Unread, TypeError, ValueError, OverflowError, RecursionError):
        return None
    return walk


def never_run(jaxpr: Any, grid: tuple[int, ...], prims: tuple[str, ...] = STORES) -> list[tuple[dict, dict]] | None:
    """The equations of ``prims`` (stores) under a ``cond`` that no grid point runs, each
    with the innermost such cond (a ``pl.when`` whose condition is false at every step);
    None where it cannot tell (a branch chosen by a value read from memory, the budget).
    The same walk as ``dma_eqns``, its targets the stores."""
    guarded = [(e, c) for e, c in _guarded(jaxpr, prims, None, 0) if c is not None]
    if not guarded:
        return []       # (no store under a branch: nothing to walk for, the common kernel)
    walk = _walked(jaxpr, grid, prims)
    return None if walk is None else [(e, c) for e, c in guarded if id(e) not in walk.reached]


def _guarded(node: Any, prims: tuple[str, ...], cond: dict | None, depth: int):
    """Every equation of ``prims`` under ``node`` with its innermost enclosing cond (or None)."""
    if depth > 8 * DEPTH:      # (a jaxpr is several dicts and lists deep)
        return
    if isinstance(node, dict):
        if node.get("p") in prims:
            yield node, cond
        inner = node if node.get("p") == "cond" else cond
        for value in node.values():
            yield from _guarded(value, prims, inner, depth + 1)
    elif isinstance(node, list):
        for value in node:
            yield from _guarded(value, prims, cond, depth + 1)


def _size(grid: tuple[int, ...]) -> int:
    n = 1
    for g in grid:
        n *= g
    return n


class _Walk:
    def __init__(self, grid: tuple[int, ...], targets: tuple[str, ...] = DMA):
        self.grid, self.point, self.steps, self.found, self.targets = grid, (), 0, [], targets
        self.holds: dict[int, bool] = {}     # has_dma of an equation's parameters, once each (by identity)
        self.reached: set[int] = set()       # the target equations reached (by identity)

    def has_dma(self, eqn: dict) -> bool:
        key = id(eqn)
        if key not in self.holds:
            self.holds[key] = has_dma(eqn.get("params"), self.targets)
        return self.holds[key]

    def jaxpr(self, j: Any, args: list, depth: int) -> list:
        if depth > DEPTH or not isinstance(j, dict) or not isinstance(j.get("eqns"), list):
            raise _Unread
        invars = j.get("invars") or []
        if not isinstance(invars, list) or len(invars) != len(args):
            raise _Unread
        env: dict[int, Any] = {}
        for var, value in zip(invars, args):
            env[_var(var)] = value
        for eqn in j["eqns"]:
            if not isinstance(eqn, dict) or not isinstance(eqn.get("in"), list):
                raise _Unread
            outs = self.eqn(eqn, [_value(a, env) for a in eqn["in"]], depth)
            out = eqn.get("out") if isinstance(eqn.get("out"), list) else []
            for var, value in zip(out, outs + [None] * (len(out) - len(outs))):
                if isinstance(var, dict) and type(var.get("v")) is int:
                    env[var["v"]] = value
        return [_value(a, env) for a in j.get("outvars") or []]

    def eqn(self, eqn: dict, ins: list, depth: int) -> list:
        self.steps += 1
        if self.steps > STEPS:
            raise _Unread
        p, params = eqn.get("p"), _params(eqn)
        if p in self.targets:
            self.reached.add(id(eqn))
            if p in DMA:
                self.found.append({**eqn, "in": [_atom(v) for v in ins]})
            return []
        if p in ARITH:
            return [_bounded(ARITH[p](*ins)) if ins and all(_number(v) for v in ins) else None]
        if p == "convert_element_type":
            dt = params.get("new_dtype")
            kind = dt.get("dt") if isinstance(dt, dict) else None
            ok = _number(ins[0]) if ins else False
            return [(bool(ins[0]) if kind == "bool" else int(ins[0])) if ok and _integral(kind) else None]
        if p == "select_n":
            which = ins[0] if ins else None
            return [ins[1 + int(which)] if _number(which) and 0 <= int(which) < len(ins) - 1 else None]
        if p in ("program_id", "num_programs"):
            axis = params.get("axis")
            if type(axis) is not int or not 0 <= axis < len(self.grid):
                return [None]
            return [self.point[axis] if p == "program_id" else self.grid[axis]]
        return self.higher(eqn, p, params, ins, depth)

    def higher(self, eqn: dict, p: Any, params: dict, ins: list, depth: int) -> list:
        """Calls (``jnp``'s ``%`` is one) and branches chosen by a number are entered; loops
        only where they hold a DMA (else their results are unknown)."""
        dma = self.has_dma(eqn)
        if p in CALLS:
            inner = next((j for k in ("jaxpr", "call_jaxpr", "fun_jaxpr") if (j := _jaxpr_of(params.get(k)))), None)
            return self.jaxpr(inner, ins, depth + 1) if inner is not None or dma else []
        if p == "cond":
            return self.cond(params, ins, depth) if dma or (ins and _number(ins[0])) else []
        if not dma:
            return []
        if p == "scan":
            return self.scan(params, ins, depth)
        if p == "while":
            return self.while_(params, ins, depth)
        if p == "run_scoped":
            inner = _jaxpr_of(params.get("jaxpr"))
            scoped = [RefOf(_var(v)) for v in (inner or {}).get("invars") or []]
            return self.jaxpr(inner, scoped, depth + 1)
        raise _Unread       # a DMA under an equation this reader does not enter

    def cond(self, params: dict, ins: list, depth: int) -> list:
        branches = params.get("branches")
        branches = branches.get("t") if isinstance(branches, dict) else branches
        if not isinstance(branches, list) or not branches or not ins or not _number(ins[0]):
            raise _Unread
        index = min(max(int(ins[0]), 0), len(branches) - 1)
        return self.jaxpr(_jaxpr_of(branches[index]), ins[1:], depth + 1)

    def scan(self, params: dict, ins: list, depth: int) -> list:
        body, length = _jaxpr_of(params.get("jaxpr")), params.get("length")
        if body is None or type(length) is not int or length < 0:
            raise _Unread
        carry_n = params.get("num_carry")
        consts_n = params.get("num_consts")
        if type(carry_n) is not int or type(consts_n) is not int:
            # 0.12 states the split as a flat tree; a fori_loop's scan has no xs and no ys,
            # so its carry is the body's every output and its consts the rest of its inputs.
            carry_n = len(body.get("outvars") or [])
            consts_n = len(ins) - carry_n
        xs_n = len(ins) - consts_n - carry_n
        if min(carry_n, consts_n, xs_n) < 0:
            raise _Unread
        consts, carry = ins[:consts_n], ins[consts_n:consts_n + carry_n]
        for _ in range(length):
            carry = self.jaxpr(body, consts + carry + [None] * xs_n, depth + 1)[:carry_n]
        return carry

    def while_(self, params: dict, ins: list, depth: int) -> list:
        cond, body = _jaxpr_of(params.get("cond_jaxpr")), _jaxpr_of(params.get("body_jaxpr"))
        nc, nb = params.get("cond_nconsts"), params.get("body_nconsts")
        if cond is None or body is None or type(nc) is not int or type(nb) is not int:
            raise _Unread
        cconsts, bconsts, carry = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
        while True:
            go = self.jaxpr(cond, cconsts + carry, depth + 1)
            if not go or not _number(go[0]):
                raise _Unread
            if not go[0]:
                return carry
            carry = self.jaxpr(body, bconsts + carry, depth + 1)


def _bounded(value: Any) -> Any:
    """An index-sized integer, else unknown (a loop that squares its counter stays cheap)."""
    return value if value is None or type(value) is bool or abs(value) < 2 ** 40 else None


def _integral(kind: Any) -> bool:
    return isinstance(kind, str) and (kind == "bool" or kind.startswith(("int", "uint")))


def _var(var: Any) -> int:
    if not isinstance(var, dict) or type(var.get("v")) is not int:
        raise _Unread
    return var["v"]


def _value(atom: Any, env: dict) -> Any:
    """An operand's value; a variable no equation bound is the kernel's own ref (a jaxpr
    read on its own, its refs not listed as invars)."""
    if isinstance(atom, dict) and "v" in atom:
        return env[atom["v"]] if atom["v"] in env else RefOf(atom["v"]) if type(atom["v"]) is int else None
    if isinstance(atom, dict) and "lit" in atom:
        lit = atom["lit"]
        return lit if _number(lit) else _scalar(lit)
    return None


def _scalar(lit: Any) -> int | bool | None:
    """A literal written as a 0-d integer array ({"a": [dtype, [], base64]}), else unknown."""
    body = lit.get("a") if isinstance(lit, dict) else None
    if not (isinstance(body, list) and len(body) == 3 and body[1] == [] and isinstance(body[2], str)
            and _integral(body[0]) and len(body[2]) <= 12):
        return None
    try:
        raw = base64.b64decode(body[2], validate=True)
    except (ValueError, binascii.Error):
        return None
    if body[0] == "bool":
        return raw != b"\x00" * len(raw) if len(raw) == 1 else None
    if len(raw) not in (1, 2, 4, 8):
        return None
    return int.from_bytes(raw, "little", signed=not body[0].startswith("uint"))
