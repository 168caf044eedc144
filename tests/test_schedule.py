"""The schedule (pure logic, no JAX): which pending runs outcomes already answered."""
import numpy as np

from autograder.grading import assignments, probes
from autograder.grading.probes import PLANNERS
from autograder.grading.run import plan as planning
from autograder.grading.run.schedule import Schedule
from autograder.isolation.outcome import Outcome
from autograder.pallas_surface.static.facts import decode


def _schedule(slug="add", settle=None):
    a = assignments.find(slug)
    plan = planning.build(a, a.cases, a.rungs, 7, planners=PLANNERS)
    return plan, Schedule(plan, child_inputs=lambda r: [], expected_shape=lambda r: None, settle=settle)


def _drain(s, outcome_of):
    order = []
    while (run := s.next_run()) is not None:
        order.append(run)
        s.record(run, outcome_of(run))
    return order


def test_every_run_once_in_plan_order():
    plan, s = _schedule()
    # In-order reruns explain a hang, a test's fill reruns a wrong output: with nothing
    # hung or wrong they are settled, not run.
    explain = [r for r in plan.runs if r.in_order or r.probe in (planning.UNWRITTEN, planning.NUDGED, planning.STEADY)]
    assert _drain(s, lambda r: Outcome("ok")) == [r for r in plan.runs if r not in explain]
    assert s.pending() == [] and set(s.outcomes) == set(plan.runs)
    assert any(r.in_order for r in explain) and any(not r.in_order for r in explain)
    assert all(s.outcomes[r].status == "settled" and "not needed" in s.outcomes[r].reason for r in explain)


def test_a_tests_fill_reruns_follow_its_wrong_output_only():
    a = assignments.find("add")
    plan = planning.build(a, a.cases, a.rungs, 7, planners=PLANNERS)
    bad = plan.test_run(a.cases[2].name, "tpu-interpret")
    s = Schedule(plan, child_inputs=lambda r: [], expected_shape=lambda r: None,
                 test_failed=lambda run, o: run == bad)
    ran = _drain(s, lambda r: Outcome("ok", output=np.zeros(1)))
    fills = [r for r in ran if r.probe == planning.UNWRITTEN]
    # Two fills, then the first with the second in the padding only, on the generic
    # interpreter, on the failing test's own draw.
    assert len(fills) == 3 and all(r.draw == bad.draw and r.rung == "generic" and r.fill for r in fills)
    assert fills[0].fill != fills[1].fill and fills[0].pad_fill is None is fills[1].pad_fill
    assert (fills[2].fill, fills[2].pad_fill) == (fills[0].fill, fills[1].fill)
    assert planning.unwritten_runs(plan, bad) == tuple(fills)


def test_a_visible_generic_tests_nudged_rerun_follows_its_wrong_output_only():
    a = assignments.find("add")
    plan = planning.build(a, a.cases, a.rungs, 7, planners=PLANNERS)
    nudged = [r for r in plan.runs if r.probe == planning.NUDGED]
    # One per visible case, on its generic test's inputs but for one element; none for a secret case.
    assert [r.case for r in nudged] == [c for c in a.cases if c.visible]
    for r in nudged:
        test = plan.test_run(r.case.name, "generic")
        assert r.rung == "generic" and r.draw.altered == "nudged" and not test.draw.altered and r.fill == test.fill
        assert (r.draw.entropy, r.draw.stream, r.draw.signature) == (test.draw.entropy, test.draw.stream,
                                                                     test.draw.signature)
        assert planning.altered_run(plan, test, planning.NUDGED) == r
    bad = plan.test_run(a.cases[0].name, "generic")
    s = Schedule(plan, child_inputs=lambda r: [], expected_shape=lambda r: None,
                 test_failed=lambda run, o: run == bad)
    ran = _drain(s, lambda r: Outcome("ok", output=np.zeros(1)))
    assert [r for r in ran if r.probe == planning.NUDGED] == [planning.altered_run(plan, bad, planning.NUDGED)]


