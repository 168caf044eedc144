"""Rubric from the spec + findings -> scored tests. Never runs code, never imports JAX.

One Gradescope test per (case, rung): a case's points are split evenly across
the spec's rungs. Then one test per probe check. A test that loses points
carries exactly one primary finding, chosen by root-cause precedence, and a
root cause is charged once: a probe check whose finding already failed a
correctness test keeps its points and names that test.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ...findings import TEST_RUNGS, CheckNote, Finding, primary
from ...spec import Case
from ..run.plan import Plan, Run


@dataclass(frozen=True)
class TestResult:
    number: str
    name: str
    case: Case
    rung: str
    max_score: float
    score: float
    finding: Finding | None                 # the primary finding, None when passed
    others: tuple[Finding, ...] = ()       # further findings on the same test (not charged)
    ladder: tuple[tuple[str, str], ...] = field(default=())  # (rung, passed|failed|not-run)
    probe: str | None = None                # None: a correctness test (case, rung)
    visibility: str = "visible"
    charged_in: str | None = None           # the test that already charged this finding's ID
    run: Run | None = None                  # the correctness test's run (its seed, its case)
    note: str = ""                          # a check that could not run, through no fault of the student's
    note_ran: bool = False                  # ... or that ran and found what costs nothing (every note says so)
    gated_by: str | None = None             # the check whose failure took this test's points
    counted: bool = True                    # False: a replay's test that did not run (its points count nowhere)

    @property
    def passed(self) -> bool:
        """Exactly when the test earns its points (a finding charged elsewhere keeps them)."""
        if self.max_score > 0:
            return self.score >= self.max_score
        return self.finding is None or self.charged_in is not None

    @property
    def kept_unrun(self) -> bool:
        """Keeps its points without having run: stopped by a bug charged in another
        test, or a check that could not run in full (its note says why)."""
        if not self.passed:
            return False
        if self.finding is not None and self.charged_in:
            return (any(f.problem == "check-not-run" for f in self.others)
                    or bool(self.finding.facts().get("not_run")))
        return bool(self.note) and not self.note_ran

    @property
    def charges(self) -> bool:
        """Whether this test's points were lost to its finding (here, not elsewhere)."""
        return self.finding is not None and not self.passed

    @property
    def tags(self) -> list[str]:
        return [self.finding.id] if self.finding else []


# How findings relate (which explains a test, which is a symptom or another view
# of the same bug) is each kind's in the catalogue (``findings.catalogue``).


def symptom_of(primary: Finding | None, other: Finding) -> bool:
    """``other`` is a symptom of ``primary`` on the same test (not a second problem)."""
    if primary is None or other is primary:
        return False
    if other.kind.symptom and primary.kind.explains:
        return True
    return (other.id == "submission-error" and other.problem == "timeout"
            and primary.kind.hang_explains_timeout)


def same_bug(primary: Finding | None, other: Finding) -> bool:
    """``other`` is another view of the bug ``primary`` names (kept as evidence)."""
    return primary is not None and other.id in primary.kind.same_bug


def _root_cause(hits: list[Finding], rung: str) -> Finding | None:
    """The primary finding; but a run that timed out on a rung where a probe saw the
    kernel hang in a wait (``hang_explains_timeout``) timed out because of that wait."""
    main = primary(hits)
    if main is None or main.id != "submission-error" or main.problem != "timeout":
        return main
    hang = [f for f in hits if f.kind.hang_explains_timeout and f.rung == rung and f.problem == "hang"]
    if hang and all(f.id != "submission-error" or f.problem == "timeout" for f in hits):
        return hang[0]
    return main


def _correctness(plan: Plan, wide: list[Finding], by_test: dict, explaining: list[Finding]) -> list[TestResult]:
    a = plan.assignment
    tests = []
    for case in plan.cases:
        share = case.points / len(a.rungs)   # stable per test, whatever is selected
        states = tuple((rung, "not-run" if rung not in plan.rungs else
                        "failed" if wide or by_test.get((case.name, rung)) else "passed")
                       for rung in a.rungs)
        for rung in plan.rungs:
            own = by_test.get((case.name, rung), [])
            hits = wide + own
            # (A run refused while tracing ran nothing: no other case's finding is seen on it.)
            if hits and not wide and not any(f.facts().get("phase") == "trace" for f in own):
                hits += [f for f in explaining if rung in f.kind.explains and _may_explain(plan, f, case)]
            main = _root_cause(hits, rung)
            number = plan.test_number(case, rung)
            label = case.name if case.visible else f"secret case {number.split('.')[0]}"
            tests.append(TestResult(
                number=number, name=f"{label} · {TEST_RUNGS[rung]}", case=case, rung=rung,
                max_score=share, score=0.0 if main else share, finding=main,
                others=tuple(f for f in hits if f is not main), ladder=states,
                visibility=case.visibility, run=plan.test_run(case.name, rung)))
    return tests


