"""A visible case's wrong result, with where its fault is: evidence for the fix, never
a charge (losing any of it costs the student nothing).

From the case's own run: the input block a wrong output block needed and its steps
never read (``judge.reads``), a number made from the wrong size (``compare.constant_fit``),
the instructor's declared mistake it computes (``compare.mistake_fit``) and rows that are
the right rows times one number (``compare.scaled_rows``). From its altered reruns: the
axis the kernel mixes (``compare.mixed_axes``) and a right answer when every block of the
reduction is alike (what carries between steps).
"""
from __future__ import annotations

from ..findings import Finding
from ..isolation.outcome import Outcome
from ..spec import Assignment
from .identity import sources
from .judge import reads
from .judge.compare import compare, constant_fit, mismatches, mistake_fit, mixed_axes, scaled_rows
from .run import draws, plan as planning
from .run.draws import DrawStore
from .run.plan import Plan, Run


def with_reads(a: Assignment, run: Run, f: Finding, outcome: Outcome, store: DrawStore, scan,
               cache: dict[str, dict], kernel: sources.KernelSource | None) -> Finding:
    """A visible case's wrong result, with the evidence its own run gives (``_of_case``,
    worked out once per case), the input the kernel computes without, and rows that are
    the right rows times one number (``compare.scaled_rows``: its scale is the fault)."""
    if outcome.output is None:
        return f        # (a failed pl.debug_check: no output to place)
    if run.case.name not in cache:
        cache[run.case.name] = _of_case(a, run, outcome, store, scan, kernel)
    f = f.with_facts(**cache[run.case.name])
    f = f.with_facts(unused_input=kernel.unused_inputs[0][0]) if kernel is not None and kernel.unused_inputs else f
    try:
        scaled = scaled_rows(outcome.output, store[run.draw], a.tolerance(run.case), a.reduction_length(run.case))
    except Exception:   # noqa: BLE001 (evidence for a fix, never a charge)
        scaled = None
    return f.with_facts(scaled_rows=scaled) if scaled is not None else f


def _of_case(a: Assignment, run: Run, outcome: Outcome, store: DrawStore, scan,
             kernel: sources.KernelSource | None) -> dict:
    """A wrong result's facts from its case's run: the input block a wrong output block
    needed and its steps never read (``judge.reads``), a number made from the wrong size
    (``compare.constant_fit``) and the instructor's declared mistake it computes
    (``compare.mistake_fit``). Each is lost alone when it fails: it costs nothing."""
    tol, length, found = a.tolerance(run.case), a.reduction_length(run.case), {}
    try:
        ref = store[run.draw]
        args, arrays = store.arguments(run.draw)
    except Exception:   # noqa: BLE001 (evidence for a fix, never a charge)
        return found
    names = [a.inputs[i].name for i in arrays]
    # A number made from the wrong size of the case (1/√S for 1/√D): the fault's line.
    numbers = list(dict.fromkeys(c for c, _p in kernel.constants)) if kernel is not None else []
    steps = {"constant": lambda: _axis_of(a, constant_fit(outcome.output, store.reference_fn, args, arrays, tol,
                                                          length, numbers, run.case.dim_map, names))
             if numbers else None,
             "mistake": lambda: mistake_fit(outcome.output, store.mistakes(), args, _blocks(scan, names), tol,
                                            length, ref),
             "unread_needed": lambda: _named(reads.evidence(scan, mismatches(outcome.output, ref, tol, length),
                                                            args, arrays, store.reference_fn, ref), names)}
    for key, step in steps.items():
        try:
            value = step()
        except Exception:   # noqa: BLE001 (evidence for a fix, never a charge: losing it costs nothing)
            value = None
        if value is not None:
            found[key] = value
    return found


def _axis_of(a: Assignment, found: dict | None) -> dict | None:
    """A number's fact with where its size is an input's axis (the first input whose shape
    names it: ``x.shape[axis]`` reads it), so the fix can find the line that reads it."""
    spec = next((i for i in a.inputs if found is not None and found.get("dim") in i.shape), None)
    return {**found, "axis": spec.shape.index(found["dim"]), "rank": len(spec.shape)} if spec is not None else found


def _named(found: dict | None, names: list[str]) -> dict | None:
    """The reads evidence with the handout's names of the inputs, not the kernel's operands."""
    if found is not None:
        found["name"] = names[found["arg"]]
        found["also"] = [names[j] for j in found.pop("also_args")]
    return found


def _blocks(scan, names: list[str]) -> dict[str, tuple[int, ...]]:
    """Each input's block shape in the kernel's one pallas_call, by the spec's input name
    (a declared mistake that depends on the tiling reads it); {} for several calls."""
    calls = getattr(scan, "calls", ())
    if len(calls) != 1:
        return {}
    return {names[op.arg]: tuple(op.block_shape) for op in calls[0].operands
            if not op.is_output and op.arg is not None and 0 <= op.arg < len(names)}


def with_altered(plan: Plan, run: Run, f: Finding, outcome: Outcome, outcomes, store: DrawStore) -> Finding:
    """A visible case's wrong result, with what its altered reruns showed (where the fault
    is, not a charge): the outputs that moved when one input element changed where the
    reference's stayed put (``compare.mixed_axes``: the axis the kernel mixes), and a
    right answer when every block of the reduction is alike (what carries between steps)."""
    # (The nudged rerun against the generic run of the same inputs, whichever rung the test ran on.)
    runs = {kind: r for kind in ("", planning.NUDGED, planning.STEADY)
            if (r := planning.altered_run(plan, run, kind)) is not None
            and (o := outcomes.get(r)) is not None and o.output is not None}
    reruns = {kind: outcomes[r].output for kind, r in runs.items()}
    try:
        if "" in reruns and planning.NUDGED in reruns:
            mixed = mixed_axes(reruns[""], reruns[planning.NUDGED], store[run.draw], store[runs[planning.NUDGED].draw])
            which = store.nudged_input(runs[planning.NUDGED].draw)
            if mixed is not None and which is not None:
                f = f.with_facts(mixed={**mixed, "input": which[0], "at": which[1]})
        if planning.STEADY in reruns:
            a = plan.assignment
            right = compare(reruns[planning.STEADY], store[runs[planning.STEADY].draw], a.tolerance(run.case),
                            a.reduction_length(run.case), a.numerics_bound).ok
            dim, period = draws.steady_period(a, run.case)
            if right:
                f = f.with_facts(steady={"dim": dim, "period": period, "size": run.case.dim_map[dim]})
    except Exception:   # noqa: BLE001 (evidence for a fix, never a charge: losing it costs nothing)
        return f
    return f
