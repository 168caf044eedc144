"""The `estimate` verb: a TPU time estimate for a submission, on CPU.

The submission is traced by the tracer (as in grading: student code runs only
there, on shapes, never data) at the assignment's production size, or the size
and dtype asked for; the grader's child counts what the traced kernel moves and
computes (``pallas_surface.cost``); the parent models the time (``speed``).
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from ..findings import CATALOGUE
from ..grading import assignments, grade
from ..grading.run import plan as planning
from ..pallas_surface.static.facts import Schedule
from ..spec import Assignment, Case
from ..speed import grade as speed_grade, model as speed


class EstimateError(ValueError):
    """A size, dtype or chip that cannot be estimated: says the rule and the value seen."""


def parse_size(text: str) -> dict[str, int]:
    """``M=4096,K=4096`` -> {"M": 4096, "K": 4096}."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        if not value.strip().isdigit():
            raise EstimateError(f"--size must be NAME=INT pairs separated by commas; got {part!r}")
        out[name.strip()] = int(value)
    return out


def target_case(a: Assignment, size: dict[str, int] | None, dtype: str | None) -> Case:
    """The first [speed] size (else the largest case), with ``size`` and ``dtype`` applied."""
    base = max(a.cases, key=lambda c: sum(v for _k, v in c.dims))
    first = a.speed.sizes[0] if a.speed else None
    dims = dict(first.dims) if first else base.dim_map
    dtype = dtype or (first.dtype if first else base.dtype)
    for name, value in (size or {}).items():
        rule = next((r for r in a.dims if r.name == name), None)
        if rule is None:
            raise EstimateError(f"--size: {name!r} is not a dimension of {a.slug} ({[r.name for r in a.dims]})")
        if not rule.admits(value, check_max=False):
            raise EstimateError(f"--size: {name}={value} breaks the spec's rule ({rule.text})")
        dims[name] = value
    if dtype not in dict(a.tolerances):
        raise EstimateError(f"--dtype must be one of {[d for d, _t in a.tolerances]}; got {dtype!r}")
    return replace(base, name="estimate", dims=tuple(sorted(dims.items())), dtype=dtype, secret=False)


def estimated(a: Assignment, submission: Path, chip: str = "v5e", size: dict[str, int] | None = None,
        dtype: str | None = None) -> tuple[speed.Estimate | None, str, Case]:
    """The estimate, or None and why there is none (in words: the model never guesses)."""
    if chip not in speed.CHIPS:
        raise EstimateError(f"--chip must be one of {list(speed.CHIPS)}; got {chip!r}")
    case = target_case(a, size, dtype)
    report = grade.grade(a, submission, plan=planning.analysis_plan(a, case, f"speed:{chip}"))
    outcome = next(iter(report.outcomes.values()), None)
    wide = next((f for f in report.findings if f.case is None), None)
    if wide is not None:
        return None, f"{CATALOGUE[wide.id].title} [{wide.id}]: {wide.message}", case
    if outcome is None or not outcome.ok or not isinstance(outcome.facts, Schedule):
        what = f"{outcome.error_type}: {outcome.message}" if outcome and outcome.error_type else \
            (outcome.status if outcome else "nothing ran")
        return None, f"the kernel could not be traced at this size ({what[:600]})", case
    result, why = speed_grade.estimate_or_reason(outcome.facts)
    return result, why, case


def add_arguments(p) -> None:
    p.add_argument("submission", type=Path, help="a .py or .ipynb file, or a folder")
    p.add_argument("--assignment", "-a", required=True, help="assignment slug (see `list`)")
    p.add_argument("--chip", default="v5e", help="TPU chip (v4, v5e, v5p, v6e; default v5e)")
    p.add_argument("--size", help="dimension sizes, e.g. M=4096,K=4096,N=4096 (default: the spec's "
                   "production size, else its largest case)")
    p.add_argument("--dtype", help="input dtype (default: the production size's, else the case's)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args) -> int:
    assignment = assignments.find(args.assignment, args.assignments)
    try:
        size = parse_size(args.size) if args.size else None
        result, why, case = estimated(assignment, args.submission, args.chip, size, args.dtype)
    except EstimateError as e:
        args.parser.exit(1, f"pallas-autograder estimate: {e}\n")
    if result is None:
        if args.json:
            # The same status the feedback and the leaderboard carry, for scripts.
            print(json.dumps({"status": speed_grade.NO_ESTIMATE, "reason": why, "dims": dict(case.dims),
                              "dtype": case.dtype}))
        args.parser.exit(1, f"pallas-autograder estimate: no estimate: {why}\n")
    if args.json:
        print(json.dumps({**result.to_json(), "dims": dict(case.dims), "dtype": case.dtype}))
    else:
        dims = ", ".join(f"{k}={v}" for k, v in case.dims)
        print(f"{assignment.entry_function} at {dims}, {case.dtype}:")
        print(speed.text(result))
    return 0
