"""The instructor's checks' failed subTests, each said once, and tied to the
grading: a failure word for word the same as an earlier one (the other rung's
run of one bug) names that one, and a failure on the kernel of a graded test
whose points one of the grader's problems took is likely another view of that
problem. Pure logic: it never formats and never changes a score (the checks'
points stay the instructor's rubric).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..run.custom_checks import SubFailure
from .problems import Problem, key_of
from .scoring import TestResult


@dataclass(frozen=True)
class Said:
    label: str                          # "subTest (rung='generic') failed"
    message: str | None                 # None: word for word an earlier failure's
    same_as: str = ""                   # that failure's test number (``same_as_test``), else its label
    same_as_test: bool = False
    first: str = ""                     # the earlier failure's own label ("subTest (rung='generic') failed")
    problem: Problem | None = None      # the grader's problem charged on the test whose kernel it ran
    test: str = ""                      # that test's number


def said_once(failures: tuple[SubFailure, ...], tests: tuple[TestResult, ...],
              problems: tuple[Problem, ...]) -> tuple[Said, ...]:
    keyed = {p.key: p for p in problems}
    out: list[Said] = []
    first: dict[str, tuple[str, bool, str]] = {}
    for f in failures:
        test = _test_of(f, tests)
        if f.message in first:
            same, is_test, label = first[f.message]
            out.append(Said(f.label, None, same, is_test, label.removesuffix(" failed")))
            continue
        first[f.message] = (test.number, True, f.label) if test is not None else (f.label, False, f.label)
        p = keyed.get(key_of(test.finding)) if test is not None and test.charges else None
        out.append(Said(f.label, without_arrays(f.message).strip("\n"), problem=p, test=test.number if p else ""))
    return tuple(out)


# numpy.testing's printout of both whole arrays ("ACTUAL: array([[...", " x: array(..."):
# its summary above (mismatches, first indices, largest differences) says what they do.
_ARRAY_HEAD = re.compile(r"^(\s*)(ACTUAL|DESIRED|x|y): array\(")


def without_arrays(message: str) -> str:
    """An assertion's message without numpy's printout of the whole arrays it compared
    (each head line and the lines it continues on), saying that they were left out."""
    out, skip, left = [], None, False
    for line in message.split("\n"):
        if skip is not None and line.strip() and len(line) - len(line.lstrip()) > skip:
            continue
        head = _ARRAY_HEAD.match(line)
        skip = len(head[1]) if head else None
        left = left or head is not None
        if head is None:
            out.append(line)
    if left:
        out.append("(the two whole arrays numpy printed are left out)")
    return "\n".join(out)


def _test_of(f: SubFailure, tests: tuple[TestResult, ...]) -> TestResult | None:
    """The graded test whose kernel the failed subTest last called (its case's
    signature, its rung): one whose points a finding took, where several share it."""
    if f.signature is None or f.rung is None:
        return None
    same = [t for t in tests if t.probe is None and t.rung == f.rung and t.run is not None
            and t.run.draw.signature == f.signature]
    return next((t for t in same if t.charges), same[0] if same else None)
