"""Work outside a kernel, by rule: an allow-list, not information flow.

Outside every ``pallas_call``, the inputs' data may only be *moved* and handed
to kernels: reshaped, transposed, broadcast, squeezed, reversed, sliced,
padded with a fill that is not data, concatenated, split, gathered or
updated at positions that are not data, selected by a mask that is not data,
cast to another dtype, printed, and passed to a ``pallas_call`` (whose
outputs are data again, so kernels may be chained). Every output element of a
move is one input element or a constant, whatever the values: no move
computes anything. Anything else that touches data outside a kernel is a
violation, named in the facts:

- ``<primitive>``: the primitive computes on data (arithmetic, a comparison, a
  reduction, a bitcast, a sort...): work, whatever its size;
- ``data-index: <primitive>``: a slice, gather, scatter or update at a
  position read from data (a pad whose fill is read from data is ``pad``) (a lookup into a table at data-valued indices
  computes any function of the data without one arithmetic primitive);
- ``data-control: <cond|while|select_n>``: a decision on data (a branch index,
  a loop predicate, a mask), which can rebuild every bit of the data as
  values that carry none of it;
- ``ref: <primitive>``: a ref outside any kernel (``pl.run_scoped`` at the top
  level, a read or write of one): state no rule above can see through.

Values that are not data (shapes, literals, constants, ``iota``, grid sizes)
are bookkeeping and may be computed with anything (a scalar-prefetch table
built from the shape). Data reaches a value through the equation that makes
it, a loop's carry (to a fixpoint) and a sub-program's operands. An
assignment lists the glue it allows in ``[structure] allow``.
"""
from __future__ import annotations

from typing import Any

from jax._src import core as jax_core

from .. import release
from ..program import jaxprs, schema
from ..program.jaxprs import sub_jaxprs
from ..rungs.rung import scan_counts

# Each output element is one input element (or a constant), whatever the values.
MOVES = frozenset({
    "reshape", "broadcast_in_dim", "transpose", "squeeze", "expand_dims", "rev", "slice", "concatenate",
    "split", "copy", "copy_p", "convert_element_type", "stop_gradient", release.HOST_PRINT})
# Moves with operands that say where or which: data only in the positions named here
# (pad: the operand, not its fill; select_n: the cases, not the predicate).
POSITIONED = {"pad": (0,), "dynamic_slice": (0,), "dynamic_update_slice": (0, 1), "gather": (0,),
              "scatter": (0, 2), "select_n": None}
# Reads and writes of a ref.
REF_OPS = frozenset({"get", "swap", "addupdate"})
# The violation kinds (a spec's ``[structure] allow`` may name the first two).
(DATA_INDEX, DATA_CONTROL), REF = schema.OUTSIDE_KINDS, "ref"


def _fed(v: Any, data: set) -> bool:
    return not isinstance(v, jax_core.Literal) and v in data


