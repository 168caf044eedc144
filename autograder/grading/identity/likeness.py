"""What two submissions' programs have in common, for the TA site's
near-duplicate pairs (pure data; no JAX).

From one checked program document in normal form (``normal``: a wrapper
such as ``jax.jit`` inlined, a branch with a constant predicate replaced by
the branch taken, ``ref[:, :]`` as ``ref[...]``, simple arithmetic identities
such as ``k + 1 == n`` for ``k == n - 1``), where ``canonical`` sets aside
names, source lines, every number and dtype, the order of a commutative
operation's operands, drops equations nothing uses, and lets independent
equations come in any order, two views:
- ``shingles``: the pieces a similarity score compares. Each live equation's
  shingle (its primitive and parameters, with the primitives that feed it),
  its two-step shingle (with the shingles of the equations that feed it: runs
  of data flow, so two kernels made of the same operations wired differently
  differ), and each sub-program as a whole (a kernel body, an index map: which
  grid index goes where, so a grid order shows). Counted with multiplicity in
  doubling buckets (1, 2-3, 4-7, ...): a kernel that does a thing twice differs
  from one that does it once, while a loop unrolled 6 times instead of 4 at
  another block size changes little. Numbers are set aside, but not how each
  grid axis's length compares with the output's blocks along it
  (``grids.cover``): a grid one step too long is another kernel than one a
  step too short.
- ``listing``: the same program to read, one line per live equation in a
  canonical order (each value computed just before its first use, effects on
  one ref in their order, independent effects by their canonical key), values
  named by their operation and count (``dot_general_1``), numbers as ``#``,
  sub-programs indented under the parameter that holds them. Renaming,
  reordering independent lines, adding an unused equation or changing block
  sizes leaves it unchanged, so a line diff of two listings shows what differs.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from . import grids, normal
from .canonical import COMMUTATIVE, DROPPED_PARAMS, TRANSPARENT, Canon, Eqn, Jaxpr

# Calls that only wrap a program: their body counts, the wrapper does not (adding
# or dropping ``@jax.jit`` changes nothing a kernel does).
WRAPPERS = frozenset({"jit", "pjit", "closed_call", "core_call"})
# Calls whose program receives the operands as they are (its inputs named after them).
CALLS = WRAPPERS | {"remat", "checkpoint", "custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr"}
INDENT = "  "
MAX_LINES = 4000        # a listing longer than this is cut (a page a person reads, not an archive)
MAX_TEXT = 160          # a parameter shown inline; a longer one is spread over lines
MAX_STRING = 60         # a string parameter's characters shown (student-chosen strings included)


@dataclass(frozen=True)
class Likeness:
    shingles: frozenset[str]         # what the score compares (Jaccard)
    listing: tuple[str, ...]         # the canonical program to read and diff


def of(document: dict) -> Likeness:
    """The likeness of one checked program document."""
    program = document.get("program", document)
    canon = Canon()
    j = canon.jaxpr(normal.program(program["jaxpr"]))
    counts = _counts(j, {})
    shingles = frozenset(f"{s}/{b}" for s, n in counts.items() for b in range(min(n, 2)))
    lines = _Listing(canon).program(j, 0)
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES] + [f"... ({len(lines) - MAX_LINES} more lines not shown)"]
    return Likeness(shingles, tuple(lines))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Shared pieces over all pieces (1.0: the same; two empty sets share nothing)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def _counts(j: Jaxpr, memo: dict[int, Counter]) -> Counter:
    """Every piece of a program, sub-programs' included, with its multiplicity."""
    got = memo.get(id(j))
    if got is not None:
        return got
    c: Counter = Counter()
    for e in j.live:
        if e.prim in TRANSPARENT:
            continue
        if e.prim not in WRAPPERS:
            c["1:" + e.shingle] += 1
            c["2:" + e.pair] += 1
        covers = grids.cover(e.doc) if e.prim == "pallas_call" else None
        if covers is not None:
            c["g:" + ",".join(covers)] += 1    # numbers set aside, but not a grid a step off
        for sub in e.subs:
            if e.prim not in WRAPPERS:
                c["r:" + sub.returns] += 1
            c.update(_counts(sub, memo))
    memo[id(j)] = c
    return c