def test_a_reduction_assignment_also_reruns_a_visible_test_with_every_reduction_block_alike():
    a = assignments.find("flash_attention")
    plan = planning.build(a, a.cases, a.rungs, 7, planners=PLANNERS)
    steady = [r for r in plan.runs if r.probe == planning.STEADY]
    assert [r.case for r in steady] == [c for c in a.cases if c.visible]
    assert all(r.draw.altered == "steady" and r.rung == "generic" for r in steady)
    assert {r.draw.signature for r in steady} <= {t.draw.signature for t in plan.correctness()}   # no new trace
    assert not [r for r in planning.build(a, a.cases, a.rungs, 7).runs if r.probe]     # (no probes: none)
    # Last in the plan (they never hold up a run that scores), and once: the first failing case's.
    assert plan.runs[-len(steady) - len([r for r in plan.runs if r.probe == planning.NUDGED]):] == tuple(
        r for r in plan.runs if r.probe in (planning.NUDGED, planning.STEADY))
    failing = {c.name for c in a.cases if c.visible}
    s = Schedule(plan, child_inputs=lambda r: [], expected_shape=lambda r: None,
                 test_failed=lambda run, o: run.case.name in failing)
    ran = [r for r in _drain(s, lambda r: Outcome("ok", output=np.zeros(1)))
           if r.probe in (planning.NUDGED, planning.STEADY)]
    first = next(c for c in a.cases if c.visible)
    assert {r.case for r in ran} == {first} and {r.probe for r in ran} == {planning.NUDGED, planning.STEADY}


def test_an_in_order_rerun_follows_a_hang_on_its_case_only():
    plan, s = _schedule("dma_scale")     # two probe cases
    bad = plan.assignment.probe_cases[1]
    ran = _drain(s, lambda r: Outcome("timeout", phase="run", limit_s=10.0)
                 if r.case.name == bad and r.rung == "tpu-interpret" and not r.in_order else Outcome("ok"))
    reruns = [r for r in ran if r.in_order]
    assert [r.case.name for r in reruns] == [bad]
    # The case's other TPU probe runs are not tried (they would hang too); the rerun is.
    assert all(s.outcomes[r].not_run for r in plan.runs
               if r.probe and r.case.name == bad and r.rung == "tpu-interpret" and not r.in_order)


def test_a_trace_that_hangs_stops_every_run_of_that_trace():
    plan, s = _schedule()
    ran = _drain(s, lambda r: Outcome("timeout", phase="trace", limit_s=10.0))
    # One run per input signature was tried; every other run was answered by it.
    assert len(ran) == len({r.draw.signature for r in plan.runs})
    skipped = [o for r, o in s.outcomes.items() if r not in ran]
    assert skipped and all(o.not_run and o.status == "timeout" and "tracing" in o.reason for o in skipped)


def test_a_kernel_that_hangs_on_one_case_keeps_its_other_tests():
    plan, s = _schedule()
    bad = plan.assignment.cases[2].name
    ran = _drain(s, lambda r: Outcome("timeout", phase="run", limit_s=10.0)
                 if r.case.name == bad and r.rung == "tpu-interpret" else Outcome("ok"))
    assert all(r in ran for r in plan.correctness())
    # The test hung, and its in-order rerun (run to explain a hang) hung too.
    hung = [r for r, o in s.outcomes.items() if o.status == "timeout" and not o.not_run]
    assert sorted((r.probe or "", r.variant) for r in hung) == [("", ""), ("races", "in-order")]
    # Its probe reruns of that case on that rung were not started (they would hang too).
    assert all(s.outcomes[r].not_run for r in plan.runs
               if r.probe and r.case.name == bad and r.rung == "tpu-interpret" and not r.in_order)


