"""Every probe's judge on synthetic outcomes (pure logic, no JAX), and the one
entry point that turns a plan's outcomes into probe findings."""
import numpy as np
import pytest

from autograder.grading import assignments, probes
from autograder.grading.probes import PLANNERS
from autograder.grading.run import plan as planning
from autograder.isolation.outcome import Outcome
from autograder.pallas_surface.static import facts

RNG = np.random.default_rng(0)


class Grading:
    """A plan, its references, and outcomes set by hand."""

    def __init__(self, slug, **assignment):
        from dataclasses import replace
        a = replace(assignments.find(slug), **assignment)
        self.plan = planning.build(a, a.cases, a.rungs, 7, planners=PLANNERS)
        self.case = a.probe_cases[0]
        self.refs = {}
        for d in self.plan.draws:
            if not d.abstract:
                self.refs[d] = RNG.standard_normal(a.output_shape(d.case))
        self.outcomes = {r: Outcome("ok", output=self.refs[r.draw].astype(np.float32))
                         for r in self.plan.runs if r.kind == "kernel"}
        for r in self.plan.runs:
            if r.kind == "static":
                self.outcomes[r] = Outcome("ok", facts=None)

    def run(self, probe, variant):
        return self.plan.probe_runs(probe, self.case)[variant]

    def test(self, rung):
        return self.plan.test_run(self.case, rung)

    def set(self, run, **kw):
        """Facts given as the child's JSON go through the parent's decoder, as in grading."""
        if isinstance(kw.get("facts"), dict):
            kw["facts"] = facts.decode(run.analysis, kw["facts"])
        self.outcomes[run] = Outcome(**{"status": "ok", **kw})

    def wrong(self, run, by=1.0):
        self.set(run, output=(self.refs[run.draw] + by).astype(np.float32))

    def judge(self, probe=None):
        findings, notes = probes.judge(self.plan, self.outcomes, self.refs)
        if probe is None:
            return findings, notes
        return [f for f in findings if f.check == probe], [n for n in notes if n.probe == probe]


def test_a_correct_kernel_gets_no_probe_findings():
    for slug in ("add", "matmul", "softmax", "dma_scale", "flash_attention"):
        g = Grading(slug)
        assert g.judge() == ([], []), slug


def test_poisoning_output_that_changes_with_the_fill_is_uninitialized_memory():
    g = Grading("matmul")
    g.wrong(g.test("tpu-interpret"), 3.0)                  # the test's own fill: wrong
    other = g.run("poisoning", "fill-2")
    (f,), _ = g.judge("poisoning")
    assert f.id == "uninitialized-memory" and f.run is None   # the fill that failed is the test's own
    assert f.facts()["fills_passing"] == ["fill-2"] and f.facts()["fills_failing"] == ["fill-1"]
    g.wrong(other, 5.0)
    (f,), _ = g.judge("poisoning")
    assert f.run == other.index and f.facts()["fills_failing"] == ["fill-1", "fill-2"]
    # Which interpreter the grader reran, with which fills.
    assert f.message.endswith("never wrote: rerun in TPU interpret mode, wrong with every fill tried "
                              "(fill-1, fill-2), and different with each")


def test_fills_are_drawn_from_the_run_key_element_by_element():
    from autograder.grading.run import fills
    one, again, other = fills.poisoning_fills(7), fills.poisoning_fills(7), fills.poisoning_fills(8)
    assert one == again and one != other and len(one) == 1
    test = fills.test_fill(7)
    assert test not in one and test.seed[:2] == (7, 0) and test != fills.test_fill(8)
    assert not test.finite and all(not f.finite and f.scale == 1.0 for f in one)
    # The two reruns of a failing test: the same values, the second's times a power of two.
    a, b = fills.unwritten_fills(7)
    assert a.seed == b.seed and a.finite and b.finite and b.scale / a.scale == fills.UNWRITTEN_SCALE
    assert a.positive and b.positive and b.scale < 0          # the second's all negative
    assert np.log2(abs(fills.UNWRITTEN_SCALE)) == int(np.log2(abs(fills.UNWRITTEN_SCALE)))
    assert {f.name for f in (test, *one)} == {"fill-1", "fill-2"}


