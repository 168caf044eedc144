"""What a traced kernel costs, counted from its program (nothing runs): the
facts the speed estimate (``autograder.speed.model``) models a TPU's time from.

Per pallas_call: the grid; per blocked operand, its block's bytes and the grid
steps at which the pipeline moves it (a block is fetched when its block index
differs from the previous grid step's, and an output block written back when
its index changes or the grid ends); and every grid point's work
(``stepwork``: matrix-unit flops by rate class, vector and EUP operations,
manual DMA bytes), with ``pl.when`` conditions and loop bounds evaluated at
each point. Points that do the same work and move the same bytes are one
step class. Scalar-prefetch operands are computed from the arguments the
analysis was given (the data a grading draws at that size); when they depend
on an argument it has only the shape of, the call says so and is not
estimated. The chip's figures come from JAX's own table (``pltpu`` TPU info).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from jax._src import core as jax_core

from .. import release
from ..program import jaxprs
from ..program.jaxprs import sub_jaxprs
from ..rungs.rung import Traced
from .analysis import _block_elems, _index_map, _memory_space, call_vmem, dimension_semantics, vmem_limit
from .stepwork import LOOP_COLUMNS, Unanalysable, grid_work

MAX_POINTS = 1 << 20
MAX_CLASSES = 4096
_KNOWN_ELEMENTS = 1 << 22    # outside the kernels, known values up to this size are computed


def _bytes(aval) -> int:
    inner = getattr(aval, "inner_aval", aval)
    if not hasattr(inner, "dtype"):
        return 0
    return int(np.prod(getattr(inner, "shape", ()) or (1,), dtype=np.int64)) * int(np.dtype(inner.dtype).itemsize)


@dataclass(frozen=True)
class _Outer:
    """A value of the traced function (outside its kernels): concrete when known."""
    value: Any | None
    inputs: frozenset = frozenset()     # the function's arguments it is computed from
    arg: int | None = None              # the argument it is, unchanged and not donated


@dataclass(frozen=True)
class Site:
    eqn: Any
    ins: tuple[_Outer, ...]
    within: str = ""        # the loop or branch outside every kernel that runs this call ("" if none)


def sites(traced: Traced, args: Sequence[Any] | None = None) -> list[Site]:
    """Every pallas_call with what is known of its operands, and every
    jax.debug.print outside the kernels (``release.HOST_PRINT``): the function is
    evaluated where its values are known (arrays among ``args``; shapes are not)
    and no kernel runs."""
    found: list[Site] = []
    closed = traced.closed
    ins = [_Outer(a if _concrete(a) else None, frozenset({i}), i) for i, a in enumerate(args or [])]
    if not args:
        ins = [_Outer(None, frozenset({i}), i) for i in range(len(closed.jaxpr.invars))]
    _walk(closed.jaxpr, [_Outer(c) for c in closed.consts], ins, found)
    return found


def _concrete(a: Any) -> bool:
    return hasattr(a, "dtype") and hasattr(a, "shape") and not type(a).__name__ == "ShapeDtypeStruct"


def _walk(jaxpr, consts: list[_Outer], ins: list[_Outer], found: list[Site], within: str = "") -> list[_Outer]:
    env: dict = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, ins))
    read = lambda v: _Outer(v.val) if isinstance(v, jax_core.Literal) else env[v]
    for eqn in jaxpr.eqns:
        vals = [read(v) for v in eqn.invars]
        for v, o in zip(eqn.outvars, _outer_eqn(eqn, vals, found, within)):
            env[v] = o
    return [read(v) for v in jaxpr.outvars]


def _outer_eqn(eqn, vals: list[_Outer], found: list[Site], within: str = "") -> list[_Outer]:
    name, p = eqn.primitive.name, eqn.params
    taint = frozenset().union(*(v.inputs for v in vals)) if vals else frozenset()
    unknown = [_Outer(None, taint)] * len(eqn.outvars)
    if name == release.PALLAS_CALL:
        found.append(Site(eqn, tuple(vals), within))
        return unknown
    if name == release.HOST_PRINT:          # outside every kernel: a host callback on the device's timeline
        found.append(Site(eqn, (), within))
        return unknown
    if name in release.INLINE_CLOSED or name in release.INLINE_OPEN:
        body = p.get(release.INLINE_CLOSED.get(name) or release.INLINE_OPEN[name])
        closed = jaxprs.is_closed(body)
        donated = p.get("donated_invars") or ()
        inner = [_Outer(v.value, v.inputs, None if (i < len(donated) and donated[i]) else v.arg)
                 for i, v in enumerate(vals)]
        return _walk(body.jaxpr if closed else body, [_Outer(c) for c in (body.consts if closed else ())],
                     inner, found, within)
    subs = [sub for v in p.values() for sub in sub_jaxprs(v)]
    for sub in subs:
        # A kernel inside a loop or branch: its operands change per iteration (not known here).
        _walk(sub, [_Outer(None, taint)] * len(sub.constvars), [_Outer(None, taint)] * len(sub.invars), found,
              within or name)
    if subs or any(v.value is None for v in vals) or eqn.effects or \
            any(_bytes(o.aval) > 4 * _KNOWN_ELEMENTS for o in eqn.outvars):
        return unknown
    try:
        out = eqn.primitive.bind(*[v.value for v in vals], **p)
    except Exception:  # noqa: BLE001 - a value that cannot be computed here stays unknown
        return unknown
    outs = out if eqn.primitive.multiple_results else [out]
    return [_Outer(o, taint) for o in outs]


def _moves(idx: np.ndarray) -> int:
    """How many times a block index changes along the grid order (the first counts)."""
    if len(idx) == 0:
        return 0
    return 1 + int(np.count_nonzero(np.any(idx[1:] != idx[:-1], axis=1)))


def _operand(k: int, bm, gm, grid: tuple[int, ...], points: np.ndarray | None,
             prefetch: list | None) -> tuple[dict, np.ndarray | None]:
    """An operand's facts and its block index at every grid point (None: moved every step)."""
    import jax
    is_output = k >= gm.num_inputs
    name = f"output {k - gm.num_inputs}" if is_output else f"input {k}"
    elems = _block_elems(bm.block_shape)
    space = _memory_space(bm.block_aval) if hasattr(bm, "block_aval") else ""
    facts = {"operand": name, "is_output": is_output, "array_bytes": _bytes(bm.array_aval),
             "shape": list(bm.array_aval.shape)}
    if elems is None or "any" in space or "hbm" in space:
        return {**facts, "pipelined": False}, None      # moved by the kernel's own DMAs (counted there)
    block_bytes = int(np.prod(elems, dtype=np.int64)) * int(np.dtype(bm.array_aval.dtype).itemsize)
    refs = bm.index_map_jaxpr.jaxpr.invars[len(grid):]
    if prefetch is None and refs:
        if _reads_prefetch(bm, len(grid)):
            raise Unanalysable(f"the index map of {name} reads scalar-prefetch values")
        # Given, not read: any values do.
        prefetch = [np.zeros(v.aval.inner_aval.shape, v.aval.inner_aval.dtype) for v in refs]
    at = _index_map(bm, len(grid), prefetch or [])
    idx = None
    if not isinstance(at, str) and not grid:
        idx = np.asarray([[int(r) for r in at()]])
    elif not isinstance(at, str) and points is not None:
        cols = [jax.numpy.asarray(points[:, a], jax.numpy.int32) for a in range(len(grid))]
        res = jax.vmap(at)(*cols)
        idx = np.stack([np.broadcast_to(np.asarray(r), (len(points),)) for r in res], axis=1)
    moves = _moves(idx) if idx is not None else int(np.prod(grid, dtype=np.int64))
    mode = getattr(bm, "pipeline_mode", None)
    buffers = int(getattr(mode, "buffer_count", 2) or 2) if mode is not None else 2
    return {**facts, "pipelined": True, "block": list(elems), "block_bytes": block_bytes, "moves": moves,
            "buffers": buffers}, idx


