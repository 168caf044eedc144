"""Programs that compute the same thing, written one way (pure data; no JAX).

A copy re-spelled without changing what it computes must keep its structural
fingerprint and its likeness score (``canonical``, ``likeness``). So before
either is taken, a checked program document is rewritten into a normal form:

- a call that only wraps a program (``jax.jit``, ``closed_call``, ``remat``,
  the primal program of ``custom_jvp``/``custom_vjp``: ``schema.INLINED``)
  is replaced by the program's equations;
- a ``cond`` (``lax.cond``, ``lax.switch``, ``pl.when``) whose index is a
  literal is replaced by the branch it takes (a dead ``lax.cond(False, ...)``
  leaves nothing); a ``select_n`` with a literal predicate by the case it picks;
- an indexer that spans its whole ref (``ref[:, :]``, ``ref[0:n]``) is dropped,
  as ``ref[...]`` has none;
- a store of what was just read from the same place (``r[...] = r[...]``,
  what a dead branch that keeps a value leaves) is dropped, and so is a read
  whose value nothing uses;
- simple arithmetic identities, exact for the types they apply to: a literal
  operand of a commutative operation or a comparison goes to the right (the
  comparison mirrored: ``1 < k`` is ``k > 1``); ``x - c`` is ``x + (-c)``;
  ``x + 0``, ``x * 1`` and ``x / 1`` are ``x``; ``x - (-y)`` is ``x + y`` and
  ``-(-x)`` is ``x``; on integers, ``(x + a) + b`` is
  ``x + (a + b)``, ``x + a == y`` is ``x == y - a`` (so ``k + 1 == n`` and
  ``k == n - 1`` meet), and ``x <= c`` is ``x < c + 1``, ``x >= c`` is ``x > c - 1``.

A pallas_call's grid is written one way (``grids``: a flattened grid as its two
axes, grid axes in the order of the output's dimensions), and a store split into
pieces as one store (``pieces``).

The order of a commutative operation's operands is set aside by ``canonical``
itself (it knows the operands' keys). Everything else is left as it is: the
rewrite never changes a program's inputs or outputs, only how its equations
spell them. The structural face (``canonical.Form.face``) is taken from the
document as it is, not from this form.

The document is student-controlled (schema-checked, but its values are
claims): anything this module does not recognise is left as it is, and a
malformed document is returned unchanged rather than raising.
"""
from __future__ import annotations

from typing import Any

from ...pallas_surface.program.schema import INLINED
from . import grids, pieces
from .literals import SIGNED, _dtype, _program_of, _scalar

COMMUTATIVE = frozenset({"add", "mul", "max", "min", "and", "or", "xor", "eq", "ne"})
MIRRORED = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "eq": "eq", "ne": "ne"}
COMPARISONS = frozenset(MIRRORED)
REF_ACCESS = frozenset({"get", "swap", "addupdate"})
MAX_PASSES = 8          # identities applied to one equation, at most (each removes or moves a literal)


def program(document: dict) -> dict:
    """The checked program document's ``jaxpr`` in normal form (a new document;
    the one given is not changed). A document this module cannot read is
    returned as it is."""
    try:
        return _Rewriter().jaxpr(document)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError):
        return document


class _Emitted:
    """The equations one jaxpr's normal form is made of, and which equation
    made each variable (for identities that look one step back)."""

    def __init__(self) -> None:
        self.eqns: list[dict] = []
        self.made: dict[int, dict] = {}
        self.last_use: dict[int, dict] = {}     # a variable -> the last equation that read it
        self.inputs: dict[int, str] = {}        # the jaxpr's own inputs, by position

    def origin(self, atom: dict) -> tuple[int, str]:
        """Where a value comes from, without naming it: an input by its position,
        a computed value by its primitive, a literal as such (ties keep their order)."""
        if "v" not in atom:
            return (2, "lit")
        if atom["v"] in self.inputs:
            return (0, self.inputs[atom["v"]])
        made = self.made.get(atom["v"])
        return (1, str(made["p"]) if made is not None else "?")

    def add(self, eqn: dict) -> None:
        self.eqns.append(eqn)
        for out in eqn["out"]:
            self.made[out["v"]] = eqn
        for a in eqn["in"]:
            if "v" in a:
                self.last_use[a["v"]] = eqn

    def stores_what_it_read(self, eqn: dict) -> dict | None:
        """A ``swap`` that writes back what a ``get`` of the same ref, with the same
        indexers and nothing touching the ref since, just read (``r[...] = r[...]``):
        the value read (a swap returns the old value), else None."""
        if eqn["p"] != "swap" or len(eqn["in"]) != 2 or not all("v" in a for a in eqn["in"]):
            return None
        ref, value = eqn["in"]
        read = self.made.get(value["v"])
        if read is None or read["p"] != "get" or len(read["in"]) != 1 or read["in"][0].get("v") != ref["v"]:
            return None
        same_place = dict(read["params"]).get("tree") == dict(eqn["params"]).get("tree")
        if self.last_use.get(ref["v"]) is not read or not same_place:
            return None
        return value