def order(j: Jaxpr) -> list[Eqn]:
    """The live equations in a canonical order: a depth-first walk from the
    outputs (in position) and then from the effects nothing follows (by their
    canonical key), each equation after the effects it must follow and the
    values it reads (by the primitive that made each, then in position). Source
    order never decides."""
    producer = {v: e for e in j.live for v in e.outs}
    last: dict[Any, Eqn] = {}
    before: dict[int, list[Eqn]] = {}
    for e in j.live:              # document order is the order of the effects on one ref
        before[id(e)] = list({id(last[r]): last[r] for r in e.touched if r in last}.values())
        for r in e.touched:
            last[r] = e

    def preds(e: Eqn) -> list[Eqn]:
        # The values an equation reads, those made by one primitive before those of
        # another (ties in place): a difference in one operation, or operands of
        # ``a + b`` in either order, keep the lines around it where they were.
        return before[id(e)] + sorted((producer[v] for v in e.ins if v in producer), key=lambda p: p.prim)

    reached = {id(p) for e in j.live for p in preds(e)}
    outs = [a["v"] for a in j.doc.get("outvars", []) if "v" in a]
    roots = [producer[v] for v in outs if v in producer]
    roots += sorted((e for e in j.live if e.effect and id(e) not in reached), key=lambda e: e.key)
    roots += sorted((e for e in j.live if e.effect), key=lambda e: e.key)    # none left out
    done: list[Eqn] = []
    seen: set[int] = set()
    for root in roots:
        stack: list[tuple[Eqn, bool]] = [(root, False)]
        while stack:              # iterative: an unrolled loop makes chains deeper than Python's stack
            e, expanded = stack.pop()
            if expanded:
                done.append(e)
            elif id(e) not in seen:
                seen.add(id(e))
                stack.append((e, True))
                stack.extend((p, False) for p in reversed(preds(e)) if id(p) not in seen)
    return done


class _Listing:
    """One program's canonical lines (sub-programs nested under their parameter).

    A loop's, branch's or call's sub-program receives the equation's operands:
    its inputs are named as the operands are, so its lines read the same
    whichever order the source captured its refs in (a closure's captures are
    operands in the order of first use), and the captured operands are shown
    in name order."""

    def __init__(self, canon: Canon):
        self.canon = canon          # the keys already computed for the score (one cache)

    def program(self, j: Jaxpr, depth: int, bound: list[str] | None = None) -> list[str]:
        pad = INDENT * depth
        names: dict[int, str] = {v["v"]: f"c{i}" for i, v in enumerate(j.doc.get("constvars", []))}
        invars = j.doc.get("invars", [])
        use = bound if bound is not None and len(bound) == len(invars) else None
        for i, v in enumerate(invars):
            names[v["v"]] = (use[i] if use[i] != "#" else f"arg{i}") if use else f"in{i}"
        seen: Counter = Counter()
        lines: list[str] = []
        for e in order(j):
            ins = [names.get(a["v"], "?") if "v" in a else "#" for a in e.doc.get("in", [])]
            if e.prim in TRANSPARENT and len(ins) == 1:     # a conversion counts as nothing
                for v in e.outs:
                    names[v] = ins[0]
                continue
            seen[e.prim] += 1
            base = f"{e.prim}_{seen[e.prim]}"
            for i, v in enumerate(e.outs):
                names[v] = base if len(e.outs) == 1 else f"{base}.{i}"
            lines += self._equation(e, base, ins, depth)
        outs = [names.get(a["v"], "?") if "v" in a else "#" for a in j.doc.get("outvars", [])]
        if outs:
            lines.append(f"{pad}return {', '.join(outs)}")
        return lines

    def _equation(self, e: Eqn, base: str, ins: list[str], depth: int) -> list[str]:
        pad = INDENT * depth
        raw = dict(e.doc.get("params", []))
        head = (f"{base} = " if e.outs else "") + f"{e.prim}({', '.join(_shown(e.prim, raw, ins))})"
        params = [(k, v) for k, v in e.doc.get("params", []) if k not in DROPPED_PARAMS]
        inline = [f"{k}={t}" for k, v in params if (t := _text(v)) is not None and len(t) <= MAX_TEXT]
        covers = grids.cover(e.doc) if e.prim == "pallas_call" else None
        if covers is not None:
            inline.append(f"grid steps per output block={'(' + ', '.join(covers) + ')'}")
        lines = [pad + head + (f"  [{'; '.join(inline)}]" if inline else "")]
        binds = _bindings(e.prim, raw, ins)
        for k, v in params:
            t = _text(v)
            if t is None or len(t) > MAX_TEXT:
                lines += self._value(k, v, depth + 1, binds.get(k))
        return lines

    def _value(self, label: str, v: Any, depth: int, bound: list[str] | None = None) -> list[str]:
        """A parameter too long for one line, or holding programs: spread over lines
        (``bound``: the names a program in it receives)."""
        pad = INDENT * depth
        t = _text(v)
        if t is not None and (len(t) <= MAX_TEXT or not isinstance(v, (dict, list))):
            return [f"{pad}{label}: {t}"]
        sub = _program_of(v)
        if sub is not None:
            n = len(sub.get("invars", []))
            args = "the operands" if bound is not None and len(bound) == n else ", ".join(f"in{i}" for i in range(n))
            return [f"{pad}{label}: program({args})"] + self.program(self.canon.jaxpr(sub), depth + 1, bound)
        if isinstance(v, dict) and "dc" in v:
            name, fields = v["dc"]
            kept = [(n, x) for n, x in fields if n not in DROPPED_PARAMS and not _unset(x)]
            return [f"{pad}{label}: {_short(name)}"] + [ln for n, x in kept for ln in self._value(n, x, depth + 1)]
        items = _items(v)
        if items is not None:
            return [f"{pad}{label}: ({len(items)} items)"] + [
                ln for i, x in enumerate(items) for ln in self._value(f"[{i}]", x, depth + 1, bound)]
        return [f"{pad}{label}: {(t or '?')[:MAX_TEXT]}…"]