def _may_explain(plan: Plan, f: Finding, case) -> bool:
    """A probe's finding explains a failed test of its own case, or of a case the
    probe did not look at (it runs on a few: the cause is the submission's). A static
    scan that looked at the case (it always finishes, and what it reads is that
    case's own shapes) and found it clean of this is not explained by another case's
    finding: an index map out of bounds at a secret size is no cause of a visible
    case whose blocks all fit and whose test failed for its own reason. A run that
    may not finish or not show the bug on every case (a hang, a fill) still explains.
    An error raised while tracing (a ref sliced past its end) is a fact of its own
    case's shapes, and every test traces its case: it explains its own case only."""
    if f.case == case.name:
        return True
    if f.facts().get("phase") == "trace":
        return False
    return f.rung != "static" or not plan.probe_runs(f.check, case.name)


def _already(main: Finding | None, charged: dict[str, str], tests: list[TestResult]) -> str | None:
    """The test that already charged this check's root cause, if one did."""
    if main is None or main.case is None:
        return None
    if main.problem == "check-not-run":
        # Blocked by the case's own failing test: one root cause, charged there, when
        # the grader diagnosed it (a DMA hang, an out-of-bounds block). A kernel that
        # cannot be graded at all (it crashes, exits, returns nothing) leaves the
        # check nothing to vouch for: it earns nothing.
        test = _blocking_test(main, tests)
        return test.number if test is not None else None
    if main.id == "submission-error" or main.problem == "nothing-to-check":
        return None   # a check that could not run, or had no kernel to examine, earns nothing
    own = next((t for t in tests if t.probe is None and t.case.name == main.case and t.rung == main.rung
                and not t.passed and t.finding is not None
                and main.id in t.finding.kind.same_bug_on_case), None)
    if own is None:
        return charged.get(main.id) or _same_bug_by(main, tests)
    # The bug this check saw on that very test is the one charged there, and a
    # problem is named by one test: the first it cost points in (the one every other
    # check that keeps its points names), not whichever case this check saw it on.
    return charged.get(own.finding.id, own.number)


def _same_bug_by(main: Finding, tests: list[TestResult]) -> str | None:
    """The failed test whose finding is this one's bug by its rule (``same_bug_by``: a
    bfloat16 product the compiler refuses and the precision a bfloat16 case lost), on a
    case of the same dtype as the one the check saw it on."""
    ids = main.kind.same_bug_by.get(str(main.facts().get(main.kind.fix_by)), ())
    dtype = next((t.case.dtype for t in tests if t.case is not None and t.case.name == main.case), None)
    hit = next((t for t in tests if ids and t.probe is None and not t.passed and t.finding is not None
                and t.finding.id in ids and t.case.dtype == dtype), None)
    return hit.number if hit is not None else None


def blocking_test(main: Finding, tests: list[TestResult]) -> TestResult | None:
    """The case's failed correctness test that kept check ``main`` from running."""
    if main.problem != "check-not-run" or main.case is None:
        return None
    rung = main.facts().get("test_rung")
    return next((t for t in tests if t.probe is None and t.case.name == main.case
                 and t.rung == rung and not t.passed), None)


def _blocking_test(main: Finding, tests: list[TestResult]) -> TestResult | None:
    """The blocking test, when the grader diagnosed its root cause (not a submission error)."""
    test = blocking_test(main, tests)
    return test if test is not None and test.finding.id != "submission-error" else None