def test_a_probe_run_that_hangs_skips_only_its_own_probe_on_that_case():
    plan, s = _schedule()
    case = plan.assignment.cases[0].name
    ran = _drain(s, lambda r: Outcome("timeout", phase="run", limit_s=10.0)
                 if r.probe == "grid-order" and r.case.name == case else Outcome("ok"))
    hung = [r for r in ran if s.outcomes[r].status == "timeout"]
    assert len(hung) == 1 and hung[0].probe == "grid-order"
    assert all(s.outcomes[r].not_run for r in plan.runs if r.probe == "grid-order" and r.case.name == case
               and r is not hung[0])
    # Every other check still runs, on this case and the others.
    assert all(r in ran for r in plan.runs if r.probe in ("poisoning", "races") and not r.in_order)
    assert all(r in ran for r in plan.runs if r.probe == "grid-order" and r.case.name != case)


def test_a_rung_where_every_run_hangs_stops_after_two():
    plan, s = _schedule()
    ran = _drain(s, lambda r: Outcome("timeout", phase="run", limit_s=10.0)
                 if r.rung == "tpu-interpret" else Outcome("ok"))
    tpu_tried = [r for r in ran if r.rung == "tpu-interpret"]
    assert len([r for r in tpu_tried if r.probe is None]) == 2
    # The probe case's own hang answered its TPU probe reruns before they started,
    # but for one in-order rerun (it hangs too, so no other is tried).
    assert [r.variant for r in tpu_tried if r.probe is not None] == ["in-order"]
    assert all(s.outcomes[r].status == "timeout" for r in plan.runs if r.rung == "tpu-interpret")
    assert all(s.outcomes[r].ok for r in plan.runs if r.rung != "tpu-interpret"
               and r.probe not in (planning.UNWRITTEN, planning.NUDGED, planning.STEADY))


def test_an_out_of_bounds_index_map_settles_the_tpu_probes():
    plan, s = _schedule(settle=probes.settle)
    case = plan.assignment.probe_cases[0]
    facts = {"calls": [{"grid": [3, 4], "dimension_semantics": ["arbitrary"] * 2, "skipped": [],
                        "operands": [{"operand": "input 0", "is_output": False, "array_shape": [24, 384],
                                      "block_shape": [8, 128], "grid": [3, 4], "partial_blocks": [],
                                      "partial_count": 0, "out_of_bounds_count": 3,
                                      "out_of_bounds": [{"grid_point": [0, 3], "block_index": [0, 3],
                                                         "element_range": [[0, 8], [384, 512]],
                                                         "array_shape": [24, 384]}]}]}]}
    scan = decode("index-maps", facts)
    ran = _drain(s, lambda r: Outcome("ok", facts=scan) if r.analysis == "index-maps" else Outcome("ok"))
    settled = [r for r, o in s.outcomes.items() if o.status == "settled"
               and r.probe not in (planning.UNWRITTEN, planning.NUDGED, planning.STEADY)]
    # (Here every case's scan finds the block outside: each case's TPU probes are settled.)
    assert settled and all(r.probe and r.rung == "tpu-interpret" for r in settled)
    assert case in {r.case.name for r in settled}
    assert not any(r in ran for r in settled)
    assert all(s.outcomes[r].settled_by.id == "out-of-bounds" for r in settled)
    assert all(r in ran for r in plan.correctness())


def test_a_kernel_without_dma_settles_its_eager_dma_runs():
    plan, s = _schedule(settle=probes.settle)

    def structure(dma):
        return decode("structure", {"pallas_calls": 1, "outside": {}, "manual_dma": dma,
                                    "kernel_primitives": ["dma_start", "dma_wait"] if dma else ["add"]})
    secret = plan.assignment.cases[2].name
    ran = _drain(s, lambda r: Outcome("ok", facts=structure(r.case.name == secret)) if r.analysis == "structure"
                 else Outcome("ok"))
    eager = [r for r in plan.runs if ("dma_execution_mode", "eager") in r.params]
    assert {r.case.name for r in eager} == {c.name for c in plan.cases}
    # Where the kernel starts DMAs, DMAs completing at their start may change what it computes.
    assert [r.case.name for r in eager if r in ran] == [secret]
    assert all(s.outcomes[r].status == "settled" and "starts no DMA" in s.outcomes[r].reason
               for r in eager if r.case.name != secret)
