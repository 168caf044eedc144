"""Scoring (pure logic, no JAX): which finding explains which failure, and
charge-once across correctness tests and probe checks."""
from autograder.findings import CheckNote, Finding
from autograder.grading import assignments
from autograder.grading.judge import scoring
from autograder.grading.probes import PLANNERS
from autograder.grading.run import plan as planning


def _plan(slug, probes=True):
    a = assignments.find(slug)
    return planning.build(a, a.cases, a.rungs, 7, planners=PLANNERS if probes else None)


def _by(tests, number):
    return next(t for t in tests if t.number == number)


def test_a_dma_hang_explains_a_timeout_on_its_rung_only():
    plan = _plan("dma_scale", probes=False)
    a = plan.assignment
    case = a.cases[0].name
    timeout = [Finding.make("submission-error", rung, "did not finish", case=c.name, problem="timeout")
               for c in a.cases for rung in a.rungs]
    hang = Finding.make("dma-protocol", "tpu-interpret", "hung", case=case, check="races", problem="hang")
    mode = Finding.make("dma-protocol", "tpu-interpret", "modes differ", case=case, check="races",
                        problem="mode-dependent")
    by_rung = lambda tests: [t.finding.id for t in tests if t.probe is None]
    # The hang seen on TPU interpret mode explains that rung's timeouts on every case.
    assert by_rung(scoring.score(plan, timeout + [hang])) == \
        ["submission-error", "dma-protocol"] * len(a.cases)
    # A DMA finding that is not a hang does not explain a timeout.
    assert by_rung(scoring.score(plan, timeout + [mode])) == ["submission-error"] * 2 * len(a.cases)
    # Nor does a hang explain any other submission error.
    crash = [Finding.make("submission-error", "tpu-interpret", "raised", case=case, problem="exception")]
    assert scoring.score(plan, crash + [hang])[1].finding.id == "submission-error"


def test_a_probe_finding_explains_failed_tests_and_is_charged_once():
    plan = _plan("add")
    probe_case = plan.assignment.probe_cases[0]
    oob_probe = Finding.make("out-of-bounds", "static", "block (0, 3)", case=probe_case, check="index-maps")
    # The TPU interpret runs raised IndexError on every case; generic was clamped (passed).
    raised = [Finding.make("out-of-bounds", "tpu-interpret", "IndexError", case=c.name)
              for c in plan.cases]
    tests = scoring.score(plan, [oob_probe, *raised])
    correctness = [t for t in tests if t.probe is None]
    assert [t.tags for t in correctness] == [[], ["out-of-bounds"]] * len(plan.cases)
    assert [t.score for t in correctness] == [c.points / 2 if r == 0 else 0.0
                                             for c in plan.cases for r in (0, 1)]
    index_maps = next(t for t in tests if t.probe == "index-maps")
    assert index_maps.tags == ["out-of-bounds"] and index_maps.score == index_maps.max_score
    # It keeps its points, so it passes (status agrees with score), naming the test charged.
    assert index_maps.charged_in == "1.2" and index_maps.passed and not index_maps.charges


def test_a_probe_finding_explains_no_case_the_probe_looked_at_and_found_clean():
    # The index-map scan runs at every case's size: out of bounds at a secret size only
    # (a grid taken from the wrong dimension) is no cause of a visible case's failure,
    # which its own finding (an accumulator never zeroed) explains.
    plan = _plan("matmul")
    visible, secret = plan.cases[0], next(c for c in plan.cases if c.secret)
    assert plan.probe_runs("index-maps", visible.name) and plan.probe_runs("index-maps", secret.name)
    oob = Finding.make("out-of-bounds", "static", "block (3, 0)", case=secret.name, check="index-maps")
    own = Finding.make("uninitialized-memory", "generic", "read first", case=visible.name)
    tests = scoring.score(plan, [oob, own])
    assert _by(tests, "1.1").finding is own and oob not in _by(tests, "1.1").others
    # On a case the probe did not look at (the numerics probe's stress inputs are built on
    # the probe case only), its finding still explains a failure there.
    stress = Finding.make("numerics", "tpu-interpret", "overflow", case=visible.name, check="numerics")
    assert not plan.probe_runs("numerics", secret.name)
    assert scoring._may_explain(plan, stress, secret) and not scoring._may_explain(plan, oob, visible)


def test_a_probe_only_finding_costs_its_check():
    plan = _plan("matmul")
    case = plan.assignment.probe_cases[0]
    f = Finding.make("compile-reject", "static", "block tiling", case=case, check="compile")
    tests = scoring.score(plan, [f])
    assert all(t.passed for t in tests if t.probe is None)
    check = next(t for t in tests if t.probe == "compile")
    assert check.score == 0.0 and check.charged_in is None and check.tags == ["compile-reject"]
    assert sum(t.score for t in tests) == sum(t.max_score for t in tests) - check.max_score


