"""From what the child reported to findings: the error-text table and output checks.

Upstream error messages are matched by a table built from
``pallas_surface.release`` (one place per JAX release, with canary tests in
tests/test_canaries.py), never by ad-hoc string tests elsewhere.
"""
from __future__ import annotations

import re
import signal
from dataclasses import dataclass, replace

import numpy as np

from ...findings import Finding
from ...isolation.outcome import LoadError, Outcome
from ...pallas_surface import release
from ...pallas_surface.static.facts import IndexMaps
from ...spec import Assignment
from ..run.plan import Run
from ..run.submission import Located
from . import regions
from .compare import compare, mismatches
from .figures import num, of_output


@dataclass(frozen=True)
class ErrorRule:
    exc_type: str
    pattern: re.Pattern
    finding: str
    rule: str          # the guarantee, in plain words


ERROR_TABLE: tuple[ErrorRule, ...] = tuple(ErrorRule(*row) for row in release.ERROR_RULES)


def classify_error(exc_type: str, message: str) -> ErrorRule | None:
    for rule in ERROR_TABLE:
        if exc_type == rule.exc_type and rule.pattern.search(message):
            return rule
    return None


def known_error(outcome: Outcome, rung: str, case: str, frames: list[str] | None = None,
                check: str = "correctness", run: int | None = None) -> Finding | None:
    """The finding for an error the error table recognises (an upstream
    out-of-bounds or revisit error), else None."""
    if outcome.status != "error":
        return None
    rule = classify_error(outcome.error_type, outcome.message)
    if rule is None:
        return None
    where = {}
    if rule.finding == "out-of-bounds":
        sliced = oob_slice(outcome.message)
        where = {"slice": sliced} if sliced is not None else {"window": oob_window(outcome.message)}
    return Finding.make(rule.finding, rung, f"{outcome.error_type}: {_first_line(outcome.message)}",
                        case=case, check=check, run=run, rule=rule.rule, type=outcome.error_type,
                        detail=outcome.message[:2000], frames=list(frames or outcome.frames),
                        phase=outcome.phase or "run", **where)


def failed_check(outcome: Outcome, rung: str, case: str, check: str = "correctness",
                 run: int | None = None) -> Finding | None:
    """A check of the student's own (pl.debug_check) that failed while the kernel
    ran: their invariant does not hold, a logic error in their words, at their line
    (the rebuild wrote both into the error, ``release.CHECK_FAILED``)."""
    m = release.CHECK_FAILED.match(outcome.message) if outcome.status == "error" and \
        outcome.error_type == "JaxRuntimeError" else None
    if m is None:
        return None
    text, where = m["message"][:500], m["where"]
    return Finding.make("wrong-result", rung, f"your check at {where} failed: {_first_line(text)}", case=case,
                        check=check, run=run, problem="failed-check", said=text, where=where,
                        phase=outcome.phase or "run")


def oob_slice(message: str) -> dict | None:
    """A ref slice past its array's end, refused while tracing (``release.OOB_SLICE``):
    its start, the dimension it indexes (and its size and stride when it starts
    inside and runs out), else None."""
    m = release.OOB_SLICE.search(message)
    if m is None:
        return None
    return {k: int(v) for k, v in m.groupdict().items() if v is not None}


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.replace(" ", "").split(",") if v]


def _buffer_name(key: str) -> str:
    """'0 0 hbm 100' (device, core, memory space, buffer id) as 'HBM buffer 100'."""
    parts = key.split()
    return f"{parts[2].upper()} buffer {parts[3]}" if len(parts) == 4 else f"buffer ({key})"


def oob_window(message: str) -> dict | None:
    """Where TPU interpret mode's out-of-bounds access went (the error's own
    text, by release's patterns): the element window, the array's shape, the
    block and grid point (a BlockSpec) or the buffer (a DMA), and the window the
    generic interpreter reads instead (it clamps the start). None when the text
    does not say."""
    w = release.OOB_WINDOW.search(message)
    if w is None:
        return None
    window = [[int(lo), int(hi)] for lo, hi in release.SLICE.findall(w["slices"])]
    shape = _ints(w["shape"])
    if len(window) != len(shape) or any(hi <= lo for lo, hi in window):
        return None
    out = {"element_range": window, "array_shape": shape, "read_instead": regions.clamped(window, shape),
           "access": {"reading": "read", "writing": "write", "swapping": "swap"}[w["access"]]}
    block = release.OOB_BLOCK.search(message)
    if block is not None and len(_ints(block["block"])) == len(shape):
        out.update(block_index=_ints(block["block"]), grid_point=_ints(block["point"]),
                   operand=f'{block["kind"]} "{block["name"]}"')
    else:
        buffer = release.OOB_BUFFER.search(message)
        out["operand"] = _buffer_name(buffer["buffer"]) if buffer else "a buffer"
    return out


