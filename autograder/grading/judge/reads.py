"""What a wrong output block needed and its steps never read: evidence for the fix
and the line of a wrong result, never a charge. numpy only, no JAX.

The index-map scan says which blocks of each input the grid points writing an
output block read (``CallMap.reads``). The instructor's reference says which blocks
an output block depends on: change one input block and see which output blocks
change. A wrong output block that depends on a block its steps never read cannot be
right whatever the kernel computes from what it does read; where that block lies
says where the fault is:

- ``grid-short``: no step reads it, and it lies past the last block the grid reaches
  along a dimension the index map walks (a reduction loop one step short);
- ``block-narrow``: no step reads it, and the index map never moves along that
  dimension (a block narrower than what each output block needs, e.g. part of a row);
- ``map-misses``: other steps read it, not those writing this output block (an index
  map that follows the wrong grid axis);
- ``map-fixed``: a ``block-narrow`` whose needed block sits at the output block's own
  index along a dimension the grid walks the output in blocks (an index map that
  stays at block 0 where it should follow the output, e.g. ``(i, 0)`` for ``(i, j)``).

Cost: one reference call per input block, at the case's own (small) size, capped at
``MAX_CALLS``; only for a visible case's wrong result, once per case.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from ...pallas_surface.static.facts import CallMap, IndexMaps, OperandMap, ReadSet

# Reference calls one case's evidence may make (one per input block changed).
MAX_CALLS = 64


def _slices(block: Sequence[int], shape: Sequence[int], size: Sequence[int]) -> tuple[slice, ...]:
    return tuple(slice(b * s, min((b + 1) * s, n)) for b, s, n in zip(block, size, shape))


def _blocks_of(op: OperandMap) -> list[tuple[int, ...]]:
    counts = [math.ceil(n / b) for n, b in zip(op.array_shape, op.block_shape)]
    return [tuple(int(i) for i in ix) for ix in np.ndindex(*counts)] if counts else [()]


def _changed_blocks(before: np.ndarray, after: np.ndarray, out: OperandMap) -> set[tuple[int, ...]]:
    """The output blocks whose reference values move when one input block changes."""
    diff = ~(np.abs(after - before) <= 1e-9 * (1.0 + np.abs(before)))   # (NaN counts as moved)
    return set(_marked(diff, out.block_shape))


def _marked(mask: np.ndarray, block_shape) -> list[tuple[int, ...]]:
    """The blocks holding a marked element, in row-major order (flat block numbers:
    a 1-D unique, not a row-wise one)."""
    counts = tuple(math.ceil(n / b) for n, b in zip(mask.shape, block_shape))
    if not mask.ndim:
        return [()] if bool(mask) else []
    at = np.nonzero(mask)
    flat = np.ravel_multi_index(tuple(i // b for i, b in zip(at, block_shape)), counts)
    return [tuple(int(i) for i in b) for b in zip(*np.unravel_index(np.unique(flat), counts))]


def _the_call(scan: IndexMaps | None, shape) -> CallMap | None:
    """The one pallas_call whose output 0 the function returns unchanged, with reads listed."""
    if scan is None or len(scan.calls) != 1:
        return None
    call = scan.calls[0]
    outs = [op for op in call.operands if op.is_output]
    if not call.returned or not call.reads or not outs or tuple(outs[0].array_shape) != tuple(shape):
        return None
    return call


def dependencies(call: CallMap, args: list, reference: Callable, ref: np.ndarray,
                 arrays: list[int], seed: int = 0) -> dict[str, dict[tuple, set]] | None:
    """For each input of the call that is one of the function's arrays unchanged: input
    block -> the output blocks that depend on it. ``args``: the reference's arguments;
    ``arrays``: the position in ``args`` of each of the function's arrays. None when it
    would cost more than ``MAX_CALLS`` reference calls."""
    out = next(op for op in call.operands if op.is_output)
    inputs = [op for op in call.operands if not op.is_output and op.arg is not None and op.arg < len(arrays)]
    if sum(len(_blocks_of(op)) for op in inputs) > MAX_CALLS:
        return None
    rng = np.random.default_rng(seed)
    found: dict[str, dict[tuple, set]] = {}
    for op in inputs:
        pos = arrays[op.arg]
        base = np.asarray(args[pos])
        if base.dtype.kind != "f" or tuple(base.shape) != tuple(op.array_shape):
            continue
        scale = float(np.std(base)) or 1.0
        found[op.operand] = {}
        for block in _blocks_of(op):
            changed = base.copy()
            sl = _slices(block, base.shape, op.block_shape)
            changed[sl] = changed[sl] + (rng.standard_normal(changed[sl].shape) * scale).astype(base.dtype)
            moved = list(args)
            moved[pos] = changed
            after = np.asarray(reference(*moved), dtype=np.float64)
            found[op.operand][block] = _changed_blocks(ref, after, out) if after.shape == ref.shape else set()
    return found


def wrong_blocks(wrong: np.ndarray, out: OperandMap) -> list[tuple[int, ...]]:
    """The output blocks holding wrong elements, in row-major order."""
    return _marked(wrong, out.block_shape)


def missing(call: CallMap, deps: dict[str, dict[tuple, set]], wrong: list[tuple]) -> dict | None:
    """The first wrong output block that depends on an input block its steps never read,
    as facts (see the module's docstring for ``kind``), else None."""
    ops = {op.operand: op for op in call.operands}
    args = [op.arg for op in call.operands if not op.is_output]
    firsts = []
    for rs in call.reads:
        need = deps.get(rs.input)
        if need is None or args.count(ops[rs.input].arg) > 1:
            continue     # (one array passed twice: what one operand misses, the other may read)
        read = {tuple(b.block): {tuple(r) for r in b.reads} for b in rs.blocks}
        short = [(ob, ib) for ob in wrong if ob in read
                 for ib in sorted(need) if ob in need[ib] and ib not in read[ob]]
        if short:
            firsts.append((rs, short, read))
    if not firsts:
        return None
    rs, short, read = firsts[0]
    ob, ib = short[0]
    op = ops[rs.input]
    facts = {"input": rs.input, "arg": op.arg, "output": rs.output, "output_block": list(ob),
             "input_block": list(ib), "read": [list(r) for r in sorted(read[ob])[:4]],
             "read_count": len(read[ob]), "wrong_blocks": len({o for o, _ in short}), "of": len(wrong),
             "also_args": [ops[f[0].input].arg for f in firsts[1:]], "block_shape": list(op.block_shape),
             "array_shape": list(op.array_shape)}
    facts.update(_kind(op, ib, _everything_read(rs)))
    out = ops[rs.output]
    if facts["kind"] == "block-narrow" and len(ib) == len(ob) and ib[facts["dim"]] == ob[facts["dim"]] \
            and len(out.array_shape) == len(ob) and out.array_shape[facts["dim"]] > out.block_shape[facts["dim"]]:
        # The block it needs sits where the output block does, along a dimension the grid walks
        # the output: the map should follow the output there, not the block widen.
        facts["kind"] = "map-fixed"
    return facts


def _everything_read(rs: ReadSet) -> set[tuple]:
    return {tuple(r) for b in rs.blocks for r in b.reads}


def _kind(op: OperandMap, block: tuple, anywhere: set[tuple]) -> dict:
    if block in anywhere:
        return {"kind": "map-misses"}
    # Never read at all: along which dimension does it lie past every block read?
    for d, i in enumerate(block):
        reached = max((r[d] for r in anywhere), default=-1)
        if i > reached:
            blocks = math.ceil(op.array_shape[d] / op.block_shape[d])
            return {"kind": "grid-short" if reached > 0 else "block-narrow", "dim": d, "reached": reached + 1,
                    "blocks_along": blocks, "size": op.array_shape[d], "block": op.block_shape[d]}
    return {"kind": "map-misses"}


def _sane(op: OperandMap) -> bool:
    """Blocks that tile their array (the facts are a claim about the student's program)."""
    return len(op.block_shape) == len(op.array_shape) and all(b > 0 for b in op.block_shape) and \
        all(n >= 0 for n in op.array_shape)


def evidence(scan: IndexMaps | None, wrong: np.ndarray, args: list, arrays: list[int],
             reference: Callable, ref: np.ndarray) -> dict | None:
    """The facts of a wrong result's unread dependency on one case, else None (no single
    returned call, inputs not the function's own, too many blocks, or nothing missing)."""
    call = _the_call(scan, ref.shape)
    if call is None or wrong.shape != ref.shape or not all(_sane(op) for op in call.operands):
        return None
    if any(op.arg is None for op in call.operands if not op.is_output):
        return None     # an input computed outside may carry what a blocked one misses (a row's max)
    out = next(op for op in call.operands if op.is_output)
    deps = dependencies(call, args, reference, ref, arrays)
    return missing(call, deps, wrong_blocks(wrong, out)) if deps else None