class _Rewriter:
    def __init__(self) -> None:
        self.last = 0       # fresh variables are negative: a document's own are >= 0

    def fresh(self, aval: Any) -> dict:
        self.last -= 1
        return {"v": self.last, "aval": aval}

    def jaxpr(self, doc: dict) -> dict:
        """One jaxpr in normal form: the same inputs and outputs, rewritten equations."""
        if not isinstance(doc, dict):
            return doc
        emitted = _Emitted()
        emitted.inputs = {v["v"]: f"{tag}{i:06d}" for tag in ("constvars", "invars")
                          for i, v in enumerate(doc.get(tag, []))}
        # Every reference carries its variable's type (the identities read it).
        env: dict[int, dict] = {v["v"]: {"v": v["v"], "aval": v.get("aval")}
                                for tag in ("constvars", "invars") for v in doc.get(tag, [])}
        for eqn in doc.get("eqns", []):
            self.eqn(eqn, env, emitted)
        outvars = [_atom(a, env) for a in doc.get("outvars", [])]
        used = {a["v"] for e in emitted.eqns for a in e["in"] if "v" in a} | {a["v"] for a in outvars if "v" in a}
        # A read nothing uses reads nothing (``canonical`` keeps every ref access, as an effect).
        eqns = [e for e in emitted.eqns if e["p"] != "get" or any(o["v"] in used for o in e["out"])]
        return {**doc, "eqns": pieces.merged(eqns), "outvars": outvars}

    def eqn(self, eqn: dict, env: dict, emitted: _Emitted) -> None:
        prim = eqn["p"]
        ins = [_atom(a, env) for a in eqn.get("in", [])]
        params = eqn.get("params", [])
        body = _wrapped(prim, params)
        if body is not None:
            self.inline(body, ins, eqn, env, emitted)
            return
        taken = _taken_branch(prim, params, ins)
        if taken is not None:
            self.inline(taken, ins[1:], eqn, env, emitted)
            return
        picked = _picked_case(prim, ins)
        if picked is not None and len(eqn.get("out", [])) == 1:
            env[eqn["out"][0]["v"]] = picked
            return
        params = [[k, self.value(v)] for k, v in params]
        if prim == "pallas_call":
            params = grids.call_params({"params": params})
        ins, params = _captures_in_order(prim, ins, params, emitted.origin)
        if prim in REF_ACCESS:
            params = [[k, _whole_ref_dropped(v) if k == "tree" else v] for k, v in params]
        new = {**eqn, "in": ins, "params": params, "out": [self.fresh(o.get("aval")) for o in eqn.get("out", [])]}
        result = self.identities(new, emitted) or emitted.stores_what_it_read(new)
        for old, now in zip(eqn.get("out", []), new["out"]):
            env[old["v"]] = now if result is None else result
        if result is None:
            emitted.add(new)

    def inline(self, body: tuple[dict, list], operands: list[dict], eqn: dict, env: dict,
               emitted: _Emitted) -> None:
        """``body``'s equations in place of ``eqn``, its inputs bound to ``operands``."""
        jaxpr, consts = body
        inner: dict[int, dict] = {}
        for var, const in zip(jaxpr.get("constvars", []), consts):
            inner[var["v"]] = {"lit": const, "aval": var.get("aval")}
        invars = jaxpr.get("invars", [])
        if len(invars) != len(operands):
            raise ValueError("a call's operands do not match its program's inputs")
        for var, operand in zip(invars, operands):
            inner[var["v"]] = operand
        for e in jaxpr.get("eqns", []):
            self.eqn(e, inner, emitted)
        outs = [_atom(a, inner) for a in jaxpr.get("outvars", [])]
        for old, now in zip(eqn.get("out", []), outs):
            env[old["v"]] = now

    def value(self, v: Any) -> Any:
        """A parameter value with every program in it in normal form."""
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if not isinstance(v, dict):
            return v
        if "jx" in v and len(v) == 1:
            return {"jx": self.jaxpr(v["jx"])}
        if "cjx" in v and len(v) == 1 and isinstance(v["cjx"], dict):
            return {"cjx": {**v["cjx"], "jaxpr": self.jaxpr(v["cjx"].get("jaxpr"))}}
        if "a" in v and len(v) == 1:
            return v        # an array constant: nothing to rewrite
        return {k: self.value(x) for k, x in v.items()}

    def identities(self, eqn: dict, emitted: _Emitted) -> dict | None:
        """Rewrite ``eqn`` in place by the arithmetic identities; the atom it
        reduces to when it reduces to one of its operands (it is then dropped)."""
        for _ in range(MAX_PASSES):
            step = _identity(eqn, emitted, self)
            if step is None or isinstance(step, dict):
                return step
        return None