def score(plan: Plan, findings: list[Finding], notes: list[CheckNote] = ()) -> list[TestResult]:
    """Score every (case, rung) test, then every probe check that ran.

    Submission-wide findings (case None) fail every test.
    """
    wide = [f for f in findings if f.case is None]
    by_test: dict[tuple[str, str], list[Finding]] = {}
    by_probe: dict[str, list[Finding]] = {}
    explaining: list[Finding] = []   # probes run on a few cases; the cause is the submission's
    for f in findings:
        if f.case is None:
            continue
        if f.check == "correctness":
            by_test.setdefault((f.case, f.rung), []).append(f)
        else:
            by_probe.setdefault(f.check, []).append(f)
            # (A size no test runs whose arrays the kernel does not cover explains no test.)
            if f.kind.explains and f.problem != "not-covered":
                explaining.append(f)
    tests = _correctness(plan, wide, by_test, explaining)
    charged: dict[str, str] = {}
    for t in tests:
        if t.finding is not None:
            for fid in (t.finding.id, *t.finding.kind.same_bug):
                charged.setdefault(fid, t.number)
    first_case = plan.cases[0] if plan.cases else None
    for name in plan.probes:
        number = plan.probe_number(name)
        rubric = plan.assignment.probe(name)
        hits = wide + by_probe.get(name, [])
        main = primary(hits)
        already = _already(main, charged, tests)
        if main is not None and already is None and main.problem != "nothing-to-check":
            charged[main.id] = number
        case = plan.assignment.case(main.case) if main is not None and main.case else first_case
        mine = [n for n in notes if n.probe == name] if main is None else []
        note = "; ".join(dict.fromkeys(n.text for n in mine))
        shown = main
        if already and main.problem == "check-not-run":
            # The check never got to run: it shows the root cause that stopped it, not a
            # grading error of its own (kept beside it as evidence).
            shown = _blocking_test(main, tests).finding
        tests.append(TestResult(
            number=number, name=rubric.terms.title, case=case, rung=rubric.terms.rung,
            max_score=rubric.points, score=rubric.points if (main is None or already) else 0.0,
            finding=shown, others=tuple(f for f in hits if f is not shown), probe=name,
            visibility=rubric.visibility, charged_in=already, note=note,
            note_ran=bool(mine) and all(n.ran for n in mine)))
    return _uncounted(plan, _gated(plan, tests))


def _uncounted(plan: Plan, tests: list[TestResult]) -> list[TestResult]:
    """A replay is no grade: it counts only what it ran. A test that kept its points
    without running (a check run on less than the whole grading gives it, or one
    stopped by a bug charged elsewhere) counts for nothing there, neither earned
    nor lost; the whole grading still gives it its points."""
    if not plan.replay:
        return tests
    return [replace(t, counted=False) if t.kept_unrun else t for t in tests]


def _gates(finding: Finding | None) -> bool:
    """A check gates others only on a finding about the kernel itself (not one it
    could not examine: the tests then fail or pass on their own)."""
    return (finding is not None and finding.id != "submission-error"
            and finding.problem not in ("check-not-run", "nothing-to-check"))


def _kernel_probes(plan: Plan, gate: TestResult) -> set[str]:
    """While the structure check finds the work outside the kernel, the probes
    that examine the kernel's behaviour examined a copy: they earn nothing
    (unless the spec grants them: ``[structure] probes_need_kernel = false``)."""
    if (gate.probe != "structure" or gate.finding.problem not in ("work-outside", "no-pallas-call")
            or not plan.assignment.structure.probes_need_kernel):
        return set()
    return {name for name in plan.probes if plan.assignment.probe(name).terms.examines_kernel}


def _gated(plan: Plan, tests: list[TestResult]) -> list[TestResult]:
    """The rubric's dependencies: a probe with ``gates`` takes the points of the
    tests it gates while its check fails (e.g. no correctness points for work
    done outside the kernel). The gating finding is the root cause there."""
    out = list(tests)
    # A check that kept its points (its finding charged elsewhere, or borrowed from the
    # test that stopped it) gates nothing: its own check did not fail.
    for gate in (t for t in tests if t.probe is not None and t.charged_in is None and _gates(t.finding)):
        targets = set(plan.assignment.probe(gate.probe).gates) | _kernel_probes(plan, gate)
        for i, t in enumerate(out):
            group = "correctness" if t.probe is None else t.probe
            if t is gate or group not in targets or t.score == 0 and t.finding is not None:
                continue
            others = tuple(f for f in (t.finding, *t.others) if f is not None)
            out[i] = replace(t, score=0.0, finding=gate.finding, others=others, charged_in=None,
                             gated_by=gate.number, note="")
    return out
