"""From what the child reported to findings: the error-text table and output checks.

Upstream error messages are matched by a table (kept here, next to its canary
tests in tests/test_canaries.py), never by ad-hoc string tests elsewhere.
"""
from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .compare import compare
from .findings import Finding
from .sandbox import RunOutcome, read_output
from .spec import Assignment, Case
from .submission import Located


@dataclass(frozen=True)
class ErrorRule:
    exc_type: str
    pattern: re.Pattern
    finding: str
    rule: str          # the guarantee, in plain words


ERROR_TABLE: tuple[ErrorRule, ...] = (
    ErrorRule("IndexError", re.compile(r"Out-of-bounds"), "out-of-bounds",
              "every block (and every DMA) must lie inside its array"),
    ErrorRule("RuntimeError", re.compile(r"Revisited block"), "output-block-revisit",
              "an output block may only be revisited at consecutive grid points"),
)


def classify_error(exc_type: str, message: str) -> ErrorRule | None:
    for rule in ERROR_TABLE:
        if exc_type == rule.exc_type and rule.pattern.search(message):
            return rule
    return None


def known_error(ev: dict, rung: str, case: str, frames: list[str] | None = None,
                check: str = "correctness") -> Finding | None:
    """The finding for an error event the error table recognises (an upstream
    out-of-bounds or revisit error), else None."""
    etype, message = ev.get("type", "Exception"), ev.get("message", "")
    rule = classify_error(etype, message)
    if rule is None:
        return None
    return Finding.make(rule.finding, rung, f"{etype}: {_first_line(message)}", case=case,
                        check=check, rule=rule.rule, type=etype, detail=message[:2000],
                        frames=list(frames or []), phase=ev.get("phase", "run"))


def _frames_where(frames: list[str], loc: Located) -> list[str]:
    """Point notebook frames at cells rather than at the generated module."""
    if not loc.cells:
        return frames
    out = []
    for fr in frames:
        head, nl, code = fr.partition("\n")
        m = re.match(r'File "[^"]*", line (\d+), in (.*)', head)
        out.append(f"{loc.where(int(m.group(1)))}, in {m.group(2)}{nl}{code}" if m else fr)
    return out


def from_load_error(ev: dict, loc: Located, startup_s: float, memory_mb: int) -> Finding:
    kind = ev.get("kind", "import")
    frames = _frames_where(list(ev.get("frames", [])), loc)
    f = loc.uploaded_as
    if kind == "syntax":
        return Finding.make("submission-error", "static",
                            f"syntax error at {loc.where(ev.get('line'))}: {ev.get('message')}",
                            check="submission", problem="syntax-error", where=loc.where(ev.get("line")),
                            line=ev.get("line"), text="", detail=ev.get("message", ""))
    if kind == "missing-function":
        return Finding.make("submission-error", "static",
                            f"{f} does not define the function the assignment asks for",
                            check="submission", problem="function-missing", file=f,
                            found=list(ev.get("found", [])))
    if kind == "arity":
        return Finding.make("submission-error", "static",
                            f"the function in {f} cannot be called with the assignment's arguments",
                            check="submission", problem="wrong-arity", file=f,
                            signature=ev.get("signature", ""), detail=ev.get("message", ""))
    if kind == "exit":
        return Finding.make("submission-error", "static", ev.get("message", "exited"),
                            check="submission", problem="exit-at-import", file=f)
    if kind == "timeout":
        return Finding.make("submission-error", "static",
                            f"importing {f} took longer than {startup_s:g} s",
                            check="submission", problem="import-timeout", file=f, limit_s=startup_s)
    if kind == "memory":
        return Finding.make("submission-error", "static",
                            f"importing {f} used more than {memory_mb} MB of memory",
                            check="submission", problem="memory-limit", file=f, memory_mb=memory_mb)
    if kind == "disk":
        return Finding.make("submission-error", "static",
                            f"importing {f} wrote more than {ev.get('disk_mb')} MB of files",
                            check="submission", problem="disk-limit", file=f, disk_mb=ev.get("disk_mb"))
    if kind == "died":
        return Finding.make("submission-error", "static",
                            f"the process importing {f} ended abruptly ({_exit_text(ev.get('returncode'))})",
                            check="submission", problem="killed", file=f,
                            exit=_exit_text(ev.get("returncode")))
    return Finding.make("submission-error", "static",
                        f"importing {f} raised {ev.get('type')}: {_first_line(ev.get('message', ''))}",
                        check="submission", problem="import-error", file=f,
                        type=ev.get("type", ""), detail=str(ev.get("message", ""))[:2000],
                        frames=frames)


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