def _atom(a: dict, env: dict) -> dict:
    return env.get(a["v"], a) if "v" in a else a


def _wrapped(prim: str, params: list) -> tuple[dict, list] | None:
    """The program a wrapper call runs, with its constants."""
    key = INLINED.get(prim)
    if key is None:
        return None
    value = next((v for k, v in params if k == key), None)
    return _program_of(value)


def _taken_branch(prim: str, params: list, ins: list[dict]) -> tuple[dict, list] | None:
    """The branch a cond with a literal index takes (the index clamped, as cond does)."""
    if prim != "cond" or not ins:
        return None
    index = _scalar(ins[0])
    if index is None or isinstance(index, float):
        return None
    branches = next((v for k, v in params if k == "branches"), None)
    items = branches.get("t") if isinstance(branches, dict) else branches
    if not isinstance(items, list) or not items:
        return None
    return _program_of(items[min(max(int(index), 0), len(items) - 1)])


def _picked_case(prim: str, ins: list[dict]) -> dict | None:
    """The case a select_n with a literal predicate picks."""
    if prim != "select_n" or len(ins) < 2:
        return None
    which = _scalar(ins[0])
    if which is None or isinstance(which, float) or not 0 <= int(which) < len(ins) - 1:
        return None
    return ins[1 + int(which)]


def _whole_ref_dropped(tree: Any) -> Any:
    """A ref access's transforms without the indexers that span their whole ref."""
    if not (isinstance(tree, dict) and isinstance(tree.get("tree"), list) and len(tree["tree"]) == 2):
        return tree
    registry, transforms = tree["tree"]
    if not (isinstance(transforms, dict) and isinstance(transforms.get("t"), list)):
        return tree
    kept = [t for t in transforms["t"] if not _whole(t)]
    return {"tree": [registry, {"t": kept}]}


def _whole(transform: Any) -> bool:
    """An NDIndexer of full slices, one per dimension: ``ref[:, :]`` is ``ref[...]``."""
    if not (isinstance(transform, dict) and isinstance(transform.get("dc"), list) and len(transform["dc"]) == 2):
        return False
    name, fields = transform["dc"]
    if name != "NDIndexer" or not isinstance(fields, list):
        return False
    f = {k: v for k, v in fields if isinstance(k, str)} if all(isinstance(x, list) and len(x) == 2 for x in fields) \
        else {}
    indices, shape = _tuple_of(f.get("indices")), _tuple_of(f.get("shape"))
    if indices is None or shape is None or _tuple_of(f.get("int_indexer_shape")) != [] or len(indices) != len(shape):
        return False
    return all(_full_slice(i, d) for i, d in zip(indices, shape))


def _tuple_of(v: Any) -> list | None:
    return v["t"] if isinstance(v, dict) and isinstance(v.get("t"), list) else None