def test_poisoning_differences_confined_to_partial_blocks_are_padding_dependence():
    g = Grading("softmax")
    ref = g.refs[g.test("generic").draw]
    rows = ref.shape[0]
    scan = {"calls": [{"grid": [-(-rows // 8)], "dimension_semantics": ["parallel"], "skipped": [],
                       "operands": [{"operand": "output 0", "is_output": True, "array_shape": list(ref.shape),
                                     "block_shape": [8, ref.shape[1]], "grid": [-(-rows // 8)],
                                     "out_of_bounds": [], "out_of_bounds_count": 0, "partial_blocks": [],
                                     "partial_count": 1, "block_grid": [-(-rows // 8), 1]}]}]}
    g.set(g.run("poisoning", "index-maps"), facts=scan)
    last = (rows // 8) * 8
    assert last < rows, "the probe case has a partial row block"
    bad = ref.copy()
    bad[last:] += 5
    g.set(g.run("poisoning", "fill-2"), output=bad.astype(np.float32))
    (f,), _ = g.judge("poisoning")
    assert f.id == "padding-dependence" and f.facts()["partial_elements"] == (rows - last) * ref.shape[1]


def test_grid_order_wrong_only_when_reordered():
    g = Grading("matmul")
    run = g.run("grid-order", "seed-2-2cores")
    order = (((1, 0, 0), 1), ((0, 0, 0), 0))
    g.set(run, output=(g.refs[run.draw] + 1).astype(np.float32), order=order)
    (f,), _ = g.judge("grid-order")
    assert f.id == "grid-order-dependence" and f.facts()["seed"] == 2 and f.facts()["cores"] == 2
    assert f.facts()["interpret_params"] == {"random_seed": 2, "num_cores_or_threads": 2}
    # Wrong in plain row-major order on one core: not about the order at all.
    g.set(run, output=(g.refs[run.draw] + 1).astype(np.float32), order=(((0, 0, 0), 0), ((1, 0, 0), 0)))
    assert g.judge("grid-order") == ([], [])


def test_races_flag_or_report_is_a_data_race():
    g = Grading("dma_scale")
    g.set(g.run("races", "races-2core"), output=g.outcomes[g.test("generic")].output, races_found=True,
          captured="RACE DETECTED\n  write of x[slice(64, 128, 1)] from /home/s/dma.py:12\nclock: 3")
    (f,), _ = g.judge("races")
    assert f.id == "data-race" and f.facts()["cores"] == 2
    assert f.facts()["report"] == ["RACE DETECTED", "  write of x[slice(64, 128, 1)] from dma.py:12"]


def test_dma_modes_that_disagree_are_a_protocol_error():
    g = Grading("dma_scale")
    g.wrong(g.test("tpu-interpret"))
    (f,), _ = g.judge("races")
    assert f.id == "dma-protocol" and f.facts()["mode_failing"] == "on_wait"


def test_a_tpu_hang_with_generic_finished_is_a_dma_hang():
    g = Grading("dma_scale")
    g.outcomes[g.test("tpu-interpret")] = Outcome("timeout", phase="run", limit_s=10.0)
    found, _ = g.judge("races")
    assert [f.facts()["problem"] for f in found] == ["hang"]
    # The same hang while tracing is the student's Python, not a DMA.
    g.outcomes[g.test("tpu-interpret")] = Outcome("timeout", phase="trace", limit_s=10.0)
    assert not [f for f in g.judge("races")[0] if f.id == "dma-protocol"]


def test_numerics_stress_error_is_read_as_bits():
    g = Grading("matmul")
    run = g.run("numerics", "stress-long-k-bf16")
    ref = g.refs[run.draw]
    g.set(run, output=(ref * (1 + 2.0 ** -8)).astype(np.float32))
    (f,), _ = g.judge("numerics")
    assert f.id == "numerics" and f.facts()["effective_bits"] == 8.0 and f.facts()["dtype_bits"] == 8
    assert f.run == run.index and f.facts()["stress"] == "long-k-bf16"
    g.set(run, output=(-ref).astype(np.float32))
    (f,), _ = g.judge("numerics")
    assert f.id == "wrong-result"


def test_static_facts_become_findings():
    g = Grading("matmul")
    g.set(g.run("compile", "compile"), facts={"ok": False, "message": "block shape must be divisible by 8 and 128"})
    g.set(g.run("vmem", "vmem"), facts={"bytes": 20 * 2 ** 20, "calls": [{"bytes": 20 * 2 ** 20, "blocks": [],
                                                                           "scratch": [], "scoped": []}]})
    g.set(g.run("structure", "structure"), facts={"pallas_calls": 1, "outside": {"dot_general": 1},
                                                  "manual_dma": False, "kernel_primitives": []})
    found, _ = g.judge()
    assert {(f.check, f.id) for f in found} == {("compile", "compile-reject"), ("vmem", "vmem-overflow"),
                                                ("structure", "not-a-kernel")}
    assert next(f for f in found if f.check == "compile").facts()["rule_id"] == "block-tiling"


def test_the_spec_allows_the_glue_it_names_outside_the_kernel_and_never_a_ref():
    from autograder.spec.model import Structure
    outside = {"cumsum": 1, "data-index: dynamic_slice": 2, "data-control: cond": 1, "ref: run_scoped": 1}

    def found(allow):
        g = Grading("add", structure=Structure(allow=allow))
        g.set(g.run("structure", "structure"), facts={"pallas_calls": 1, "outside": outside,
                                                      "manual_dma": False, "kernel_primitives": []})
        return g.judge("structure")[0]
    (f,) = found(())
    assert f.problem == "work-outside" and f.message.startswith(
        "work happens outside the kernel: cumsum computing on the inputs' data; decisions on data (cond); "
        "positions read from data (dynamic_slice); refs outside any kernel (run_scoped); outside a pallas_call")
    (f,) = found(("cumsum", "data-index", "data-control"))
    assert f.facts()["outside"] == {"ref: run_scoped": 1}
    del outside["ref: run_scoped"]
    assert found(("cumsum", "data-index", "data-control")) == []
    (f,) = found(("cumsum", "data-index"))
    assert f.facts()["outside"] == {"data-control: cond": 1}


def test_a_refused_buffer_count_gets_its_own_rule_and_fix():
    # pl.Buffered(3) on a pallas_call's BlockSpec: the fix names the buffer count,
    # not the block tiling the kernel keeps.
    from autograder.findings import fix_line
    g = Grading("matmul")
    g.set(g.run("compile", "compile"), facts={
        "ok": False, "message": "Only single (1) and double (2) buffering are supported. Got 3."})
    (f,) = [f for f in g.judge()[0] if f.check == "compile"]
    assert f.facts()["rule_id"] == "buffer-count" and "pl.Buffered(2)" in fix_line(f)
    assert "(8, 128)" not in fix_line(f)


def test_a_matmul_with_a_16_bit_result_gets_its_own_rule_and_fix():
    # The chip refuses a bf16 x bf16 -> bf16 jnp.dot; the fix is the dot's result type.
    from autograder.findings import fix_line
    g = Grading("matmul")
    g.set(g.run("compile", "compile"), facts={
        "ok": False, "message": "Pallas encountered an internal verification error. Please file a bug at "
                                "https://github.com/jax-ml/jax/issues/new/choose. Error details: 'tpu.matmul' op "
                                "Expected matmul acc to be 32-bit"})
    (f,) = [f for f in g.judge()[0] if f.check == "compile"]
    assert f.facts()["rule_id"] == "matmul-accumulator"
    assert "preferred_element_type=jnp.float32" in fix_line(f) and "(8, 128)" not in fix_line(f)
    assert "32-bit result" in f.message
    # The compiler's own words, without JAX's request to file a bug for the student's kernel.
    assert f.facts()["compiler_message"] == "'tpu.matmul' op Expected matmul acc to be 32-bit"
    assert f.facts()["headline"] == "'tpu.matmul' op Expected matmul acc to be 32-bit"


def test_a_check_whose_run_hung_while_the_test_passed_is_charged_as_the_bug_it_exposes():
    g = Grading("matmul")
    for run in g.plan.probe_runs("grid-order", g.case).values():
        g.outcomes[run] = Outcome("timeout", phase="run", limit_s=10.0)
    found, notes = g.judge("grid-order")
    assert [(f.id, f.problem) for f in found] == [("grid-order-dependence", "probe-run-hung")] and notes == []
    assert "hung (no result within 10 s)" in found[0].message
    # Stopped at a limit not far above the test run's own time: maybe only slow (a
    # loaded machine, a tight --case-timeout): not charged, the check says why.
    from dataclasses import replace
    test = g.test("tpu-interpret")
    g.outcomes[test] = replace(g.outcomes[test], seconds=3.0)
    found, notes = g.judge("grid-order")
    assert found == [] and "ran out of time" in notes[0].text
    # The same for each probe's own switch, and a run that raised.
    for probe, variant, fid in (("poisoning", "fill-2", "uninitialized-memory"),
                                ("races", "dma-eager", "dma-protocol"),
                                ("races", "races-2core", "grid-order-dependence")):
        g = Grading("add")
        g.outcomes[g.plan.probe_runs(probe, g.case)[variant]] = Outcome("error", phase="run", error_type="ValueError",
                                                                         message="x")
        found, _ = g.judge(probe)
        assert [(f.id, f.facts()["type"]) for f in found] == [(fid, "ValueError")], (probe, variant)


def test_a_check_the_grader_could_not_run_costs_nothing():
    g = Grading("matmul")
    for run in g.plan.probe_runs("grid-order", g.case).values():
        g.outcomes[run] = Outcome("skipped", reason="budget")
    found, notes = g.judge("grid-order")
    assert found == [] and "time budget was spent" in notes[0].text


def test_a_check_stopped_by_a_recognised_error_carries_it():
    g = Grading("add")
    for run in g.plan.probe_runs("races", g.case).values():
        g.outcomes[run] = Outcome("error", error_type="IndexError",
                                  message="Out-of-bounds block index (0, 3) for input x")
    (f,), notes = g.judge("races")
    assert f.id == "out-of-bounds" and notes == []


def _broken_everywhere(g, probe, cases):
    for case in cases:
        g.outcomes[g.plan.test_run(case.name, "tpu-interpret")] = Outcome("error", error_type="ValueError",
                                                                          message="bad")
        for run in g.plan.probe_runs(probe, case.name).values():
            g.outcomes[run] = Outcome("error", error_type="ValueError", message="bad")


def test_a_check_whose_test_fails_too_is_blocked_not_charged_twice():
    g = Grading("add")
    _broken_everywhere(g, "grid-order", g.plan.cases)
    found, _ = g.judge("grid-order")
    assert found and all(f.problem == "check-not-run" and f.facts()["test_rung"] == "tpu-interpret" for f in found)


def test_a_check_blocked_on_one_case_still_vouches_for_the_cases_it_ran_on():
    g = Grading("add")
    secret = next(c for c in g.plan.cases if not c.visible)
    _broken_everywhere(g, "grid-order", [secret])
    found, notes = g.judge("grid-order")
    assert found == [] and [n.text for n in notes] == ["not run on a case whose own test fails (charged there); "
                                                       "it ran on the others"]


def test_a_settled_check_carries_the_settling_finding():
    from autograder.findings import Finding
    g = Grading("add")
    oob = Finding.make("out-of-bounds", "static", "block outside", case=g.case, check="index-maps",
                       stops_tpu_interpret=True)
    for run in g.plan.probe_runs("poisoning", g.case).values():
        if run.kind == "kernel":
            g.outcomes[run] = Outcome("settled", settled_by=oob, reason="not run: already found")
    (f,), _ = g.judge("poisoning")
    assert f.id == "out-of-bounds" and f.check == "poisoning" and f.message == "not run: already found"


def test_a_crashing_judge_is_the_graders_error(monkeypatch, capsys):
    g = Grading("add")
    probe = probes.REGISTRY["races"]

    def boom(r):
        raise ZeroDivisionError("judge bug")
    monkeypatch.setitem(probes.REGISTRY, "races", probe.__class__(**{**probe.__dict__, "judge": boom}))
    found, notes = g.judge("races")
    assert found == [] and "internal error" in notes[0].text
    assert "ZeroDivisionError: judge bug" in capsys.readouterr().err


@pytest.mark.parametrize("slug", ["add", "matmul", "softmax", "dma_scale", "flash_attention"])
def test_every_enabled_probe_plans_runs_on_the_probe_case(slug):
    g = Grading(slug)
    for name in g.plan.probes:
        assert g.plan.probe_runs(name, g.case), name


def test_no_kernel_no_probe_points():
    from dataclasses import replace

    from autograder.grading.judge import scoring
    g = Grading("add")
    for run, o in list(g.outcomes.items()):
        g.outcomes[run] = replace(o, traced=True, pallas_calls=0)
    g.set(g.run("structure", "structure"), traced=True,
          facts={"pallas_calls": 0, "outside": {"add": 1}, "manual_dma": False, "kernel_primitives": []})
    found, _ = g.judge()
    by_check = {f.check: f for f in found}
    assert set(by_check) == set(g.plan.probes)
    assert by_check["structure"].problem == "no-pallas-call"
    assert {f.problem for c, f in by_check.items() if c != "structure"} == {"nothing-to-check"}
    tests = [t for t in scoring.score(g.plan, found) if t.probe]
    assert all(t.score == 0 for t in tests) and all(t.tags == ["not-a-kernel"] for t in tests)


def test_a_scan_claim_no_run_confirms_is_a_note_and_one_a_run_confirms_is_charged():
    # The index-map scan says two cores write one output block; every test on that case
    # passes and no running check found anything there: a note, not a charge. A failing
    # test, or a race found on the case, confirms it. Out of bounds is charged regardless.
    from autograder.findings import Finding
    from autograder.grading.judge import unconfirmed
    a = assignments.find("softmax")
    plan = planning.build(a, a.cases, a.rungs, 7, planners=PLANNERS)
    secret = next(c.name for c in a.cases if not c.visible)
    visible = a.cases[0].name

    def shared(case):
        return Finding.make("output-block-revisit", "static", "output 0: block (0, 0) is written at grid points "
                            "(0, 0) and (1, 0), which differ along axis 0, marked parallel", case=case,
                            check="index-maps", kind="parallel-shared", variant="index-maps")
    oob = Finding.make("out-of-bounds", "static", "block outside", case=secret, check="index-maps",
                       variant="index-maps", stops_tpu_interpret=True)
    kept, notes = unconfirmed.settle(plan, [shared(secret), oob])
    assert kept == [oob] and [(n.probe, n.case) for n in notes] == [("index-maps", secret)]
    assert notes[0].text.startswith("on a secret case the index maps say: an output block is written from both "
                                    "sides of an axis marked \"parallel\"; no run on that case shows a difference")
    assert "(0, 0)" not in notes[0].text, "a secret case shows no block indices"
    _, notes = unconfirmed.settle(plan, [shared(visible)])
    assert notes[0].text.startswith(f"on case {visible} the index maps say: output 0: block (0, 0)")
    wrong = Finding.make("wrong-result", "tpu-interpret", "3 of 5 wrong", case=secret)
    race = Finding.make("data-race", "tpu-interpret", "a race", case=secret, check="races")
    elsewhere = Finding.make("wrong-result", "generic", "wrong", case=visible)
    for confirming in (wrong, race):
        assert unconfirmed.settle(plan, [shared(secret), confirming]) == ([shared(secret), confirming], [])
    assert unconfirmed.settle(plan, [shared(secret), elsewhere])[0] == [elsewhere]


def test_two_cores_writing_one_output_block_in_a_right_run_is_a_note_unless_a_run_differs():
    # The race detector's report of the pipeline writing one block from both cores, in a
    # run whose output is right (races.writes_agree): the scan's claim, run. A note while no
    # other run on the case finds anything; charged beside a failing test there, and a race
    # whose writes do not agree (or a DMA's) is charged whatever else the case shows.
    from autograder.findings import Finding
    from autograder.grading.judge import unconfirmed
    a = assignments.find("softmax")
    plan = planning.build(a, a.cases, a.rungs, 7, planners=PLANNERS)
    secret = next(c.name for c in a.cases if not c.visible)

    def race(agree):
        return Finding.make("data-race", "tpu-interpret", "a race", case=secret, check="races", writes_agree=agree)
    kept, notes = unconfirmed.settle(plan, [race(True)])
    assert kept == [] and [(n.probe, n.case, n.ran) for n in notes] == [("races", secret, True)]
    assert notes[0].text.startswith("on a secret case the race detector saw two cores write the same output block")
    assert unconfirmed.settle(plan, [race(False)]) == ([race(False)], [])
    wrong = Finding.make("wrong-result", "tpu-interpret", "3 of 5 wrong", case=secret)
    assert unconfirmed.settle(plan, [race(True), wrong]) == ([race(True), wrong], [])
    # Two agreeing-writes reports confirm neither the other nor the scan's claim.
    shared = Finding.make("output-block-revisit", "static", "shared", case=secret, check="index-maps",
                          kind="parallel-shared", variant="index-maps")
    kept, notes = unconfirmed.settle(plan, [shared, race(True)])
    assert kept == [] and [n.probe for n in notes] == ["index-maps", "races"]


def test_an_input_read_in_part_where_the_graded_kernel_reads_it_all_is_named():
    from autograder.grading.probes.static import unread_inputs
    from autograder.pallas_surface.static.facts import CallMap, IndexMaps, OperandMap

    def scan(unread):
        op = OperandMap("input 0", False, (16, 512), (8, 128), (2, 1), (), 0, (), 0, unread_count=unread)
        return IndexMaps((CallMap((2, 1), ("parallel", "arbitrary"), (op,), ()),))
    assert unread_inputs(scan(6), [scan(0), scan(0)]) == "6 blocks of input 0"
    assert unread_inputs(scan(0), [scan(0)]) == ""
    # Read in part at a graded size too (a lookup by prefetched positions): held to nothing.
    assert unread_inputs(scan(6), [scan(0), scan(3)]) == ""
    assert unread_inputs(scan(6), []) == ""