REFUSED = "ProgramRefused"     # the traced program is not one the grader rebuilds


def refused(outcome: Outcome, rung: str, case: str, check: str = "correctness",
            run: int | None = None) -> Finding:
    """A traced program the grader will not run: a host callback is work done in
    Python, not in a kernel; anything else is a construct the grader does not
    support (the message names it)."""
    if outcome.message.startswith("host callback"):
        return Finding.make("not-a-kernel", rung, f"the traced function calls back into Python: "
                            f"{outcome.message}", case=case, check=check, run=run, problem="host-callback",
                            detail=outcome.message[:500])
    return Finding.make("submission-error", rung, f"the grader cannot run this traced program: "
                        f"{outcome.message}", case=case, check=check, run=run, problem="unsupported",
                        detail=outcome.message[:500])


def _frames_where(frames, loc: Located) -> list[str]:
    """Point notebook frames at cells rather than at the generated module."""
    if not loc.cells:
        return list(frames)
    out = []
    for fr in frames:
        head, nl, code = fr.partition("\n")
        m = re.match(r'File "[^"]*", line (\d+), in (.*)', head)
        out.append(f"{loc.where(int(m.group(1)))}, in {m.group(2)}{nl}{code}" if m else fr)
    return out


def wanted_call(assignment: Assignment) -> str:
    """The call the grader makes, as the handout writes it: ``add(x, y)``."""
    return f"{assignment.entry_function}({', '.join(i.name for i in assignment.inputs)})"


def starter_untouched(findings: list[Finding], assignment: Assignment, loc: Located) -> Finding | None:
    """One submission-wide finding for the shipped starter: every correctness run
    raised NotImplementedError while tracing (said once, not once per test)."""
    runs = [f for f in findings if f.check == "correctness" and f.case is not None]
    if not runs or not all(f.problem == "exception" and f.facts().get("type") == "NotImplementedError"
                           for f in runs):
        return None
    return Finding.make("submission-error", "static", f"{wanted_call(assignment)} in {loc.uploaded_as} "
                        "still raises NotImplementedError: the starter has not been filled in yet",
                        check="submission", problem="not-implemented", file=loc.uploaded_as,
                        wanted=wanted_call(assignment))


def from_load_error(ev: LoadError, loc: Located, assignment: Assignment) -> Finding:
    """The submission-wide finding for a submission that could not be imported."""
    f = loc.uploaded_as
    memory_mb = assignment.limits.memory_mb

    def sub(problem: str, message: str, **evidence) -> Finding:
        return Finding.make("submission-error", "static", message, check="submission",
                            problem=problem, **evidence)

    if ev.kind == "syntax":
        return sub("syntax-error", f"syntax error at {loc.where(ev.line)}: {ev.message}",
                   where=loc.where(ev.line), line=ev.line, text="", detail=ev.message)
    if ev.kind == "missing-function":
        return sub("function-missing", f"{f} does not define {wanted_call(assignment)}, the function "
                   "the assignment asks for", file=f, found=list(ev.found), wanted=wanted_call(assignment))
    if ev.kind == "arity":
        return sub("wrong-arity", f"the function in {f} cannot be called with the assignment's "
                   "arguments", file=f, signature=ev.signature, detail=ev.message)
    if ev.kind == "exit":
        return sub("exit-at-import", ev.message or "exited", file=f)
    if ev.kind == "timeout":
        return sub("import-timeout", f"importing {f} took longer than {ev.limit_s:g} s", file=f,
                   limit_s=ev.limit_s)
    if ev.kind == "memory":
        return sub("memory-limit", f"importing {f} used more than {memory_mb} MB of memory", file=f,
                   memory_mb=memory_mb)
    if ev.kind == "disk":
        return sub("disk-limit", f"importing {f} wrote more than {ev.disk_mb} MB of files", file=f,
                   disk_mb=ev.disk_mb)
    if ev.kind == "died":
        return sub("killed", f"the process importing {f} ended abruptly ({_exit_text(ev.returncode)})",
                   file=f, exit=_exit_text(ev.returncode))
    return sub("import-error", f"importing {f} raised {ev.error_type}: {_first_line(ev.message)}",
               file=f, type=ev.error_type, detail=ev.message[:2000],
               frames=_frames_where(ev.frames, loc))


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:300]