def from_outcome(assignment: Assignment, case: Case, rung: str, outcome: RunOutcome,
                 reference: np.ndarray, loc: Located, out_dir: Path) -> Finding | None:
    """The finding for one run, or None when it passed."""
    ev, name = outcome.event, case.name

    def sub(problem: str, message: str, **evidence) -> Finding:
        return Finding.make("submission-error", rung, message, case=name, problem=problem, **evidence)

    if outcome.status == "timeout":
        limit = ev.get("limit_s", assignment.limits.case_s)
        if ev.get("not_run"):
            return sub("timeout", f"not run: earlier runs already exceeded the {limit:g} s time limit",
                       limit_s=limit, not_run=True)
        return sub("timeout", f"did not finish within {limit:g} s (an infinite loop, or a DMA "
                   "wait that never completes)", limit_s=limit, not_run=False)
    if outcome.status == "memory":
        return sub("memory-limit", f"used more than {assignment.limits.memory_mb} MB of memory",
                   memory_mb=assignment.limits.memory_mb)
    if outcome.status == "disk":
        return sub("disk-limit", f"wrote more than {ev.get('disk_mb')} MB of files", disk_mb=ev.get("disk_mb"))
    if outcome.status == "died":
        text = _exit_text(ev.get("returncode"))
        return sub("killed", f"the process running the kernel ended abruptly ({text})", exit=text,
                   stderr_tail=ev.get("stderr_tail", "")[-800:])
    if outcome.status == "skipped":
        return sub("not-run", "not run: the grading time budget was spent on earlier runs")
    if outcome.status == "load-error":
        return None  # reported once, as the submission-wide finding
    if outcome.status == "error":
        etype, message = ev.get("type", "Exception"), ev.get("message", "")
        frames = _frames_where(list(ev.get("frames", [])), loc)
        known = known_error(ev, rung, name, frames)
        if known is not None:
            return known
        phase = "tracing" if ev.get("phase") == "trace" else "running"
        return sub("exception", f"raised {etype} while {phase}: {_first_line(message)}",
                   type=etype, detail=message[:2000], frames=frames, phase=ev.get("phase", "run"))
    if outcome.status == "bad-type":
        return sub("wrong-type", f"returned {ev.get('type')}; expected one array",
                   got=ev.get("type"))
    # status ok: check what came back, then the numbers.
    expected_shape = list(assignment.shape(assignment.output.shape, case))
    expected_dtype = assignment.dtype_of(assignment.output.dtype, case)
    if list(ev.get("shape", [])) != expected_shape:
        return sub("wrong-shape", f"returned shape {tuple(ev.get('shape', []))}; expected "
                   f"{tuple(expected_shape)}", got=ev.get("shape"), expected=expected_shape)
    if ev.get("dtype") != expected_dtype:
        return sub("wrong-dtype", f"returned dtype {ev.get('dtype')}; expected {expected_dtype}",
                   got=ev.get("dtype"), expected=expected_dtype)
    out = read_output(outcome, out_dir)
    if isinstance(out, str):
        return sub("wrong-type", out, got=out)
    if list(out.shape) != expected_shape:
        return sub("wrong-shape", f"returned shape {out.shape}; expected {tuple(expected_shape)}",
                   got=list(out.shape), expected=expected_shape)
    c = compare(out, reference, assignment.tolerance(case.dtype), assignment.reduction_length(case),
                assignment.numerics_bound)
    if c.ok:
        return None
    if c.verdict == "numerics":
        msg = (f"{c.nonfinite} of {c.total} outputs are NaN or Inf where the reference is finite"
               if c.nonfinite else
               f"{c.mismatches} of {c.total} outputs are off by up to {c.max_abs_error:.3g} "
               f"({c.relative_to_output:.2%} of the output's magnitude): a precision problem")
        return Finding.make("numerics", rung, msg, case=name, **c.evidence())
    if c.nonfinite:
        msg = (f"{c.mismatches} of {c.total} outputs are wrong: {c.nonfinite} are NaN or Inf, and "
               f"finite ones are off by up to {c.finite_relative:.0%} of the output's magnitude")
    else:
        msg = f"{c.mismatches} of {c.total} outputs are wrong (max error {c.max_abs_error:.3g})"
    return Finding.make("wrong-result", rung, msg, case=name, **c.evidence())
