"""The work of every grid step of a kernel, evaluated over the whole grid.

A kernel body runs at every grid point, but not all of it: ``pl.when`` skips
whole blocks (block-sparse and masked kernels skip most of them), and a
``fori_loop`` bound can come from scalar-prefetch data. Those conditions and
bounds are scalar computations of the program ids and the scalar-prefetch
refs, as index maps are; this module evaluates them at every grid point
(vectorised over the points, no kernel runs) and counts each point's work:
matrix-unit flops by rate class, vector-unit and EUP operations, and the
bytes of the kernel's own DMAs.

What it cannot evaluate it says (``Unanalysable``): a loop whose trip count
depends on data in the kernel's blocks, a primitive the model has no cost
for. A ``pl.when`` condition that reads block data (not scalar-prefetch data)
counts its costliest branch at every step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax._src import core as jax_core

from .. import release
from ..program import jaxprs
from ..rungs.rung import scan_counts
from .primcost import (  # noqa: F401 - RATE_CLASSES, rate_class: read from here too
    FREE,
    RATE_CLASSES,
    Unanalysable,
    _lane_reduction,
    _size,
    dma_pass,
    dma_shape,
    eqn_cost,
    rate_class,
    starts_dma,
)

_INLINE = {**release.INLINE_CLOSED, **release.INLINE_OPEN}
_SMALL = 64          # scalar bookkeeping is evaluated; anything larger is data
_MAX_INNER_BLOCKS = 16  # an inner pipeline's blocks named in the advice: a few suffice, the facts stay small


# Counted beside the work, for what a real v5e showed (docs/speed-validation.md):
# "dots": dot_general executions (a grid step waits for its last one's result);
# "loop_dots": those inside a loop body (each iteration waits for its own);
# "loop_vector": vector operations inside a loop body (not overlapped across
# iterations); "dma_starts": manual DMAs started (each has an issue-and-wait cost,
# pltpu.emit_pipeline's inner steps included).
# "loop_reductions": reductions over the lane axis inside a loop body (each iteration waits
# for its own); "chain": the longest chain of dots and lane reductions outside loops in one
# step, each waiting for the one before (a step waits for its chain's results before it ends).
# Transposes, the cross-lane unit's throughput and pl.debug_print cost nothing measurable
# on a v5e in the chip check's points, so none is counted.
# "dma_exposed": manual DMA waits with no other DMA in flight, in program order (a synchronous
# copy, a single buffer, the last of a double-buffered series: nothing hides its latency);
# "loop_carry": the elements a loop carries from iteration to iteration, times its trips;
# "loop_trips": its iterations.
# "pipeline_steps": the iterations of loops that start DMAs themselves (pltpu.emit_pipeline's inner
# steps, or a loop of the kernel's own copies): steps of a pipeline inside the grid step, counted
# for the estimate's words (their cost is their DMAs').
LOOP_COLUMNS = ("dots", "loop_dots", "loop_vector", "dma_starts", "loop_reductions", "chain", "dma_exposed",
                "loop_carry", "loop_trips", "pipeline_steps")


def _counted(cost: dict[str, float], eqn, in_loop: bool, carried: bool = True) -> dict[str, float]:
    """``carried``: the operation updates a value the loop carries (or a ref it reads and writes
    back) from one iteration to the next; only those run at the slower in-loop rate (``loop_vector``)."""
    name = eqn.primitive.name
    out = dict(cost)
    if name == "dot_general":
        out["loop_dots" if in_loop else "dots"] = 1.0
    if name == "dma_start":
        out["dma_starts"] = 1.0
    if in_loop and _lane_reduction(eqn):
        out["loop_reductions"] = 1.0
    if in_loop and carried and cost.get("vector"):
        out["loop_vector"] = cost["vector"]
    return out


_WRITES = ("swap", "masked_swap")
_READS = ("get", "masked_load")


def _written_refs(jaxpr) -> set:
    """The refs a loop body writes (its sub-programs' included, by their own names)."""
    out = set()
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in _WRITES:
            out.add(eqn.invars[0])
        for v in eqn.params.values():
            for sub in (v if isinstance(v, tuple) else (v,)):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    out |= _written_refs(inner)
    return out


@dataclass(frozen=True)
class _Val:
    """A value known at every grid point (``batched``: one per point, on axis 0)."""
    value: np.ndarray
    batched: bool
    data: bool = False            # computed from scalar-prefetch data


@dataclass(frozen=True)
class _Ref:
    """A scalar-prefetch ref and its data."""
    value: np.ndarray


@dataclass(frozen=True)
class _Operand:
    """A kernel operand's ref (its index among the call's operands), followed into sub-programs to
    name what an inner pipeline's DMAs copy."""
    index: int


@dataclass(frozen=True)
class GridWork:
    columns: dict[str, np.ndarray]    # column -> work at each grid point
    data_dependent: bool              # a condition or loop bound read scalar-prefetch data
    # What the DMAs started inside loops copy (an inner pipeline's blocks): (operand index, or -1
    # when the copy names no operand, and the slice's shape), in the order first met.
    inner_blocks: tuple[tuple[int, tuple[int, ...]], ...] = ()


class _Grid:
    """Walks a kernel body once for all grid points: values as arrays over the
    points, work added only at the points a branch runs."""

    def __init__(self, points: np.ndarray | None, grid: tuple[int, ...], prefetch_known: bool = True):
        self.points, self.grid, self.prefetch_known = points, grid, prefetch_known
        self.n = len(points) if points is not None else 1
        self.work: dict[str, np.ndarray] = {}
        self.data_dependent = False
        self.loops = 0              # how many loop bodies enclose the equations being walked
        # The longest chain of dots and lane reductions each waiting for the last (outside loops):
        # a value's place in it, and the chain at every point.
        self.depth: dict = {}
        self.chain = np.zeros(self.n)
        self.inflight = 0           # manual DMAs started and not yet waited, in program order
        # Inside loops: the values that depend on what an iteration carries to the next (a carry, or
        # a ref the loop both reads and writes), and the shapes of those carries.
        self.carried: set = set()
        self.carry_shapes: set = set()
        self.rewritten: set = set()
        self.inner_blocks: dict = {}    # (operand, shape) of each DMA started in a loop (ordered)

    def fork(self) -> _Grid:
        g = _Grid(self.points, self.grid, self.prefetch_known)
        g.loops, g.depth, g.inflight = self.loops, self.depth, self.inflight
        g.inner_blocks = self.inner_blocks
        g.carried, g.carry_shapes, g.rewritten = self.carried, self.carry_shapes, self.rewritten
        return g

    def _pass_carried(self, outer, inner) -> None:
        for o, i in zip(outer, inner):
            if not isinstance(o, jax_core.Literal) and o in self.carried:
                self.carried.add(i)

    def _updates_carry(self, eqn) -> bool:
        """In a loop: does ``eqn`` compute from what the loop carries, into a carry's shape?"""
        if not self.loops:
            return False
        name = eqn.primitive.name
        if name in _READS and eqn.invars and eqn.invars[0] in self.rewritten:
            self.carried.update(eqn.outvars)
            self.carry_shapes.update(tuple(getattr(v.aval, "shape", ())) for v in eqn.outvars)
            return False
        if not any(not isinstance(v, jax_core.Literal) and v in self.carried for v in eqn.invars):
            return False
        self.carried.update(eqn.outvars)
        return any(tuple(getattr(v.aval, "shape", ())) in self.carry_shapes for v in eqn.outvars)

    def _dma(self, name: str, local: dict) -> None:
        """Follow the DMAs in flight: a wait with no other copy in flight shows its latency."""
        if name == "dma_start":
            self.inflight += 1
        elif name == "dma_wait":
            if self.inflight <= 1:
                local["dma_exposed"] = local.get("dma_exposed", 0.0) + 1.0
            self.inflight = max(self.inflight - 1, 0)

    def _carry(self, avals, body, mask: np.ndarray, scale) -> None:
        """A loop's carried values (beyond scalars) and its iterations, ``scale`` times; they are
        pipeline steps when its body starts DMAs itself."""
        carried = float(sum(_size(a) for a in avals if _size(a) > 1))
        steps = 1.0 if starts_dma(body) else 0.0
        self._add({"loop_carry": carried, "loop_trips": 1.0, "pipeline_steps": steps}, mask, scale)

    def _depth(self, vars_) -> int:
        return max((self.depth.get(v, 0) for v in vars_ if not isinstance(v, jax_core.Literal)), default=0)

    def _pass_depth(self, outer, inner) -> None:
        for o, i in zip(outer, inner):
            if not isinstance(o, jax_core.Literal):
                self.depth[i] = self.depth.get(o, 0)

    def _loop(self, jaxpr, env: dict, mask: np.ndarray, scale, carry=()) -> dict:
        """Walk a loop body (``scale``: the trips; ``carry``: the body's carried inputs): a real v5e
        runs a loop's iterations one after another, so its work is counted apart (LOOP_COLUMNS). The
        DMAs in flight are those of a middle iteration (the copies the one before left in flight:
        one pass ahead)."""
        self.inflight = dma_pass(jaxpr, self.inflight)
        saved = self.carried, self.carry_shapes, self.rewritten
        big = [v for v in carry if _size(v.aval) > 1]
        self.carried = set(saved[0]) | set(big)
        self.carry_shapes = set(saved[1]) | {tuple(v.aval.shape) for v in big}
        self.rewritten = set(saved[2]) | _written_refs(jaxpr)
        self.loops += 1
        try:
            return self.walk(jaxpr, env, mask, scale)
        finally:
            self.loops -= 1
            self.carried, self.carry_shapes, self.rewritten = saved

    def _add(self, local: dict[str, float], mask: np.ndarray, scale) -> None:
        for col, amount in local.items():
            if amount:
                self.work[col] = self.work.get(col, 0.0) + np.where(mask, amount * scale, 0.0)

    @staticmethod
    def read(env: dict, v) -> Any:
        if isinstance(v, jax_core.Literal):
            return _Val(np.asarray(v.val), False)
        return env.get(v)

    def walk(self, jaxpr, env: dict, mask: np.ndarray, scale) -> dict:
        """Walk ``jaxpr`` at the points in ``mask``, ``scale`` times each (a loop's trips)."""
        local: dict[str, float] = {}
        longest = 0
        for eqn in jaxpr.eqns:
            ins = [self.read(env, v) for v in eqn.invars]
            outs = self._eqn(eqn, ins, mask, scale, local)
            for v, o in zip(eqn.outvars, outs):
                env[v] = o
            longest = max(longest, self._chain(eqn))
        self._add(local, mask, scale)
        if longest:
            self.chain = np.maximum(self.chain, np.where(mask, float(longest), 0.0))
        return env

    def _chain(self, eqn) -> int:
        """Place ``eqn``'s outputs in the dependency chain; its length there when it is a dot or
        a lane reduction outside loops (each waits for its operands' results), else 0."""
        name = eqn.primitive.name
        if any(v in self.depth for v in eqn.outvars) or name in ("scan", "while"):
            return 0            # set by the sub-program walked (inline, cond), or a loop's (not chained)
        waits = self.loops == 0 and (name == "dot_general" or _lane_reduction(eqn))
        d = self._depth(eqn.invars) + (1 if waits else 0)
        if name == "get":
            d = 0               # a ref read: the chain through memory is not followed
        for v in eqn.outvars:
            self.depth[v] = d
        return d if waits else 0

    def _eqn(self, eqn, ins: list, mask: np.ndarray, scale, local: dict) -> list:
        name = eqn.primitive.name
        if name == "cond":
            self._cond(eqn, ins, mask, scale)
            return [None] * len(eqn.outvars)
        if name == "scan":
            p = eqn.params
            body = p["jaxpr"]
            nc, ncarry = scan_counts(p)[:2]
            env = _bind(body.jaxpr, body.consts, ins[:nc] + [None] * (len(ins) - nc))
            self._carry([v.aval for v in eqn.invars[nc:nc + ncarry]], body.jaxpr, mask, scale * int(p["length"]))
            self._loop(body.jaxpr, env, mask, scale * int(p["length"]), body.jaxpr.invars[nc:nc + ncarry])
            return [None] * len(eqn.outvars)
        if name == "while":
            p = eqn.params
            trips = self._trips(eqn, ins)
            body = p["body_jaxpr"]
            cn, bn = p["cond_nconsts"], p["body_nconsts"]
            env = _bind(body.jaxpr, body.consts, ins[cn:cn + bn] + [None] * (len(ins) - cn - bn))
            self._carry([v.aval for v in eqn.invars[cn + bn:]], body.jaxpr, mask, scale * trips)
            self._loop(body.jaxpr, env, mask, scale * trips, body.jaxpr.invars[bn:])
            return [None] * len(eqn.outvars)
        if name in _INLINE:
            return self._inline(eqn, ins, mask, scale)
        if name == release.RUN_SCOPED:
            body = eqn.params["jaxpr"]
            self._pass_depth(eqn.invars, body.constvars)
            env = {**dict(zip(body.constvars, ins)), **{v: None for v in body.invars}}
            self.walk(body, env, mask, scale)
            return [None] * len(eqn.outvars)
        for col, amount in _counted(eqn_cost(eqn), eqn, self.loops > 0, self._updates_carry(eqn)).items():
            local[col] = local.get(col, 0.0) + amount
        self._dma(name, local)
        if name == "dma_start" and self.loops and len(self.inner_blocks) < _MAX_INNER_BLOCKS:
            operand = next((i.index for i in ins if isinstance(i, _Operand)), -1)
            self.inner_blocks.setdefault((operand, dma_shape(eqn)), None)
        return self._value(eqn, ins)

    def _inline(self, eqn, ins: list, mask: np.ndarray, scale) -> list:
        body = eqn.params[_INLINE[eqn.primitive.name]]
        closed = jaxprs.is_closed(body)
        inner = body.jaxpr if closed else body
        self._pass_depth(eqn.invars, inner.invars)
        self._pass_carried(eqn.invars, inner.invars)
        env = self.walk(inner, _bind(inner, body.consts if closed else (), ins), mask, scale)
        self._pass_depth(inner.outvars, eqn.outvars)
        self._pass_carried(inner.outvars, eqn.outvars)
        return [self.read(env, v) for v in inner.outvars]

    def _cond(self, eqn, ins: list, mask: np.ndarray, scale) -> None:
        index, operands = ins[0], ins[1:]
        branches = eqn.params["branches"]
        for branch in branches:
            self._pass_depth(eqn.invars[1:], branch.jaxpr.invars)
            self._pass_carried(eqn.invars[1:], branch.jaxpr.invars)
        try:
            self._branches(eqn, index, operands, branches, mask, scale)
        finally:
            for k, v in enumerate(eqn.outvars):
                if any(k < len(b.jaxpr.outvars) and b.jaxpr.outvars[k] in self.carried for b in branches):
                    self.carried.add(v)
            for v in eqn.outvars:
                self.depth[v] = max((self.depth.get(b.jaxpr.outvars[k], 0) for b in branches
                                     for k in [eqn.outvars.index(v)] if k < len(b.jaxpr.outvars)
                                     and not isinstance(b.jaxpr.outvars[k], jax_core.Literal)), default=0)

    def _branches(self, eqn, index, operands: list, branches, mask: np.ndarray, scale) -> None:
        if isinstance(index, _Val) and (self.points is not None or not index.batched):
            self.data_dependent |= index.data
            which = np.clip(np.broadcast_to(index.value.reshape(-1) if index.batched else index.value,
                                            (self.n,)), 0, len(branches) - 1)
            for b, branch in enumerate(branches):
                sub = mask & (which == b)
                if sub.any():
                    self.walk(branch.jaxpr, _bind(branch.jaxpr, branch.consts, operands), sub, scale)
            return
        # A condition on block data: it may hold at any step, so the costliest branch counts.
        parts, inflight = [], self.inflight
        for branch in branches:
            g = self.fork()
            g.walk(branch.jaxpr, _bind(branch.jaxpr, branch.consts, operands), mask, scale)
            self.data_dependent |= g.data_dependent
            parts.append(g.work)
            self.chain = np.maximum(self.chain, g.chain)
            inflight = max(inflight, g.inflight)
        self.inflight = inflight
        for col in {c for part in parts for c in part}:
            best = np.max([part.get(col, np.zeros(self.n)) for part in parts], axis=0)
            self.work[col] = self.work.get(col, 0.0) + best

    def _trips(self, eqn, ins: list):
        """A while loop's trip count at every point: a counter ``carry[k] < bound`` (or ``<=``) that
        the body steps by a constant (fori_loop(lo, hi) runs hi - lo times; a hand-written counter
        loop as many as its bound allows)."""
        p = eqn.params
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        cond, body = p["cond_jaxpr"].jaxpr, p["body_jaxpr"].jaxpr
        form = _counter(cond, body, cn, bn)
        if form is None:
            raise Unanalysable("the kernel body has a while_loop whose trip count the model cannot evaluate "
                               "(only a counter stepped by a constant up to a bound from grid indices, "
                               "constants or scalar-prefetch data)")
        k, bound, step, inclusive = form
        carry = ins[cn + bn:]
        lo = carry[k]
        hi = _Val(np.asarray(bound.val), False) if isinstance(bound, jax_core.Literal) else \
            (ins[cond.invars.index(bound)] if cond.invars.index(bound) < cn else carry[cond.invars.index(bound) - cn])
        if not (isinstance(lo, _Val) and isinstance(hi, _Val)) or (self.points is None and (lo.batched or
                                                                                            hi.batched)):
            raise Unanalysable("the kernel body has a fori_loop whose bound depends on data in its blocks, "
                               "which the model cannot evaluate" if self.prefetch_known else
                               "the kernel body has a fori_loop whose bound the model cannot evaluate without "
                               "the scalar-prefetch data")
        self.data_dependent |= lo.data or hi.data
        span = np.asarray(hi.value, np.float64) - np.asarray(lo.value, np.float64) + (step if inclusive else 0)
        trips = np.maximum(np.ceil(span / step), 0.0)
        return trips.reshape(-1) if (lo.batched or hi.batched) else float(trips)

    def _value(self, eqn, ins: list) -> list:
        """The outputs of a scalar computation whose inputs are known, at every point."""
        name, outs = eqn.primitive.name, eqn.outvars
        if name == "program_id":
            axis = int(eqn.params["axis"])
            if self.points is None:
                return [None]
            return [_Val(self.points[:, axis].astype(np.int32), True)]
        if name == "num_programs":
            return [_Val(np.asarray(self.grid[int(eqn.params["axis"])], np.int32), False)]
        if name == "get":
            return [_read_prefetch(eqn, ins)]
        if name == "multiple_of":
            return [ins[0]]                 # a hint to the compiler: the value itself
        # Effects (ref reads and writes, DMAs, prints) are never replayed here.
        if (eqn.effects or not ins or any(not isinstance(i, _Val) for i in ins) or
                any(_size(o.aval) > _SMALL for o in outs)):
            return [None] * len(outs)
        return _bind_values(eqn, ins)


def _bind(jaxpr, consts, ins: list) -> dict:
    env = {v: _Val(np.asarray(c), False) if _size(getattr(c, "aval", np.asarray(c))) <= _SMALL else None
           for v, c in zip(jaxpr.constvars, consts)}
    env.update(zip(jaxpr.invars, ins))
    return env


def _counter(cond, body, cn: int, bn: int):
    """(k, bound, step, inclusive) of a while_loop that counts ``carry[k]`` up by a constant ``step``
    while ``carry[k] < bound`` (``<=``: inclusive); ``bound`` a literal, a condition constant or a
    carry the body passes on unchanged (jax.lax.fori_loop's form: carry (i, upper, ...)). None
    when the loop is not of that form."""
    if len(cond.eqns) != 1 or cond.eqns[0].primitive.name not in ("lt", "le"):
        return None
    test = cond.eqns[0]
    counter, bound = test.invars
    if cond.outvars != test.outvars or isinstance(counter, jax_core.Literal) or counter not in cond.invars[cn:]:
        return None
    k = cond.invars.index(counter) - cn
    if not isinstance(bound, jax_core.Literal):
        if bound not in cond.invars:
            return None
        u = cond.invars.index(bound) - cn
        if u >= 0 and body.outvars[u] is not body.invars[bn + u]:
            return None            # a bound the body changes: not a counter loop
    step_eqn = next((e for e in body.eqns if e.outvars and e.outvars[0] is body.outvars[k]), None)
    if step_eqn is None or step_eqn.primitive.name != "add" or body.invars[bn + k] not in step_eqn.invars:
        return None
    step = next((float(v.val) for v in step_eqn.invars if isinstance(v, jax_core.Literal)), 0.0)
    if step <= 0:
        return None
    return k, bound, step, test.primitive.name == "le"


def _read_prefetch(eqn, ins: list) -> _Val | None:
    """``ref[i, j]`` of a scalar-prefetch ref at every point (indices clamped, as TPU SMEM reads are
    bounded by the ref)."""
    ref = ins[0]
    if not isinstance(ref, _Ref):
        return None
    known = {id(v): val for v, val in zip(eqn.invars[1:], ins[1:])}
    try:
        transforms = eqn.params["tree"].unflatten(list(eqn.invars[1:]))
    except Exception:  # noqa: BLE001 - an indexer this release spells otherwise: not evaluated
        return None
    if len(transforms) != 1 or type(transforms[0]).__name__ != "NDIndexer":
        return None
    cols, batched = [], False
    for d, ix in enumerate(transforms[0].indices):
        val = _Val(np.asarray(ix.val), False) if isinstance(ix, jax_core.Literal) else known.get(id(ix))
        if not isinstance(val, _Val) or val.value.ndim != (1 if val.batched else 0) or d >= ref.value.ndim:
            return None
        cols.append(np.clip(val.value.astype(np.int64), 0, ref.value.shape[d] - 1))
        batched |= val.batched
    if len(cols) != ref.value.ndim:
        return None
    return _Val(np.asarray(ref.value[tuple(cols)]), batched, True)


def _bind_values(eqn, ins: list[_Val]) -> list:
    fn = lambda *a: eqn.primitive.bind(*a, **eqn.params)
    axes = [0 if i.batched else None for i in ins]
    try:
        batched = any(a is not None for a in axes)
        out = jax.vmap(fn, in_axes=axes)(*[i.value for i in ins]) if batched else fn(*[i.value for i in ins])
    except Exception:  # noqa: BLE001 - a primitive that cannot run outside a kernel: value unknown
        return [None] * len(eqn.outvars)
    outs = out if eqn.primitive.multiple_results else [out]
    batched = any(i.batched for i in ins)
    data = any(i.data for i in ins)
    return [_Val(np.asarray(o), batched, data) for o in outs]


def grid_work(kernel, grid: tuple[int, ...], points: np.ndarray | None, prefetch: list | None,
              num_prefetch: int, num_operands: int = 0) -> GridWork:
    """Every grid point's work (``points``: None when the grid is too large to list; then every
    condition counts its costliest branch). ``prefetch``: the scalar-prefetch values, when known;
    ``num_operands``: the call's operands (the kernel's refs after the scalar-prefetch ones)."""
    g = _Grid(points, grid, prefetch is not None or not num_prefetch)
    env: dict = {v: None for v in kernel.constvars}
    for k, v in enumerate(kernel.invars):
        env[v] = _Ref(np.asarray(prefetch[k])) if prefetch is not None and k < num_prefetch else None
        if num_prefetch <= k < num_prefetch + num_operands:
            env[v] = _Operand(k - num_prefetch)
    g.walk(kernel, env, np.ones(g.n, dtype=bool), 1.0)
    columns = {col: np.broadcast_to(np.asarray(w, np.float64), (g.n,)).copy() for col, w in g.work.items()}
    if g.chain.any():
        columns["chain"] = g.chain
    return GridWork(columns, g.data_dependent, tuple(g.inner_blocks))