def _exit_text(code: int | None) -> str:
    if code is None:
        return "unknown exit"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _not_finished(assignment: Assignment, run: Run, outcome: Outcome, sub) -> Finding | None:
    """The finding for a run that did not finish (or was not started)."""
    o = outcome
    if o.status == "timeout":
        limit = o.limit_s if o.limit_s is not None else run.limit_s
        if o.not_run:
            return sub("timeout", f"not run: {o.reason or 'earlier runs already hung'} "
                       f"(limit {limit:g} s)", limit_s=limit, not_run=True, reason=o.reason,
                       phase=o.phase)
        where = "while tracing (the Python around the kernel)" if o.phase == "trace" else \
            "while the kernel ran (a loop, or a DMA wait that never completes)"
        at = {"at": list(o.at)} if o.at is not None else {}
        return sub("timeout", f"did not finish within {limit:g} s, {where}", limit_s=limit,
                   not_run=False, phase=o.phase, **at)
    if o.status == "memory":
        return sub("memory-limit", f"used more than {assignment.limits.memory_mb} MB of memory",
                   memory_mb=assignment.limits.memory_mb)
    if o.status == "disk":
        return sub("disk-limit", f"wrote more than {o.disk_mb} MB of files", disk_mb=o.disk_mb)
    if o.status == "died":
        text = _exit_text(o.returncode)
        return sub("killed", f"the process running the kernel ended abruptly ({text})", exit=text,
                   stderr_tail=o.stderr_tail[-800:])
    if o.status == "skipped":
        return sub("not-run", "not run: the grading time budget was spent on earlier runs")
    return None


def from_outcome(assignment: Assignment, run: Run, outcome: Outcome, reference: np.ndarray,
                 loc: Located, scan: IndexMaps | None = None) -> Finding | None:
    """The finding for one correctness run, or None when it passed. ``scan``: the
    index-map scan of the run's case, when one ran (it places wrong elements in blocks)."""
    case, rung = run.case, run.rung

    def sub(problem: str, message: str, **evidence) -> Finding:
        return Finding.make("submission-error", rung, message, case=case.name, run=run.index,
                            problem=problem, **evidence)

    if outcome.status == "load-error":
        return None  # reported once, as the submission-wide finding
    if outcome.status not in ("ok", "error", "bad-type"):
        return _not_finished(assignment, run, outcome, sub)
    if outcome.status == "error" and outcome.error_type == REFUSED:
        return refused(outcome, rung, case.name, run=run.index)
    if outcome.status == "error":
        frames = _frames_where(outcome.frames, loc)
        failed = failed_check(outcome, rung, case.name, run=run.index)
        if failed is not None:
            return failed
        known = known_error(outcome, rung, case.name, frames, run=run.index)
        if known is not None:
            return known
        phase = "tracing" if outcome.phase == "trace" else "running"
        return sub("exception", f"raised {outcome.error_type} while {phase}: "
                   f"{_first_line(outcome.message)}", type=outcome.error_type,
                   detail=outcome.message[:2000], frames=frames, phase=outcome.phase or "run")
    if outcome.status == "bad-type":
        return sub("wrong-type", f"returned {outcome.returned}; expected one array", got=outcome.returned)
    return _judge_output(assignment, run, outcome, reference, sub, scan)


