"""Every probe's judge on synthetic outcomes (pure logic, no JAX), and the one
entry point that turns a plan's outcomes into probe findings."""
import numpy as np
import pytest

from autograder import spec
from autograder.grading import plan as planning, probes
from autograder.grading.probes import PLANNERS
from autograder.isolation.outcome import Outcome
from autograder.pallas_surface import facts

RNG = np.random.default_rng(0)


class Grading:
    """A plan, its references, and outcomes set by hand."""

    def __init__(self, slug):
        a = spec.find(slug)
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
    g.wrong(g.test("tpu-interpret"))                       # NaN fill: wrong
    huge = g.run("poisoning", "fill-3")
    g.wrong(huge, huge.fill)
    (f,), _ = g.judge("poisoning")
    assert f.id == "uninitialized-memory" and f.run == huge.index
    names = {v: f"{g.run('poisoning', v).fill:.4g}" for v in ("fill-1", "fill-2", "fill-3")}
    assert f.facts()["fills_passing"] == [names["fill-1"], names["fill-2"]]
    assert f.facts()["fills_failing"] == ["nan", names["fill-3"]]


def test_fills_are_drawn_from_the_run_key_and_are_no_round_numbers():
    from autograder.grading.probes.poisoning import fills
    one, again, other = fills(7), fills(7), fills(8)
    assert one == again and one != other and len(one) == 3
    for _name, value in one + other:
        assert value != 0 and value == float(np.float32(value))
        assert abs(value) not in (1e30, 1.0) and f"{abs(value):.1e}" != f"{abs(value):.7e}"[:7]
    signs = {v > 0 for k in range(40) for _n, v in fills(k)}
    assert signs == {True, False}
    assert sorted(abs(v) for _n, v in fills(3)) == [abs(v) for _n, v in fills(3)]   # small, moderate, huge


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
    g.set(g.run("poisoning", "fill-3"), output=bad.astype(np.float32))
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


def test_a_refused_buffer_count_gets_its_own_rule_and_fix():
    # pl.Buffered(3) on a pallas_call's BlockSpec: the fix names the buffer count,
    # not the block tiling the kernel keeps.
    from autograder.grading.findings import fix_line
    g = Grading("matmul")
    g.set(g.run("compile", "compile"), facts={
        "ok": False, "message": "Only single (1) and double (2) buffering are supported. Got 3."})
    (f,) = [f for f in g.judge()[0] if f.check == "compile"]
    assert f.facts()["rule_id"] == "buffer-count" and "pl.Buffered(2)" in fix_line(f)
    assert "(8, 128)" not in fix_line(f)


def test_a_matmul_with_a_16_bit_result_gets_its_own_rule_and_fix():
    # The chip refuses a bf16 x bf16 -> bf16 jnp.dot; the fix is the dot's result type.
    from autograder.grading.findings import fix_line
    g = Grading("matmul")
    g.set(g.run("compile", "compile"), facts={
        "ok": False, "message": "Pallas encountered an internal verification error. Please file a bug at "
                                "https://github.com/jax-ml/jax/issues/new/choose. Error details: 'tpu.matmul' op "
                                "Expected matmul acc to be 32-bit"})
    (f,) = [f for f in g.judge()[0] if f.check == "compile"]
    assert f.facts()["rule_id"] == "matmul-accumulator"
    assert "preferred_element_type=jnp.float32" in fix_line(f) and "(8, 128)" not in fix_line(f)
    assert "32-bit result" in f.message


def test_a_check_whose_runs_timed_out_while_the_test_passed_costs_nothing():
    g = Grading("matmul")
    for run in g.plan.probe_runs("grid-order", g.case).values():
        g.outcomes[run] = Outcome("timeout", phase="run", limit_s=10.0)
    found, notes = g.judge("grid-order")
    assert found == [] and "ran out of time" in notes[0].text


def test_a_check_stopped_by_a_recognised_error_carries_it():
    g = Grading("add")
    for run in g.plan.probe_runs("races", g.case).values():
        g.outcomes[run] = Outcome("error", error_type="IndexError",
                                  message="Out-of-bounds block index (0, 3) for input x")
    (f,), notes = g.judge("races")
    assert f.id == "out-of-bounds" and notes == []


def test_a_check_whose_test_fails_too_is_blocked_not_charged_twice():
    g = Grading("add")
    g.outcomes[g.test("tpu-interpret")] = Outcome("error", error_type="ValueError", message="bad")
    for run in g.plan.probe_runs("grid-order", g.case).values():
        g.outcomes[run] = Outcome("error", error_type="ValueError", message="bad")
    (f,), _ = g.judge("grid-order")
    assert f.problem == "check-not-run" and f.facts()["test_rung"] == "tpu-interpret"


def test_a_settled_check_carries_the_settling_finding():
    from autograder.grading.findings import Finding
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

    from autograder.grading import scoring
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
    from autograder.grading import unconfirmed
    from autograder.grading.findings import Finding
    a = spec.find("softmax")
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
