"""A traced program's canonical form: what it computes, not how it is written
or at which size it was traced (pure data; no JAX).

Shape-derived values are set aside everywhere: every number (literal values,
shapes, block shapes, grid sizes, integer parameters) and every dtype counts
only as "a number" or "a dtype", and a dtype conversion counts as nothing.
Names and source lines are dropped. Equations nothing uses (an unused
``lax.iota``) are dropped unless they have an effect (a ref read or write, a
DMA, a semaphore); effects on one ref stay in order, effects on different refs
commute, and independent equations may come in any order.

Three keys come out of one program document:
- ``fingerprint``: the whole program, outer work included, up to the above
  (each value keyed by what makes it), taken of its normal form (``normal``:
  a ``jax.jit`` around it, a dead ``lax.cond(False, ...)``, ``ref[:, :]`` for
  ``ref[...]``, ``k + 1 == n`` for ``k == n - 1`` and the operands of ``a + b``
  in either order change nothing): the TA site clusters by it;
- ``face``: the kernels only (each ``pallas_call``'s body, index maps, block
  structure and compiler parameters), as the *set* of their equations, each
  with its parameters and the primitives that feed it. A Python loop unrolled
  a size-dependent number of times, or block sizes picked from the shape,
  keep the face; a kernel that computes something else, or elsewhere, does
  not. Two sizes with one face ran one kernel;
- ``shingles``: the same equation keys over the whole program (its normal
  form), for near-duplicate scores between submissions.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from . import normal

# Parameters that name or describe, not compute (student-chosen names included).
DROPPED_PARAMS = frozenset({"name", "metadata", "debug", "name_and_src_info", "debug_info", "cost_estimate",
                            "interpret", "out_avals", "ctx_mesh", "out_sharding", "sharding", "keep_unused",
                            "inline", "compiler_options_kvs", "resource_env", "donated_invars",
                            "in_shardings", "out_shardings", "in_layouts", "out_layouts"})
# Kernel equations: pallas_call, and pl.kernel's mpmd_map (over a TensorCoreMesh).
KERNEL_CALLS = ("pallas_call", "mpmd_map")
# Conversions pass their input through: a dtype chosen from the case is no new form.
TRANSPARENT = frozenset({"convert_element_type"})
# Operations whose operands may come in either order (``normal`` moves literals right).
COMMUTATIVE = normal.COMMUTATIVE
# Equations with an effect beyond their outputs, whatever their inputs.
EFFECTFUL = frozenset({"run_scoped", "debug_print", "delay", "semaphore_signal", "semaphore_wait",
                       "dma_start", "dma_wait", "barrier"})


def _h(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":"),
                                     default=str).encode()).hexdigest()[:20]


def _rank(aval: Any) -> int:
    """The rank of an aval value (a ref's inner array's), 0 when it has none."""
    if isinstance(aval, dict) and "sa" in aval:
        return len(aval["sa"][0])
    if isinstance(aval, dict) and "ref" in aval:
        return _rank(aval["ref"][0])
    return 0


def _is_ref(aval: Any) -> bool:
    return isinstance(aval, dict) and "ref" in aval


class Canon:
    """Canonical keys of one document's jaxprs, each sub-program computed once
    (a shared cache: nested programs must not cost twice per level)."""

    def __init__(self) -> None:
        self._cache: dict[int, Jaxpr] = {}

    def jaxpr(self, doc: dict) -> "Jaxpr":
        got = self._cache.get(id(doc))
        if got is None:
            got = self._cache[id(doc)] = Jaxpr(doc, self)
        return got

    def value(self, v: Any, deep: bool = True) -> Any:
        """A document value with numbers, shapes and dtypes set aside (JSON-like);
        a sub-program as its key (``deep``) or only as "a program"."""
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, (int, float)):
            return "#"
        if isinstance(v, list):
            return [self.value(x, deep) for x in v]
        if not isinstance(v, dict) or len(v) != 1:
            return "?"
        (tag, body), = v.items()
        if tag in ("f", "s", "dt"):
            return tag
        if tag == "a":
            return ["a", len(body[1]) if isinstance(body, list) and len(body) > 1 else 0]
        if tag == "sa":
            return ["sa", len(body[0]) if isinstance(body, list) and body else 0]
        if tag in ("t", "l"):
            return [tag] + [self.value(x, deep) for x in body]
        if tag == "d":
            return ["d"] + [[self.value(k, deep), self.value(x, deep)] for k, x in body]
        if tag == "dc":
            key, fields = body
            return ["dc", key] + [[n, self.value(x, deep)] for n, x in fields if n not in DROPPED_PARAMS]
        if tag in ("jx", "cjx"):
            return ["jx", self.jaxpr(body["jaxpr"] if tag == "cjx" else body).key if deep else ""]
        if tag in ("e", "leaf"):
            return [tag, body]
        if tag in ("ref", "tree"):
            return [tag] + [self.value(x, deep) for x in body]
        return [tag, "?"]


@dataclass(frozen=True)
class Eqn:
    prim: str
    key: str                 # what it computes (its inputs' keys included)
    shingle: str             # its primitive, parameters and the primitives that feed it
    ins: tuple[int, ...]     # the variables it reads
    outs: tuple[int, ...]    # the variables it defines
    effect: bool
    subs: tuple["Jaxpr", ...]
    pair: str = ""           # its shingle with the shingles of the equations that feed it (two steps of data flow)
    touched: tuple[Any, ...] = ()    # the refs its effects are ordered on ("*": an effect on no ref)
    doc: dict = field(default_factory=dict, compare=False, repr=False)   # the equation as the document has it


class Jaxpr:
    """One jaxpr document's keys: of the whole (``key``), of its live equations
    (``shingles``, sub-programs' included) and of its kernels (``kernels``)."""

    def __init__(self, doc: dict, canon: Canon):
        self.canon = canon
        self.doc = doc
        env: dict[int, str] = {}
        refs: dict[int, bool] = {}
        made_by: dict[int, str] = {}
        fed: dict[int, str] = {}            # var -> the shingle of the equation that made it
        for tag in ("constvars", "invars"):
            for i, v in enumerate(doc.get(tag, [])):
                env[v["v"]], refs[v["v"]], made_by[v["v"]] = _h(tag, i, _rank(v["aval"])), _is_ref(v["aval"]), tag
        chains: dict[Any, str] = {}         # ref var -> its last effect ("*": effects on no ref)
        eqns = [self._eqn(e, env, refs, made_by, chains, fed) for e in doc.get("eqns", [])]
        outs = [a["v"] for a in doc.get("outvars", []) if "v" in a]
        self.key = _h("jaxpr", [env.get(v, "?") for v in outs], sorted(chains.values()))
        live = _live(eqns, outs)
        self.live = tuple(live)             # in document order (``likeness`` lists them canonically)
        # What each output is, one step deep: an input by position (an index map's grid order)
        # or the shingle of the equation that made it; names and other equations aside.
        position = {v["v"]: f"{tag}{i}" for tag in ("constvars", "invars") for i, v in enumerate(doc.get(tag, []))}
        self.returns = _h("returns", [position.get(a["v"], fed.get(a["v"], "?")) if "v" in a else "lit"
                                      for a in doc.get("outvars", [])])
        self.shingles = frozenset(s for e in live if e.prim not in TRANSPARENT
                                  for s in (e.shingle, *(x for j in e.subs for x in j.shingles)))
        self.kernels = frozenset(k for e in live for j in e.subs for k in j.kernels) | frozenset(
            s for e in live if e.prim in KERNEL_CALLS for s in (e.shingle, *(x for j in e.subs for x in j.shingles)))

    def _eqn(self, eqn: dict, env: dict, refs: dict, made_by: dict, chains: dict, fed: dict) -> Eqn:
        prim = eqn["p"]
        operands = list(eqn["in"])
        commutative = prim in COMMUTATIVE
        if commutative:
            # a + b is b + a: the operands in the order of the primitives that made
            # them (position-free, unlike keys: a program's inputs are keyed by
            # position), then of their keys.
            def order(a: dict) -> tuple[str, str]:
                if "v" not in a:
                    return ("lit", "")
                return (str(made_by.get(a["v"], "?")), json.dumps(env.get(a["v"], "?")))
            operands.sort(key=order)
        ins = [env.get(a["v"], "?") if "v" in a else ["lit", _rank(a.get("aval"))] for a in operands]
        if commutative:
            ins.sort(key=json.dumps)
        raw = [(k, v) for k, v in eqn.get("params", []) if k not in DROPPED_PARAMS]
        params = [[k, self.canon.value(v)] for k, v in raw]
        feeders = [made_by.get(a["v"], "?") if "v" in a else "lit" for a in operands]
        shingle = _h(prim, [[k, self.canon.value(v, deep=False)] for k, v in raw], feeders)
        subs = tuple(self.canon.jaxpr(sub) for _k, v in raw for sub in jaxprs_in(v))
        touched = [a["v"] for a in eqn["in"] if "v" in a and refs.get(a["v"])]
        effect = bool(touched) or prim in EFFECTFUL
        deps = sorted({chains.get(r, "start") for r in touched}) or ([chains.get("*", "start")] if effect else [])
        key = ins[0] if prim in TRANSPARENT and len(ins) == 1 else _h(prim, params, ins, deps)
        for r in touched or (["*"] if effect else []):
            chains[r] = key
        steps = [fed.get(a["v"], made_by.get(a["v"], "?")) if "v" in a else "lit" for a in operands]
        pair = _h(shingle, sorted(steps, key=str) if commutative else steps)
        for i, out in enumerate(eqn.get("out", [])):
            env[out["v"]] = key if prim in TRANSPARENT else _h(key, i)
            refs[out["v"]] = _is_ref(out.get("aval"))
            through = prim in TRANSPARENT and eqn["in"]
            made_by[out["v"]] = made_by.get(eqn["in"][0].get("v"), "lit") if through else prim
            fed[out["v"]] = fed.get(eqn["in"][0].get("v"), made_by[out["v"]]) if through else _h(shingle, i)
        return Eqn(prim, key, shingle, tuple(a["v"] for a in operands if "v" in a),
                    tuple(o["v"] for o in eqn.get("out", [])), effect, subs, pair,
                    tuple(touched or (["*"] if effect else [])), eqn)


def _live(eqns: list[Eqn], outs: list[int]) -> list[Eqn]:
    """The equations whose outputs are used, or that have an effect (backwards)."""
    needed = set(outs)
    live = []
    for e in reversed(eqns):
        if e.effect or needed.intersection(e.outs):
            needed.update(e.ins)
            live.append(e)
    return live[::-1]


def jaxprs_in(v: Any):
    """The jaxpr documents inside a parameter value."""
    if isinstance(v, list):
        for x in v:
            yield from jaxprs_in(x)
    elif isinstance(v, dict):
        if "jx" in v:
            yield v["jx"]
        elif "cjx" in v:
            yield v["cjx"]["jaxpr"]
        else:
            for x in v.values():
                yield from jaxprs_in(x)


@dataclass(frozen=True)
class Form:
    """A program's canonical keys."""
    fingerprint: str                 # the whole program
    face: str                        # its kernels only
    kernels: int                     # distinct kernel equations in it (0: no pallas_call)
    shingles: frozenset[str]         # its live equations' keys (for near-duplicate scores)


def of(document: dict) -> Form:
    """The canonical form of one checked program document: the fingerprint and
    the shingles of its normal form (``normal``: wrappers, dead branches,
    whole-ref indexers and simple identities set aside), the face of the
    program as traced (what each size's kernel is, dead branches included)."""
    program = document.get("program", document)
    traced = Canon().jaxpr(program["jaxpr"])
    j = Canon().jaxpr(normal.program(program["jaxpr"]))
    return Form(j.key[:16], _h("face", sorted(traced.kernels))[:16], len(traced.kernels), j.shingles)