def _bindings(prim: str, params: dict, ins: list[str]) -> dict[str, list[str]]:
    """The operand names each program-holding parameter's programs receive, in
    their inputs' order (JAX's calling conventions for loops, branches and calls)."""
    if prim == "scan":
        return {"jaxpr": ins}
    if prim == "while":
        cn, bn = params.get("cond_nconsts"), params.get("body_nconsts")
        if isinstance(cn, int) and isinstance(bn, int):
            return {"cond_jaxpr": ins[:cn] + ins[cn + bn:], "body_jaxpr": ins[cn:cn + bn] + ins[cn + bn:]}
    if prim == "cond":
        return {"branches": ins[1:]}
    if prim in CALLS:
        return {"jaxpr": ins, "call_jaxpr": ins, "fun_jaxpr": ins}
    return {}


def _shown(prim: str, params: dict, ins: list[str]) -> list[str]:
    """An equation's operands as listed: captured ones (a loop's constants, a
    branch's or a call's operands) and a commutative operation's in name order,
    positional ones in place."""
    n = normal.scan_consts(params) if prim == "scan" else None
    if n is not None:
        return sorted(ins[:n]) + ins[n:]
    if prim == "while" and isinstance(params.get("cond_nconsts"), int) and isinstance(params.get("body_nconsts"), int):
        cn, bn = params["cond_nconsts"], params["body_nconsts"]
        return sorted(ins[:cn]) + sorted(ins[cn:cn + bn]) + ins[cn + bn:]
    if prim == "cond":
        return ins[:1] + sorted(ins[1:])
    if prim in CALLS:
        return sorted(ins)
    if prim in COMMUTATIVE:
        return sorted(ins, key=lambda name: (name == "#", name))    # a + b as b + a; literals last
    return ins


def _unset(x: Any) -> bool:
    """A dataclass field left at None or False: left out of the listing to keep it readable."""
    return x is None or x is False


def _program_of(v: Any) -> dict | None:
    if isinstance(v, dict) and "jx" in v and isinstance(v["jx"], dict):
        return v["jx"]
    if isinstance(v, dict) and "cjx" in v and isinstance(v["cjx"], dict):
        return v["cjx"].get("jaxpr")
    return None


def _items(v: Any) -> list | None:
    if isinstance(v, list):
        return v
    if isinstance(v, dict) and len(v) == 1:
        (tag, body), = v.items()
        if tag in ("t", "l") and isinstance(body, list):
            return body
        if tag == "d" and isinstance(body, list):
            return [{"t": kv} for kv in body]
    return None


def _short(name: Any) -> str:
    """A class's name without its module (``jax._src.pallas.core.Blocked``: ``Blocked``)."""
    return str(name).rsplit(".", 1)[-1]


def _text(v: Any) -> str | None:
    """A document value as text with numbers, shapes and dtypes set aside (as
    ``canonical`` does); None for a value that holds a program."""
    if _program_of(v) is not None:
        return None
    if v is None or isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, float)):
        return "#"
    if isinstance(v, str):
        return json.dumps(v[:MAX_STRING] + ("…" if len(v) > MAX_STRING else ""))
    items = _items(v)
    if items is not None:
        parts = [_text(x) for x in items]
        if any(p is None for p in parts):
            return None
        tag = next(iter(v)) if isinstance(v, dict) else "l"
        opening, closing = {"t": "()", "l": "[]", "d": "{}"}.get(tag, "[]")
        return opening + ", ".join(parts) + ("," if tag == "t" and len(parts) == 1 else "") + closing
    if not isinstance(v, dict) or len(v) != 1:
        return "?"
    return _tagged(*next(iter(v.items())))


def _tagged(tag: str, body: Any) -> str | None:
    if tag in ("f", "s", "a"):
        return "#"
    if tag == "dt":
        return "dtype"
    if tag == "sa":
        return f"array(rank {len(body[0]) if isinstance(body, list) and body else 0})"
    if tag == "dc" and isinstance(body, list) and len(body) == 2:
        name, fields = body
        parts = [(n, _text(x)) for n, x in fields if n not in DROPPED_PARAMS and not _unset(x)]
        if any(t is None for _n, t in parts):
            return None
        return f"{_short(name)}(" + ", ".join(f"{n}={t}" for n, t in parts) + ")"
    if tag == "e" and isinstance(body, list) and len(body) == 2:
        return f"{_short(body[0])}.{body[1]}"
    if tag == "leaf":
        return "*"
    if tag in ("ref", "tree") and isinstance(body, list):
        parts = [_text(x) for x in body]
        return None if any(p is None for p in parts) else f"{tag}(" + ", ".join(parts) + ")"
    return "?"