def test_same_bug_views_are_not_charged_again():
    plan = _plan("matmul")
    case = plan.assignment.probe_cases[0]
    revisit = [Finding.make("output-block-revisit", "tpu-interpret", "revisited", case=c.name)
               for c in plan.cases]
    order = Finding.make("grid-order-dependence", "tpu-interpret", "order", case=case, check="grid-order")
    tests = scoring.score(plan, [*revisit, order])
    check = next(t for t in tests if t.probe == "grid-order")
    assert check.tags == ["grid-order-dependence"] and check.score == check.max_score
    assert check.charged_in == "1.2"


def test_a_check_blocked_by_its_failing_test_is_charged_there():
    plan = _plan("dma_scale")
    case = plan.assignment.probe_cases[0]
    ci = [c.name for c in plan.cases].index(case) + 1
    hang = Finding.make("dma-protocol", "tpu-interpret", "hung", case=case, check="races", problem="hang")
    timeout = Finding.make("submission-error", "tpu-interpret", "did not finish", case=case,
                           problem="timeout")
    blocked = Finding.make("submission-error", "tpu-interpret", "could not run", case=case,
                           check="grid-order", problem="check-not-run", test_rung="tpu-interpret")
    tests = scoring.score(plan, [hang, timeout, blocked])
    check = next(t for t in tests if t.probe == "grid-order")
    assert check.score == check.max_score and check.charged_in == f"{ci}.2"
    # A kernel that cannot be graded at all (its test fails as submission-error) leaves
    # the check nothing to vouch for; and without a failing test the check costs too.
    for findings in ([timeout, blocked], [blocked]):
        check = next(t for t in scoring.score(plan, findings) if t.probe == "grid-order")
        assert check.score == 0.0 and check.charged_in is None


def test_a_check_that_ran_out_of_time_costs_nothing_and_says_so():
    plan = _plan("add")
    case = plan.assignment.probe_cases[0]
    note = CheckNote("races", case, "this check could not finish (the grader ran out of time for it)")
    tests = scoring.score(plan, [], [note])
    check = next(t for t in tests if t.probe == "races")
    assert check.passed and check.score == check.max_score and "ran out of time" in check.note
    assert all(not t.note for t in tests if t.probe != "races")


def test_submission_wide_findings_fail_every_test_and_probe():
    plan = _plan("add")
    wide = Finding.make("submission-error", "static", "syntax error", check="submission",
                        problem="syntax-error")
    tests = scoring.score(plan, [wide])
    assert all(t.score == 0 and t.tags == ["submission-error"] for t in tests)
    assert sum(t.max_score for t in tests) == sum(c.points for c in plan.cases) + \
        sum(p.points for p in plan.assignment.probes)


def test_correctness_tests_carry_their_own_run():
    plan = _plan("matmul", probes=False)
    tests = scoring.score(plan, [])
    for t in tests:
        assert t.run is plan.test_run(t.case.name, t.rung) and t.run.draw.case == t.case
    # Secret cases are named by position only.
    assert [t.name.split(" · ")[0] for t in tests][4:] == ["secret case 3"] * 2 + ["secret case 4"] * 2


def _no_kernel(plan):
    case = plan.assignment.probe_cases[0]
    return Finding.make("not-a-kernel", "static", "no pallas_call", case=case, check="structure",
                        problem="no-pallas-call")


def test_the_structure_gate_takes_every_correctness_point():
    plan = _plan("add")
    tests = scoring.score(plan, [_no_kernel(plan)])
    structure = next(t for t in tests if t.probe == "structure")
    correctness = [t for t in tests if t.probe is None]
    assert all(t.score == 0 and t.finding.id == "not-a-kernel" and t.gated_by == structure.number
               for t in correctness)
    assert structure.score == 0 and not structure.passed
    # The probes that examine the kernel's behaviour examined a copy: they earn nothing
    # either; compile readiness stays its own.
    kernel_probes = {"index-maps", "vmem", "poisoning", "grid-order", "races", "numerics"}
    for t in tests:
        if t.probe in kernel_probes:
            assert t.score == 0 and t.gated_by == structure.number and t.finding.id == "not-a-kernel", t.probe
        elif t.probe == "compile":
            assert t.gated_by is None and t.passed
    assert {t.probe for t in tests if t.gated_by} == kernel_probes & set(plan.probes) | {None}