def _full_slice(index: Any, dim: Any) -> bool:
    if not (isinstance(index, dict) and isinstance(index.get("dc"), list) and len(index["dc"]) == 2):
        return False
    name, fields = index["dc"]
    if name != "Slice" or not isinstance(fields, list):
        return False
    f = dict((k, v) for k, v in fields) if all(isinstance(x, list) and len(x) == 2 for x in fields) else {}
    return _is_int(dim) and f.get("start") == 0 and f.get("stride") == 1 and _is_int(f.get("size")) \
        and f.get("size") == dim and _is_int(f.get("start")) and _is_int(f.get("stride"))


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def scan_consts(params: dict) -> int | None:
    """A scan's number of constants: jax 0.10.2 names it (num_consts); 0.12's document
    keeps its inputs' flat tree, (consts, carry, xs) leaf counts: {"ftt": [{"ftn": n}, ...]}."""
    if isinstance(params.get("num_consts"), int):
        return params["num_consts"]
    tree = params.get("ft_in")
    parts = tree.get("ftt") if isinstance(tree, dict) else None
    return _leaves(parts[0]) if isinstance(parts, list) and len(parts) == 3 else None


def _leaves(tree, depth: int = 0) -> int | None:
    """The leaf count of a flat tree in the document ({"ftn": n} or {"ftt": [...]})."""
    if not isinstance(tree, dict) or depth > 16:
        return None
    if isinstance(tree.get("ftn"), int) and not isinstance(tree["ftn"], bool):
        return tree["ftn"]
    counts = [_leaves(t, depth + 1) for t in tree.get("ftt", [])] if isinstance(tree.get("ftt"), list) else [None]
    return None if None in counts else sum(counts)


def _captures_in_order(prim: str, ins: list[dict], params: list, origin) -> tuple[list[dict], list]:
    """A loop's or branch's captured operands (a closure's captures come in the
    order of their first use) in a position-free order, by where each comes from
    (``origin``); the programs' inputs permuted to match."""
    p = dict((k, v) for k, v in params)
    if prim == "scan":
        n = scan_consts(p)
        if not (isinstance(n, int) and 0 <= n <= len(ins)):
            return ins, params
        groups, spans = [(0, n)], {"jaxpr": [(0, n)]}
    elif prim == "while" and _is_int(p.get("cond_nconsts")) and _is_int(p.get("body_nconsts")):
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        if cn + bn > len(ins):
            return ins, params
        groups, spans = [(0, cn), (cn, cn + bn)], {"cond_jaxpr": [(0, cn)], "body_jaxpr": [(cn, cn + bn)]}
    elif prim == "cond" and len(ins) > 1:
        groups, spans = [(1, len(ins))], {"branches": [(1, len(ins))]}
    else:
        return ins, params
    order = list(range(len(ins)))
    for lo, hi in groups:
        order[lo:hi] = sorted(range(lo, hi), key=lambda i: origin(ins[i]))
    if order == list(range(len(ins))):
        return ins, params
    ins = [ins[i] for i in order]
    return ins, [[k, _inputs_permuted(v, spans.get(k), order)] for k, v in params]


def _inputs_permuted(value: Any, spans: list | None, order: list[int]) -> Any:
    """The programs in a parameter with their inputs reordered as the operands
    were (``spans``: which operands the program's first inputs are)."""
    if spans is None:
        return value
    if isinstance(value, dict) and "t" in value and isinstance(value["t"], list):
        return {"t": [_inputs_permuted(v, spans, order) for v in value["t"]]}
    program = _program_of(value)
    if program is None:
        return value
    jaxpr = program[0]
    invars = list(jaxpr.get("invars", []))
    # The operands a program receives, in order: a branch gets them all but the
    # index; a loop's program its span of constants first, then the carry (and xs).
    lo, hi = spans[0]
    if hi - lo > len(invars):
        return value
    invars[:hi - lo] = [invars[order[i] - lo] for i in range(lo, hi)]
    new = {**jaxpr, "invars": invars}
    new.pop("names", None)
    if "jx" in value:
        return {"jx": new}
    return {"cjx": {**value["cjx"], "jaxpr": new}}


# ---- literals and identities -----------------------------------------------------------

def _literal(value: int | float, like: dict) -> dict:
    """A scalar literal of ``like``'s type."""
    return {"lit": value, "aval": like["aval"]}