def _step_bytes(operands: list[tuple[dict, np.ndarray | None]], n: int) -> dict[str, np.ndarray]:
    """Block bytes each step moves: the next step's changed input blocks, and the output
    blocks the previous step finished (the first fetch and the last write-back are apart);
    apart, those of single-buffered operands (``sync_bytes``, ``sync_moves``): a copy into
    or out of the one buffer waits for the step that uses it."""
    out = {"block_bytes": np.zeros(n), "sync_bytes": np.zeros(n), "sync_moves": np.zeros(n)}
    for facts, idx in operands:
        if not facts["pipelined"]:
            continue
        if idx is None:
            changed = np.ones(n)
        else:
            changed = np.zeros(n)
            moved = np.any(idx[1:] != idx[:-1], axis=1).astype(float)
            if facts["is_output"]:
                changed[1:] += moved
            else:
                changed[:-1] += moved
        out["block_bytes"] += changed * float(facts["block_bytes"])
        if facts.get("buffers", 2) == 1:
            out["sync_bytes"] += changed * float(facts["block_bytes"])
            out["sync_moves"] += changed
    return out


def _significant(a: np.ndarray, digits: int) -> np.ndarray:
    safe = np.where(a == 0, 1.0, np.abs(a))
    scale = 10.0 ** (digits - 1 - np.floor(np.log10(safe)))
    return np.round(a * scale) / scale