class Walk:
    """One walk of a traced program: which violations outside a kernel, and
    which primitives inside kernels."""

    def __init__(self) -> None:
        self.outside: dict[str, int] = {}
        self.inside: set[str] = set()
        self.counting = True        # off while a loop's carry is still being found

    def note(self, key: str) -> None:
        if self.counting:
            self.outside[key] = self.outside.get(key, 0) + 1

    def kernel(self, jaxpr: Any) -> None:
        for eqn in jaxpr.eqns:
            self.inside.add(eqn.primitive.name)
            for v in eqn.params.values():
                for sub in sub_jaxprs(v):
                    self.kernel(sub)

    def jaxpr(self, jaxpr: Any, data: set) -> list[bool]:
        """``data``: the variables that hold data; returns which outputs do."""
        for eqn in jaxpr.eqns:
            outs = self.eqn(eqn, [_fed(v, data) for v in eqn.invars])
            data.update(v for v, d in zip(eqn.outvars, outs) if d)
        return [_fed(v, data) for v in jaxpr.outvars]

    def eqn(self, eqn: Any, fed: list[bool]) -> list[bool]:
        name, n = eqn.primitive.name, len(eqn.outvars)
        if name in release.KERNEL_CALLS:
            for body in sub_jaxprs(eqn.params["jaxpr" if name == release.PALLAS_CALL else "jaxprs"]):
                self.kernel(body)
            return [any(fed)] * n
        if name == release.RUN_SCOPED or name in REF_OPS:
            self.note(f"{REF}: {name}")
        if name in ("cond", "while", "scan") or name == release.RUN_SCOPED or _subprograms(eqn):
            return self._control(eqn, fed)
        if not any(fed):
            return [False] * n      # bookkeeping: shapes, literals, constant tables
        if name in POSITIONED:
            free = POSITIONED[name]
            if any(d for i, d in enumerate(fed) if (i == 0 if free is None else i not in free)):
                # A mask read from data decides; a position read from data looks up; a
                # fill read from data is the primitive computing on it.
                self.note(f"{DATA_CONTROL}: {name}" if free is None else name if name == "pad"
                          else f"{DATA_INDEX}: {name}")
        elif name not in MOVES and name not in REF_OPS:
            self.note(name)
        return [True] * n

    def _control(self, eqn: Any, fed: list[bool]) -> list[bool]:
        name, p = eqn.primitive.name, eqn.params
        if name == "cond":
            if fed[0]:
                self.note(f"{DATA_CONTROL}: cond")
            outs = [self.into(b, fed[1:]) for b in p["branches"]]
            return [any(o[i] for o in outs) for i in range(len(eqn.outvars))]
        if name in ("while", "scan"):
            return self._loop(eqn, fed)
        if name == release.RUN_SCOPED:      # closed-over operands, then fresh refs
            body = next(sub_jaxprs(p["jaxpr"]))
            return self.jaxpr(body, {v for v, d in zip(list(body.constvars) + list(body.invars), fed) if d})
        subs = list(_subprograms(eqn))
        if name in release.INLINE_CLOSED or name in release.INLINE_OPEN:
            return self.into(subs[0], fed)
        if any(fed):                        # a construct the rules do not know, on data
            self.note(name)
        for sub in subs:
            self.into(sub, [any(fed)] * len(sub.invars))
        return [any(fed)] * len(eqn.outvars)

    def into(self, sub: Any, fed: list[bool]) -> list[bool]:
        """Walk a sub-program whose inputs are the operands ``fed`` marks (a closed
        program's constants are never data); any other binding: all or nothing."""
        jaxpr = jaxprs.open_of(sub)
        names = list(jaxpr.invars)
        if len(names) != len(fed):
            names, fed = list(jaxpr.constvars) + names, [any(fed)] * (len(jaxpr.constvars) + len(names))
        return self.jaxpr(jaxpr, {v for v, d in zip(names, fed) if d})

    def _loop(self, eqn: Any, fed: list[bool]) -> list[bool]:
        """A loop's carry: what reaches it in one trip reaches it for good (a
        fixpoint, walked without counting; then once, counted). A while loop
        whose predicate reads data is a decision on data."""
        p = eqn.params
        if eqn.primitive.name == "while":
            cn, bn = p["cond_nconsts"], p["body_nconsts"]
            consts, carry, body, xs = fed[cn:cn + bn], fed[cn + bn:], p["body_jaxpr"], []
        else:
            n, c = scan_counts(p)
            consts, carry, xs, body = fed[:n], fed[n:n + c], fed[n + c:], p["jaxpr"]
        counting, self.counting = self.counting, False
        while True:
            outs = self.into(body, consts + carry + xs)
            new = [a or b for a, b in zip(carry, outs[:len(carry)])]
            if new == carry:
                break
            carry = new
        self.counting = counting
        outs = self.into(body, consts + carry + xs)
        if eqn.primitive.name == "while":
            if self.into(p["cond_jaxpr"], fed[:p["cond_nconsts"]] + carry)[0]:
                self.note(f"{DATA_CONTROL}: while")
        return carry + outs[len(carry):]


def _subprograms(eqn: Any) -> list:
    return [s for v in eqn.params.values() for s in _programs(v)]


def _programs(value: Any):
    """The sub-programs a parameter holds, closed ones as they are (their
    constants are not data, and their inputs are the operands)."""
    if jaxprs.is_closed(value) or jaxprs.is_open(value):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _programs(v)


def violations(closed: Any) -> tuple[dict[str, int], set[str]]:
    """(violation -> how often, outside every kernel; primitives inside kernels)
    of a traced function's closed jaxpr, whose inputs are all data."""
    walk = Walk()
    walk.jaxpr(closed.jaxpr, set(closed.jaxpr.invars))
    return walk.outside, walk.inside