def _signed_int(atom: dict) -> int | None:
    """The bit width of a signed integer atom's type."""
    return SIGNED.get(_dtype(atom) or "")


def _fits(value: int, bits: int) -> bool:
    return -(1 << (bits - 1)) <= value < (1 << (bits - 1))


def _identity(eqn: dict, emitted: _Emitted, rw: _Rewriter) -> dict | bool | None:
    """One identity applied to ``eqn`` (changed in place): True when it changed,
    the atom it reduces to when it is one of its operands, None when none applies."""
    prim, ins = eqn["p"], eqn["in"]
    negated = [_negated(a, emitted) for a in ins]
    if prim == "neg" and len(ins) == 1 and negated[0] is not None:
        return negated[0]                                   # -(-x) is x
    if len(ins) != 2 or len(eqn.get("out", [])) != 1:
        return None
    x, c = ins
    if prim == "sub" and negated[1] is not None:            # x - (-y) is x + y (exact)
        eqn["p"], eqn["in"] = "add", [x, negated[1]]
        return True
    lit_x, lit_c = _scalar(x), _scalar(c)
    if lit_x is not None and lit_c is None and (prim in COMMUTATIVE or prim in COMPARISONS):
        eqn["p"], eqn["in"] = MIRRORED.get(prim, prim), [c, x]
        return True
    if prim in COMPARISONS and _constant_moved(eqn, emitted, rw):
        return True
    if lit_c is None or lit_x is not None or isinstance(lit_c, bool):
        return None
    bits = _signed_int(x)
    if prim == "sub" and (bits and _fits(-lit_c, bits) or _dtype(x) in ("float16", "float32", "float64")):
        eqn["p"], eqn["in"] = "add", [x, _literal(-lit_c, c)]
        return True
    if (prim == "add" and bits and lit_c == 0) or (prim in ("mul", "div") and lit_c == 1 and _dtype(x) != "bool"):
        return x
    if not bits:
        return None
    inner = emitted.made.get(x.get("v")) if "v" in x else None
    inner_c = _scalar(inner["in"][1]) if inner is not None and inner["p"] == "add" and len(inner["in"]) == 2 else None
    if prim == "add" and isinstance(inner_c, int) and _fits(inner_c + lit_c, bits):
        eqn["in"] = [inner["in"][0], _literal(inner_c + lit_c, c)]
        return True
    if prim in ("le", "ge") and _fits(lit_c + (1 if prim == "le" else -1), bits):
        step = 1 if prim == "le" else -1
        eqn["p"], eqn["in"] = ("lt" if prim == "le" else "gt"), [x, _literal(lit_c + step, c)]
        return True
    return None


def _negated(atom: dict, emitted: _Emitted) -> dict | None:
    """y, when ``atom`` is -y (a neg equation's result)."""
    made = emitted.made.get(atom["v"]) if "v" in atom else None
    return made["in"][0] if made is not None and made["p"] == "neg" and len(made["in"]) == 1 else None


def _constant_moved(eqn: dict, emitted: _Emitted, rw: _Rewriter) -> bool:
    """``x + a <op> y`` as ``x <op> y - a`` on signed integers (changed in place):
    the constant leaves the left side, folded into ``y`` when it is a literal."""
    x, y = eqn["in"]
    bits = _signed_int(x)
    inner = emitted.made.get(x["v"]) if bits and "v" in x else None
    if inner is None or inner["p"] != "add" or len(inner["in"]) != 2:
        return False
    a = _scalar(inner["in"][1])
    if not _is_int(a) or not _fits(-a, bits):
        return False
    y_value = _scalar(y)
    if y_value is not None:
        if not _is_int(y_value) or not _fits(y_value - a, bits):
            return False
        eqn["in"] = [inner["in"][0], _literal(y_value - a, y)]
        return True
    moved = {"p": "add", "in": [y, _literal(-a, inner["in"][1])], "out": [rw.fresh(y.get("aval"))],
             "params": [], "src": None}
    reduced = rw.identities(moved, emitted)
    if reduced is None:
        emitted.add(moved)
    eqn["in"] = [inner["in"][0], reduced if reduced is not None else {"v": moved["out"][0]["v"]}]
    return True