def _unique_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(table, axis=0, return_counts=True)``, sorting only the columns that
    vary: most grids do the same work at every point, and a row sort of 262,144
    points costs half a second where a column check costs milliseconds."""
    if len(table) == 0:
        return np.unique(table, axis=0, return_counts=True)
    varying = ~(table == table[0]).all(axis=0)
    if not varying.any():
        return table[:1], np.array([len(table)])
    _, first, counts = np.unique(table[:, varying], axis=0, return_index=True, return_counts=True)
    return table[first], counts


def _classes(columns: dict[str, np.ndarray], traffic: dict[str, np.ndarray], steps: int) -> list[dict]:
    """Grid points with the same work and traffic, counted."""
    columns = {**columns, **{f"traffic:{k}": v for k, v in traffic.items()}}
    names = sorted(columns)
    table = np.stack([columns[c] for c in names], axis=1)
    rows, counts = _unique_rows(table)
    for digits in (3, 2, 1):
        if len(rows) <= MAX_CLASSES:
            break
        # Nearly every point differs (e.g. a loop bound from data): a few significant digits suffice.
        rows, counts = _unique_rows(_significant(table, digits))
    scale = steps / max(len(table), 1)     # one point stands for the whole grid when not listed
    out = []
    for row, count in zip(rows, counts):
        work = dict(zip(names, row.tolist()))
        out.append({"steps": int(round(count * scale)), "block_bytes": work.get("traffic:block_bytes", 0.0),
                    "sync_bytes": work.get("traffic:sync_bytes", 0.0),
                    "sync_moves": work.get("traffic:sync_moves", 0.0),
                    "mxu_flops": {c.split(":", 1)[1]: w for c, w in work.items() if c.startswith("mxu:")},
                    "vector": work.get("vector", 0.0), "transcendental": work.get("transcendental", 0.0),
                    "dma_bytes": work.get("dma_bytes", 0.0),
                    **{c: work.get(c, 0.0) for c in LOOP_COLUMNS}})
    return out


def _reads_prefetch(bm, n_grid: int) -> bool:
    """Whether an index map uses its scalar-prefetch arguments (not merely receives them)."""
    jaxpr = bm.index_map_jaxpr.jaxpr
    refs = set(jaxpr.invars[n_grid:])
    return any(v in refs for e in jaxpr.eqns for v in e.invars if not isinstance(v, jax_core.Literal)) or \
        any(v in refs for v in jaxpr.outvars if not isinstance(v, jax_core.Literal))


def _prefetch_why(vals: Sequence[_Outer]) -> str:
    args = sorted(set().union(*(v.inputs for v in vals if v.value is None)))
    if args:
        return (f"its scalar-prefetch operands are computed from argument {', '.join(map(str, args))} of the "
                "graded function, of which the estimate has only the shape at this size")
    return "its scalar-prefetch operands are computed inside a loop or branch (they change between calls)"


def _copy_bytes(eqn, ins: Sequence[_Outer]) -> int:
    """An input aliased to an output that the caller still holds (an argument, not donated) is
    copied by XLA before the kernel writes into it: read once, written once."""
    total = 0
    for i, _o in eqn.params.get("input_output_aliases") or ():
        if i < len(ins) and ins[i].arg is not None:
            total += 2 * _bytes(eqn.invars[i].aval)
    return total


# How the loops and branches around a pallas_call are named to a student.
_WITHIN = {"scan": "loop (`lax.fori_loop` or `lax.scan`)", "while": "loop (`lax.while_loop` or `lax.fori_loop`)",
           "cond": "branch (`lax.cond` or `lax.switch`)"}


def _call(site: Site) -> dict:
    from .blockmap import grid_points
    eqn = site.eqn
    gm = eqn.params["grid_mapping"]
    grid = tuple(int(g) for g in gm.grid)
    steps = int(np.prod(grid, dtype=np.int64))
    points = grid_points(grid) if steps <= MAX_POINTS else None
    n_pref = int(gm.num_index_operands)
    pref = site.ins[:n_pref]
    prefetch = [np.asarray(v.value) for v in pref] if all(v.value is not None for v in pref) else None
    out_avals = eqn.params["out_avals"]
    base = {"grid": list(grid), "steps": steps, "dtype": str(out_avals[0].dtype) if out_avals else "",
            "dimension_semantics": list(dimension_semantics(eqn)), "copy_bytes": _copy_bytes(eqn, site.ins),
            "vmem_bytes": int(call_vmem(eqn)["bytes"]), "vmem_limit": vmem_limit(eqn)}
    try:
        ops = [_operand(k, bm, gm, grid, points, prefetch) for k, bm in enumerate(gm.block_mappings)]
        work = grid_work(eqn.params["jaxpr"], grid, points, prefetch, n_pref, len(gm.block_mappings))
    except Unanalysable as e:
        why = f"{e}; {_prefetch_why(pref)}" if prefetch is None and n_pref else str(e)
        return {**base, "operands": [], "step_classes": [], "data_dependent": False, "problem": why}
    if site.within:
        # Measured on a v5e: a fori_loop launching 512 row-block calls ran in 1.11 ms where one call
        # timed 512 times would be 3.6 ms and one call alone 7 us; neither is an estimate.
        what = _WITHIN.get(site.within, f"`{site.within}`")
        why = (f"the pallas_call runs inside a {what} outside the kernel, once per iteration or branch taken: "
               "the model times one call, not how many run")
        return {**base, "operands": [], "step_classes": [], "data_dependent": False, "problem": why}
    maps = prefetch is not None and any(_reads_prefetch(bm, len(grid)) for bm in gm.block_mappings)
    # Tables computed from constants are part of the kernel; from arguments, they are the data drawn.
    drawn = any(v.inputs for v in pref) and (work.data_dependent or maps)
    traffic = _step_bytes(ops, len(points) if points is not None else 1)
    return {**base, "operands": [facts for facts, _idx in ops], "data_dependent": bool(drawn),
            "step_classes": _classes(work.columns, traffic, steps), "problem": "",
            "inner_blocks": [{"operand": k, "block": list(shape)} for k, shape in work.inner_blocks]}


def chip_facts(chip: str) -> dict:
    """One TensorCore's figures from JAX's TPU table, and the chip's TensorCores."""
    from jax._src.pallas.mosaic import tpu_info
    version = tpu_info.ChipVersion(chip)
    info = tpu_info.get_tpu_info_for_chip(version, 1)
    return {"chip": chip, "hbm_bytes_per_s": int(info.mem_bw_bytes_per_second),
            "bf16_flops_per_s": int(info.bf16_ops_per_second), "vmem_bytes": int(info.vmem_capacity_bytes),
            "lanes": int(info.num_lanes), "sublanes": int(info.num_sublanes), "mxus": int(info.num_mxus),
            "mxu_columns": int(info.mxu_column_size), "int8_ops_per_s": int(info.int8_ops_per_second),
            "fp8_ops_per_s": int(info.fp8_ops_per_second), "int4_ops_per_s": int(info.int4_ops_per_second),
            "tensor_cores": int(version.num_physical_tensor_cores_per_chip),
            "megacore": bool(version.supports_megacore)}


def speed_facts(traced: Traced, chip: str = "v5e", args: Sequence[Any] | None = None) -> dict:
    """Every pallas_call's schedule and per-step work, and the chip's figures. ``args``: the
    function's arguments as the analysis has them (arrays, or shapes only)."""
    found = sites(traced, args)
    calls = [_call(site) for site in found if site.eqn.primitive.name == release.PALLAS_CALL]
    prints = sum(site.eqn.primitive.name == release.HOST_PRINT for site in found)
    return {"calls": calls, "chip": chip_facts(chip), "pallas_calls": len(calls), "host_prints": prints}
