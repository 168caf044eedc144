"""Memory a kernel never writes, found on the failing test's own case.

A correctness test that fails with a wrong output may be reading memory the
kernel never wrote: an output row a masked store leaves out, output blocks a
grid too short for this case's shape never visits, an accumulator never
zeroed. The probes see such bugs on the probe case only, whose shape may not
show them, and TPU interpret mode can hide them altogether: it reuses an output
block's buffer from grid step to grid step, so a row never stored holds the
previous block's data, whatever the fill. So each failing test gets evidence
of its own, on its own inputs:

- its inputs rerun on the generic interpreter with two fills drawn from the
  run key (``plan.UNWRITTEN``; the generic interpreter starts every output and
  scratch buffer from the fill and keeps no buffer between grid steps): the
  elements that change with the fill are never written (or computed from
  memory never written). Wrong elements among them: ``uninitialized-memory``,
  or ``padding-dependence`` when they lie in partial edge blocks only and a
  fill gives the right answer;
- a third rerun with the second fill in that memory and the first in the
  padding of partial blocks only: wrong elements that change with the padding
  alone, and not with the memory the kernel writes, outside the output's own
  partial blocks, read the padding of an input's partial block (a K block past
  the end of the reduction axis): ``padding-dependence``, whatever the fills
  give (the masking fix), not ``uninitialized-memory``;
- without those runs (they could not run), NaN that covers whole output blocks
  while every other element is right: blocks never written.

This module decides from outputs the parent already holds; it runs nothing.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...findings import Finding
from ...isolation.outcome import Outcome
from ...pallas_surface.static.facts import IndexMaps
from ...spec import Assignment
from ..judge import regions
from ..judge.compare import mismatches
from ..run.plan import Plan, Run, unwritten_runs
from .poisoning import _differs, _partial_mask


def explain(plan: Plan, test: Run, outcome: Outcome, reference: np.ndarray,
            outcomes: Mapping[Run, Outcome], scan: IndexMaps | None) -> Finding | None:
    """The finding that explains a failed test's wrong output by memory the
    kernel never wrote, from this test's own case; None when the evidence does
    not show it."""
    out = outcome.output
    if out is None or reference is None or out.shape != reference.shape:
        return None
    a = plan.assignment
    wrong = mismatches(out, reference, a.tolerance(test.case), a.reduction_length(test.case))
    if not wrong.any():
        return None
    reruns = [(r, outcomes.get(r)) for r in unwritten_runs(plan, test)]
    reruns = [(r, o.output) for r, o in reruns
              if o is not None and o.output is not None and o.output.shape == out.shape]
    fills = [(r, o) for r, o in reruns if r.pad_fill is None]
    if len(fills) == 2:
        # The reruns are the evidence: wrong elements no fill changes were written
        # (NaN a kernel stores on purpose is its own result, not unwritten memory).
        padded = next((o for r, o in reruns if r.pad_fill is not None), None)
        read = _padding_read(a, test, out, wrong, [o for _r, o in fills], padded, scan)
        if read is not None:
            return read
        outs = {r.fill.name: o for r, o in fills}
        return _by_fills(a, test, out, reference, wrong, outs, _holds_fills(fills, reference), scan)
    return _whole_blocks(test, out, reference, wrong, scan)


def _padding_read(a: Assignment, test: Run, out: np.ndarray, wrong: np.ndarray, fills: list[np.ndarray],
                  padded: np.ndarray | None, scan: IndexMaps | None) -> Finding | None:
    """Padding of an input's partial block read into valid outputs (a K block past
    the end of the reduction axis, summed into every output): padding-dependence.

    The third rerun has the first fill in the memory the kernel writes and the
    second (the same values, 128 times smaller and negative) in the padding, so
    against the second only that memory changed, and against the first only the
    padding. Wrong elements that
    change with the padding alone, none with that memory, outside the output's
    own partial blocks (which ``_by_fills`` judges): the padding came in through
    an input."""
    if padded is None:
        return None
    first, second = fills
    by_memory, by_padding = _differs(second, padded), _differs(padded, first)
    if (by_memory & wrong).any() or not (by_padding & wrong).any():
        return None
    partial = _partial_mask(scan, out.shape)
    if partial is not None and not (by_padding & ~partial).any():
        return None
    inputs = _partial_inputs(scan, a, test.case)
    named = [f"{i['operand']} (along axis {', '.join(map(str, i['axes']))})" if i["axes"] else i["operand"]
             for i in inputs]
    through = f" through the partial blocks of {' and '.join(named)}" if named else ""
    return Finding.make(
        "padding-dependence", test.rung,
        f"the output depends on the padding of an input's partial block: on this case's own inputs, "
        f"{int(by_padding.sum())} of {by_padding.size} outputs change when only the padding's fill changes (the "
        f"memory the kernel writes keeping its fill), {int((by_padding & wrong).sum())} of the {int(wrong.sum())} "
        f"wrong ones among them: padding past the end of an input reaches valid results{through}",
        case=test.case.name, run=test.index, problem="input-padding", own_case=True, rerun_rung="generic",
        differing=int(by_padding.sum()), total=int(by_padding.size), wrong=int(wrong.sum()),
        wrong_padded=int((by_padding & wrong).sum()), partial_inputs=inputs,
        first_differing=[int(i) for i in np.argwhere(by_padding)[0]])


def same_padding(findings: list[Finding]) -> list[Finding]:
    """The poisoning check's fills change every output on a case whose own test's
    reruns told the padding of an input's partial block apart from the memory the
    kernel writes (its fills fill both, on TPU interpret mode): it saw that same
    padding, not unwritten memory. Said as such, so the case's tests keep the one
    root cause (``uninitialized-memory`` would come first by precedence)."""
    padded = {f.case: f for f in findings
              if f.check == "correctness" and f.id == "padding-dependence" and f.problem == "input-padding"}
    out = []
    for f in findings:
        seen = padded.get(f.case) if f.check == "poisoning" and f.id == "uninitialized-memory" else None
        if seen is not None:
            # (No block map: the output's blocks are whole; the padding is an input's.)
            facts = {k: v for k, v in f.facts().items() if k not in ("problem", "changed_by_block")}
            f = Finding.make("padding-dependence", f.rung, f"{f.message}; this case's own test shows why: the "
                             "padding of an input's partial block, not memory the kernel never wrote (filled "
                             "apart, only the padding changes the output)", case=f.case, check=f.check,
                             run=f.run, **facts, problem="input-padding", partial_inputs=seen.facts().get(
                                 "partial_inputs", []))
        out.append(f)
    return out


def _partial_inputs(scan: IndexMaps | None, a: Assignment | None = None, case=None) -> list[dict]:
    """The inputs of the compared call whose blocks stick out past their array,
    and along which axes (from the index-map scan; none without one), with what
    the fix names them by (``_named``)."""
    if scan is None or not scan.calls:
        return []
    call = scan.calls[-1]
    out = []
    for op in call.operands:
        if op.is_output or not op.partial_count:
            continue
        axes = sorted({axis for p in op.partial_blocks for axis, (_lo, hi) in enumerate(p.element_range)
                       if axis < len(op.array_shape) and hi > op.array_shape[axis]})
        entry = {"operand": op.operand, "axes": axes, "array_shape": list(op.array_shape),
                 "block_shape": list(op.block_shape),
                 "grid_axes": [_stepping_axis(call.grid, call.dimension_semantics, op.array_shape[axis],
                                              op.block_shape[axis]) for axis in axes]}
        out.append({**entry, **_named(op, a, case)})
    return out


def _stepping_axis(grid, semantics, size: int, block: int) -> int | None:
    """The grid axis that steps through an input's blocks along a partial axis: the one
    axis as long as its blocks there, the one "arbitrary" (reduction) axis among them
    where several are; None when that does not single one out (a guess is no fix)."""
    count = -(-size // max(block, 1))
    if count < 2:
        return None     # one block: nothing steps along it
    long = [g for g, n in enumerate(grid) if n == count]
    if len(long) > 1 and len(semantics) == len(grid):
        long = [g for g in long if semantics[g] == "arbitrary"]
    return long[0] if len(long) == 1 else None


def _named(op, a: Assignment | None, case) -> dict:
    """The handout's name of an input the call takes unchanged, its dimensions' names
    and what each dimension's size is a multiple of (the fix suggests a block that
    divides every size the handout allows); {} where the shapes do not agree."""
    if a is None or case is None or op.arg is None:
        return {}
    arrays = [i for i in a.inputs if i.kind == "array"]
    if not 0 <= op.arg < len(arrays) or a.shape(arrays[op.arg].shape, case) != tuple(op.array_shape):
        return {}
    spec = arrays[op.arg]
    rules = {d.name: d.multiple_of for d in a.dims}
    return {"name": spec.name, "dims": list(spec.shape), "multiple_of": [rules.get(d, 1) for d in spec.shape]}


_EPS = {"float64": 2.0 ** -52, "float32": 2.0 ** -23, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


def _holds_fills(reruns: list[tuple[Run, np.ndarray]], reference: np.ndarray) -> np.ndarray:
    """Elements that hold the fill itself: never written at all.

    The two reruns fill memory with the same values, the second's times a
    power of two (``fills.unwritten_fills``; exact in any float dtype): an
    element never stored is the first rerun's value times that factor in the
    second, exactly. A value the kernel computed is the same in both (it does
    not depend on the fill) or changes by anything but exactly that factor.

    Except where a fill is too large to move: ``o_ref[...] += x`` stores fill + x,
    which is the fill itself once the fill is 1e8 times x. Where the fills that do
    move show a value computed from them (read, then added to), the kernel stored
    every element, and only those fills are evidence.
    """
    (run_a, a), (run_b, b) = reruns
    factor = run_b.fill.scale / run_a.fill.scale
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        held = np.isfinite(a64) & (a64 != 0) & (b64 == a64 * factor)
        # (16 ulps: a value that moves the fill for sure, whatever the rounding.)
        moves = np.abs(reference) > 16 * np.abs(a64) * _EPS.get(str(a.dtype), 2.0 ** -23)
        derived = moves & ~held & _differs(a64, b64)
    return held & moves if derived.any() else held


def _by_fills(a: Assignment, test: Run, out: np.ndarray, reference: np.ndarray, wrong: np.ndarray,
              outs: dict[str, np.ndarray], held: np.ndarray, scan: IndexMaps | None) -> Finding | None:
    first, second = outs.values()
    changed = _differs(first, second)
    if not (changed & wrong).any():
        return None
    never = changed & held
    tol, length = a.tolerance(test.case), a.reduction_length(test.case)
    # Right where the fill reaches: a fill with which every element that changes with
    # the fill is right (what else is wrong, the fill does not explain).
    right = [name for name, o in outs.items() if not (mismatches(o, reference, tol, length) & changed).any()]
    geometry = regions.output_operand(scan, changed.shape)
    evidence = dict(fills_passing=right, fills_failing=[n for n in outs if n not in right],
                    differing=int(changed.sum()), total=int(changed.size),
                    first_differing=[int(i) for i in np.argwhere(changed)[0]],
                    wrong_unwritten=int((changed & wrong).sum()), wrong=int(wrong.sum()),
                    changed_by_block=regions.per_block(changed, geometry), own_case=True,
                    rerun_rung="generic", never_written=int(never.sum()),
                    first_never=[int(i) for i in np.argwhere(never)[0]] if never.any() else [])
    # (Whichever rung the test ran on, these reruns are the generic interpreter's.)
    reran = (f"the grader reran this case's own inputs on the generic interpreter with "
             f"{' and then '.join(outs)} in memory in place of its NaN")
    partial = _partial_mask(scan, changed.shape)
    # Output padding is dropped, so an element that holds the fill is a valid one
    # the kernel never stored, even inside a partial edge block (a masked store
    # off by one): only what changes otherwise can be the padding's doing.
    if partial is not None and not (changed & ~partial).any() and not (never & wrong).any():
        if not right:
            return _logic_error(test, out, wrong, changed, partial, evidence)
        return Finding.make("padding-dependence", test.rung,
                            "the output changes with the values in the padding of partial edge blocks: "
                            f"{reran}: {int(changed.sum())} of {changed.size} outputs change with the fill",
                            case=test.case.name, run=test.index, partial_elements=int(partial.sum()),
                            **evidence)
    return Finding.make("uninitialized-memory", test.rung,
                        f"the output depends on memory the kernel never wrote: {reran}: "
                        f"{int(changed.sum())} of {changed.size} outputs change with the fill, "
                        f"{int((changed & wrong).sum())} of the {int(wrong.sum())} wrong ones among them"
                        + (f"; {int(never.sum())} hold the fill itself: never stored" if never.any() else ""),
                        case=test.case.name, run=test.index, **evidence)


def _logic_error(test: Run, out: np.ndarray, wrong: np.ndarray, changed: np.ndarray, partial: np.ndarray,
                 evidence: dict) -> Finding | None:
    """Wrong whatever the padding holds: a logic error in the partial edge blocks,
    reported as such (which then stands for the test's ``numerics`` symptom). Its
    NaN or Inf there is the computation's (the padding carried into valid rows,
    or the logic error's own 0 / 0), not an overflow. None when NaN lies outside
    the partial blocks too (an overflow of its own: the test keeps its verdict)."""
    with np.errstate(invalid="ignore"):
        odd = wrong & ~np.isfinite(out)
    if (odd & ~partial).any() or not (wrong & changed).any():
        return None
    nan = (", so its NaN is the padding carried into valid elements by the computation, not an overflow"
           if odd.any() else ": a logic error, not a precision problem")
    return Finding.make("wrong-result", test.rung,
                        "the output is wrong whatever the padding of the partial edge blocks holds: "
                        f"on this case's own inputs, {int(changed.sum())} of {changed.size} outputs change "
                        f"with the fill and no fill gives the right answer{nan}",
                        case=test.case.name, run=test.index, problem="padding-read", **evidence)


def _whole_blocks(test: Run, out: np.ndarray, reference: np.ndarray, wrong: np.ndarray,
                  scan: IndexMaps | None) -> Finding | None:
    """NaN/Inf that fills whole output blocks, every other element right."""
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(out) & np.isfinite(reference)
    # "Every other element right" must hold of some element: all NaN is no block map.
    if not bad.any() or bad.all() or (wrong & ~bad).any():
        return None
    op = regions.output_operand(scan, out.shape)
    if op is None:
        return None
    block = [max(int(b), 1) for b in op.block_shape]
    if len(block) != out.ndim:
        return None
    blocks = 0
    for at in np.ndindex(*[-(-s // b) for s, b in zip(out.shape, block)]):
        piece = bad[tuple(slice(i * b, (i + 1) * b) for i, b in zip(at, block))]
        if piece.any() and not piece.all():
            return None
        blocks += bool(piece.any())
    return Finding.make("uninitialized-memory", test.rung,
                        f"{blocks} whole output block{'s' if blocks > 1 else ''} of this case's output "
                        "are NaN or Inf while every other element is right: blocks the kernel never writes",
                        case=test.case.name, run=test.index, problem="unwritten-blocks",
                        unwritten_elements=int(bad.sum()), total=int(bad.size),
                        changed_by_block=regions.per_block(bad, op), own_case=True)