def _judge_output(assignment: Assignment, run: Run, outcome: Outcome, reference: np.ndarray,
                  sub, scan: IndexMaps | None = None) -> Finding | None:
    case = run.case
    expected_shape = list(assignment.output_shape(case))
    expected_dtype = assignment.dtype_of(assignment.output.dtype, case)
    if list(outcome.shape) != expected_shape:
        return sub("wrong-shape", f"returned shape {tuple(outcome.shape)}; expected "
                   f"{tuple(expected_shape)}", got=list(outcome.shape), expected=expected_shape)
    if outcome.dtype != expected_dtype:
        return sub("wrong-dtype", f"returned dtype {outcome.dtype}; expected {expected_dtype}",
                   got=outcome.dtype, expected=expected_dtype)
    if outcome.output is None:
        return sub("wrong-type", outcome.output_problem, got=outcome.output_problem)
    c = compare(outcome.output, reference, assignment.tolerance(case),
                assignment.reduction_length(case), assignment.numerics_bound)
    if c.ok:
        return None
    wrong = mismatches(outcome.output, reference, assignment.tolerance(case), assignment.reduction_length(case))
    where = dict(case=case.name, run=run.index,
                 wrong_by_block=regions.per_block(wrong, regions.output_operand(scan, wrong.shape)))
    if c.verdict == "numerics":
        msg = (f"{c.nonfinite} of {c.total} outputs are NaN or Inf where the reference is finite"
               if c.nonfinite else
               f"{c.mismatches} of {c.total} outputs are off by up to {num(c.max_abs_error)} "
               f"({of_output(c.relative_to_output)}): a precision problem")
        return Finding.make("numerics", run.rung, msg, **where, **c.evidence())
    if c.nonfinite:
        msg = (f"{c.mismatches} of {c.total} outputs are wrong: {c.nonfinite} are NaN or Inf, and "
               f"finite ones are off by up to {of_output(c.finite_relative)}")
    else:
        msg = f"{c.mismatches} of {c.total} outputs are wrong (max error {num(c.max_abs_error)})"
    return Finding.make("wrong-result", run.rung, msg, **where, **c.evidence())


def input_scales(assignment: Assignment, case) -> dict[str, float]:
    """Each array input's scale on ``case`` (the case's own, else the input's)."""
    own = dict(case.scale)
    return {i.name: float(own.get(i.name, i.scale)) for i in assignment.inputs if i.kind == "array"}


def scaled_up(assignment: Assignment, case, other) -> bool:
    """``case`` draws no input smaller than ``other`` does and at least one larger:
    the same data, only bigger."""
    mine, theirs = input_scales(assignment, case), input_scales(assignment, other)
    return all(mine[k] >= theirs[k] for k in mine) and any(mine[k] > theirs[k] for k in mine)


def overflows(plan, findings: list[Finding]) -> list[Finding]:
    """A correctness test's NaN or Inf is an overflow, a numerics problem, when
    the kernel gets every case of the same dtype with smaller inputs right on
    the same rung (and there is one): the comparison alone reads NaN beside
    far-off finite outputs as a logic error, but the same kernel on smaller
    values is right, so the values' size broke it (exp of a large logit, a sum
    that grows past the dtype's range). Memory the kernel never wrote, or padding
    carried into valid rows, has its own finding on the test and is left alone."""
    a = plan.assignment
    failing = {(f.case, f.rung) for f in findings if f.check == "correctness" and f.case is not None}
    out = []
    for f in findings:
        alone = sum(1 for g in findings if g.check == "correctness" and (g.case, g.rung) == (f.case, f.rung)) == 1
        facts = f.facts() if f.id == "wrong-result" and f.check == "correctness" and alone else {}
        if not facts.get("nonfinite") or f.problem or facts.get("padding_read"):
            out.append(f)
            continue
        case = a.case(f.case)
        smaller = [c for c in plan.cases if c.dtype == case.dtype and plan.test_run(c.name, f.rung) is not None
                   and scaled_up(a, case, c)]
        right = [c for c in smaller if (c.name, f.rung) not in failing]
        if not right or len(right) < len(smaller):      # every smaller case right, and one at least
            out.append(f)
            continue
        base, scales = right[0], input_scales(a, case)
        grown = ", ".join(f"{k} scaled by {v:g}" for k, v in scales.items() if v > input_scales(a, base)[k])
        named = f"case {base.name}" if base.visible else "a case with smaller inputs"
        message = (f"{facts['nonfinite']} of {facts['total']} outputs are NaN or Inf where the reference is "
                   f"finite ({facts['mismatches']} wrong in all): an intermediate overflows at this case's "
                   f"input scale ({grown}); the same kernel is right on {named}, of the same dtype with "
                   "smaller inputs")
        out.append(replace(f.with_facts(overflow=True, scaled=grown, right_on=base.name if base.visible else None),
                           id="numerics", message=message))
    return out
