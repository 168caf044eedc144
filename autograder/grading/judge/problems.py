"""The problems a report opens with: one per distinct root cause, in the
order the student meets them, with the tests each cost and where it is
explained. Pure logic on scored tests; never formats, never imports JAX.

A root cause is a finding ID (a submission error also by its kind: a timeout
and a syntax error are different problems). One whose tests all kept their
points (seen only beside another root cause, or charged once elsewhere) is
still listed, costing nothing: fixing it must change what the student sees
even when the points do not move.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...findings import CATALOGUE, PRECEDENCE, Finding
from .scoring import TestResult, blocking_test, same_bug, symptom_of


@dataclass(frozen=True)
class Problem:
    key: tuple[str, str]            # (finding ID, submission-error kind or "")
    number: int                     # 1-based, as listed
    finding: Finding                # the instance shown where it is explained
    cost: tuple[str, ...]           # tests whose points it took
    points: float                   # points it took, in all
    seen: tuple[str, ...]           # every test it appears on (charged or not)
    explained_in: str               # the test that explains it in full

    @property
    def id(self) -> str:
        return self.key[0]

    @property
    def title(self) -> str:
        return CATALOGUE[self.id].title


def key_of(f: Finding) -> tuple[str, str]:
    """The problem a finding belongs to: its ID (a submission error's also by kind), or
    the ID of the bug the grader tied it to (one length, two symptoms on two cases)."""
    if f.id == "submission-error":
        return (f.id, f.problem or "")
    return (f.same_bug_as or f.id, "")


def ties(tests: list[TestResult]) -> dict[Finding, Finding]:
    """Findings the grader ties to another's bug -> that other (the root cause it
    was charged as): a check that kept its points because its finding is another
    view of a bug charged elsewhere ("the same bug as problem 1") said so of that
    very finding, wherever else it appears."""
    numbered = {t.number: t for t in tests}
    out: dict[Finding, Finding] = {}
    for t in tests:
        charged = numbered.get(t.charged_in) if t.probe is not None and t.charged_in else None
        if charged is not None and charged.finding is not None and t.finding is not None \
                and key_of(t.finding) != key_of(charged.finding) and not _benign(t.finding):
            out[t.finding] = charged.finding
    return out


def tied_to(primary: Finding | None, f: Finding, tied: dict[Finding, Finding]) -> bool:
    """``f`` beside ``primary`` on a test is ``primary``'s own bug seen another way:
    a symptom, a same-bug view, the same ID from another probe case, or a finding
    the grader tied to it."""
    if primary is None:
        return False
    return (symptom_of(primary, f) or same_bug(primary, f) or f.id == primary.id
            or (f in tied and key_of(tied[f]) == key_of(primary)))


def _appearances(tests: list[TestResult], tied: dict[Finding, Finding]) -> list[tuple[TestResult, Finding, bool]]:
    """(test, finding, primary?) for every finding on every test, in test order;
    symptoms and other views of a test's root cause are that root cause, not
    problems of their own."""
    out = []
    for t in tests:
        if t.finding is not None:
            out.append((t, t.finding, True))
        out += [(t, f, False) for f in t.others if not seen_as_main(t, f, tied) and f not in tied]
    return out


def seen_as_main(t: TestResult, f: Finding, tied: dict[Finding, Finding]) -> bool:
    """``f`` beside test ``t``'s root cause is that root cause seen another way (one note
    line, never a problem of its own)."""
    return tied_to(t.finding, f, tied) or one_grid(t, f)


def one_grid(t: TestResult, f: Finding) -> bool:
    """Memory never written beside blocks past the end, on a case whose index-map scan
    found output blocks the grid never visits: one grid that does not fit its arrays
    there (its axes swapped, a length taken from the wrong dimension), one fix."""
    main = t.finding
    if main is None or main.id != "out-of-bounds" or f.id != "uninitialized-memory" or f.case != main.case:
        return False
    return any(o.problem == "unwritten-blocks" and o.case == main.case for o in t.others)


def _own(f: Finding, k: tuple[str, str]) -> bool:
    """``f`` is the problem's own kind (not a symptom the grader tied to it): a problem
    is explained where its own finding is seen, where there is one."""
    return f.id == k[0]


def _benign(f: Finding) -> bool:
    # A probe that had nothing to examine is not a problem of its own: the
    # missing kernel is (reported by the structure check).
    return f.problem in ("nothing-to-check", "check-not-run")


def _shown_by(t: TestResult, f: Finding) -> bool:
    """``f`` is what ``t``'s own run showed: its case's (a probe check's: its own
    finding), not another case's finding that only explains it."""
    return f.case is None or (f is t.finding if t.probe is not None else f.case == t.case.name)


def summarize(tests: list[TestResult], shows) -> tuple[Problem, ...]:
    """Every distinct root cause across ``tests``. ``shows(finding)`` says
    whether a finding's evidence may be shown: the explanation goes to the
    first test where the student meets the problem with its evidence shown (as
    the test's own finding, or beside it where that test's case showed it: an
    "Also on this test" explanation belongs where the bug was seen), else to the
    first test where it appears."""
    order: list[tuple[str, str]] = []
    first: dict = {}
    first_shown: dict = {}
    cost: dict = {}
    seen: dict = {}
    numbered = {t.number: t for t in tests}
    for t, f, is_primary in _appearances(tests, ties(tests)):
        blocker = blocking_test(f, tests) if is_primary and t.charges else None
        if blocker is not None and key_of(blocker.finding) in first:
            # A check the case's failing test kept from running lost its points to
            # that test's problem: the list says so, so its costs add up to the score.
            k = key_of(blocker.finding)
            seen[k].append(t.number)
            cost.setdefault(k, []).append(t)
            continue
        if _benign(f):
            continue
        k = key_of(f)
        charged = numbered.get(t.charged_in) if is_primary and t.charged_in else None
        if charged is not None and charged.finding is not None:
            # Kept its points because the same bug was charged there (under another ID
            # maybe: a revisit seen as grid-order dependence): that problem's, not a new one.
            k = key_of(charged.finding)
            if k in seen and t.number not in seen[k]:
                seen[k].append(t.number)
            continue
        if k not in first:
            order.append(k)
        if k not in first or _own(first[k][1], k) < _own(f, k):
            first[k] = (t, f)
        # (Not as an "Also on this test" on a test whose own case did not show it.)
        if shows(f) and (is_primary or _shown_by(t, f)) and (
                k not in first_shown or _own(first_shown[k][1], k) < _own(f, k)):
            first_shown[k] = (t, f)
        seen.setdefault(k, [])
        if t.number not in seen[k]:
            seen[k].append(t.number)
        if is_primary and t.charges:
            cost.setdefault(k, []).append(t)
    # Costly problems first (by points), then the rest by root-cause precedence.
    ranked = sorted(order, key=lambda k: (-sum(t.max_score - t.score for t in cost.get(k, [])),
                                          PRECEDENCE.index(k[0]), order.index(k)))
    problems = []
    for n, k in enumerate(ranked, 1):
        t, f = first_shown.get(k, first[k])
        lost = cost.get(k, [])
        # A submission-wide finding (no case: a missing file, a tampered channel) is
        # explained once at the top, above every test it fails.
        where = "summary" if f.case is None else t.number
        problems.append(Problem(k, n, f, tuple(x.number for x in lost),
                                sum(x.max_score - x.score for x in lost), tuple(seen[k]), where))
    return tuple(problems)