def test_a_spec_may_grant_the_kernel_probes_without_a_kernel():
    from dataclasses import replace
    plan = _plan("add")
    a = replace(plan.assignment, structure=replace(plan.assignment.structure, probes_need_kernel=False))
    plan = replace(plan, assignment=a)
    tests = scoring.score(plan, [_no_kernel(plan)])
    assert all(t.gated_by is None and t.passed for t in tests if t.probe not in (None, "structure"))


def test_the_gate_leaves_tests_that_fail_on_their_own_cause():
    plan = _plan("add")
    case = plan.cases[0]
    wrong = Finding.make("wrong-result", "generic", "wrong", case=case.name)
    tests = scoring.score(plan, [_no_kernel(plan), wrong])
    first = tests[0]
    assert first.finding.id == "wrong-result" and first.gated_by is None


def test_status_agrees_with_score_everywhere():
    plan = _plan("add")
    probe_case = plan.assignment.probe_cases[0]
    oob = Finding.make("out-of-bounds", "static", "block (0, 3)", case=probe_case, check="index-maps")
    raised = [Finding.make("out-of-bounds", "tpu-interpret", "IndexError", case=c.name) for c in plan.cases]
    for findings in ([], [oob, *raised], [_no_kernel(plan)]):
        for t in scoring.score(plan, findings):
            assert t.passed == (t.score >= t.max_score), t


def test_a_check_blocked_by_a_submission_error_costs_that_problem_in_the_list():
    # TPU interpret mode refuses the kernel on every case (here: parallel dimensions
    # that are no prefix of the grid); the checks that run there cannot run and earn
    # nothing. The problem list charges their points to that one error, so the costs
    # it lists add up to the points lost.
    from autograder.grading.judge import problems
    plan = _plan("add")
    a = plan.assignment
    raised = [Finding.make("submission-error", "tpu-interpret", "raised ValueError", case=c.name,
                           problem="exception") for c in a.cases]
    blocked = [Finding.make("submission-error", "tpu-interpret", "could not run", case=a.probe_cases[0],
                            check=name, problem="check-not-run", test_rung="tpu-interpret")
               for name in ("poisoning", "grid-order")]
    tests = scoring.score(plan, [*raised, *blocked])
    lost = sum(t.max_score - t.score for t in tests)
    (problem,) = problems.summarize(tests, lambda f: True)
    assert problem.id == "submission-error" and problem.points == lost
    checks = [t.number for t in tests if t.probe in ("poisoning", "grid-order")]
    assert len(checks) == 2 and set(checks) <= set(problem.cost)


def test_an_order_check_seeing_memory_a_test_charged_as_unwritten_is_not_charged_again():
    # Scratch zeroed at the first grid point only: the fill reruns charge the tests
    # uninitialized-memory; the order check sees the same unwritten read.
    plan = _plan("add")
    a = plan.assignment
    unwritten = [Finding.make("uninitialized-memory", "tpu-interpret", "changes with the fill",
                              case=c.name) for c in a.cases]
    order = Finding.make("grid-order-dependence", "tpu-interpret", "order", case=a.probe_cases[0],
                         check="grid-order")
    tests = scoring.score(plan, [*unwritten, order])
    check = next(t for t in tests if t.probe == "grid-order")
    assert check.score == check.max_score and check.charged_in == "1.2"


def test_a_check_seeing_a_revisit_as_unwritten_memory_on_another_case_names_the_test_the_problem_is_charged_in():
    # Issue 45: matmul's K axis marked parallel fails test 1.2 and every case's TPU
    # interpret test on the revisit; poisoning sees unwritten memory on the third case
    # only. It keeps its points, and names 1.2 (as P1 and P6 do), not 3.2.
    plan = _plan("matmul")
    a = plan.assignment
    scans = [Finding.make("output-block-revisit", "static", "revisited", case=c.name, check="index-maps")
             for c in a.cases]
    wrong = [Finding.make("wrong-result", "tpu-interpret", "wrong", case=c.name) for c in a.cases]
    fills = Finding.make("uninitialized-memory", "tpu-interpret", "changes with the fill", case=a.cases[2].name,
                         check="poisoning")
    tests = scoring.score(plan, [*scans, *wrong, fills])
    assert [(t.number, t.finding.id) for t in tests if t.charges] == \
        [(f"{i}.2", "output-block-revisit") for i in range(1, 5)]
    check = next(t for t in tests if t.probe == "poisoning")
    assert check.score == check.max_score and check.charged_in == "1.2"
    assert next(t for t in tests if t.probe == "index-maps").charged_in == "1.2"
