"""The run plan (pure logic, no JAX): every run built once, typed, and what
crosses to the child."""
import json
import shutil
from pathlib import Path

import pytest

from autograder import spec
from autograder.grading import assignments
from autograder.grading.probes import PLANNERS
from autograder.grading.run import plan as planning

REPO = Path(__file__).resolve().parent.parent


def _plan(slug="matmul", **kw):
    a = assignments.find(slug)
    return planning.build(a, a.cases, a.rungs, 7, **{"planners": PLANNERS, **kw})


def test_correctness_runs_cover_every_case_and_rung():
    plan = _plan()
    tests = plan.correctness()
    assert [(r.case.name, r.rung) for r in tests] == \
        [(c.name, rung) for c in plan.assignment.cases for rung in plan.assignment.rungs]
    assert all(r.probe is None and r.kind == "kernel" for r in tests)
    assert [r.index for r in plan.runs] == list(range(len(plan.runs)))


def test_every_run_of_a_graded_case_shares_one_draw_and_every_kernel_run_a_fill():
    plan = _plan()
    for case in plan.cases:
        g, t = plan.test_run(case.name, "generic"), plan.test_run(case.name, "tpu-interpret")
        assert g.draw is t.draw and g.draw.entropy == (case.seed, 7, 0)
        poisoning = plan.probe_runs("poisoning", case.name)
        assert {v for v in poisoning if v.startswith("fill")} == {"fill-2"}
        assert all(r.draw is t.draw and r.rung == "tpu-interpret" for v, r in poisoning.items() if v != "index-maps")
    # Every kernel run fills unwritten memory from the run key, the tests and the probes
    # alike: a probe run varies its own switch, and its fill only when the fill is the switch.
    kernel = [r for r in plan.runs if r.kind == "kernel"]
    assert all(r.fill is not None for r in kernel)
    test_fill = plan.test_run(plan.cases[0].name, "generic").fill
    assert {r.fill for r in kernel if r.probe in (None, "grid-order", "races", "numerics")} == {test_fill}
    assert test_fill.seed[:2] == (7, 0) and not test_fill.finite
    fills = {r.fill for r in kernel if r.probe == "poisoning"}
    assert len(fills) == 1 and test_fill not in fills


def test_the_race_detector_rides_on_runs_that_happen_anyway():
    plan = _plan()
    for case in plan.cases:
        races = plan.probe_runs("races", case.name)
        assert races["races-1core"] is plan.test_run(case.name, "tpu-interpret")
        assert races["races-1core"].races and races["races-1core"].capture
        assert races["races-2core"] is plan.probe_runs("grid-order", case.name)["seed-1-2cores"]
    assert not any(r.races for r in plan.runs if r.rung == "generic")
    # Without the races probe, no run detects races.
    from dataclasses import replace
    a = plan.assignment
    bare = replace(a, probes=tuple(p for p in a.probes if p.name != "races"))
    assert not any(r.races for r in planning.build(bare, bare.cases, bare.rungs, 7, planners=PLANNERS).runs)


def test_static_runs_come_first_and_a_shared_analysis_runs_once():
    plan = _plan()
    kinds = [r.kind for r in plan.runs]
    assert kinds == sorted(kinds, key=lambda k: k != "static")
    probe_case = plan.assignment.probe_cases[0]
    scan = plan.probe_runs("index-maps", probe_case)["index-maps"]
    assert plan.probe_runs("poisoning", probe_case)["index-maps"] is scan
    # One scan per traced signature (every case's), shared by the probes that read it
    # (a numerics stress input's scan is its own: its block map).
    scans = [r for r in plan.runs if r.analysis == "index-maps" and r.stress is None and not r.draw.abstract]
    assert len(scans) == len({r.draw.signature for r in plan.runs if r.probe is None})
    assert {r.case.name for r in scans} == {c.name for c in plan.cases}
    assert {ask[0] for ask, index in plan.asks if index == scan.index} == {"index-maps", "poisoning"}


def test_every_static_check_runs_on_every_graded_signature_and_vmem_at_the_production_size_too():
    plan = _plan()
    sigs = {r.draw.signature for r in plan.runs if r.probe is None}
    for analysis in ("index-maps", "compile", "structure"):
        assert {r.draw.signature for r in plan.runs if r.analysis == analysis and r.stress is None
                and not r.draw.abstract} == sigs, analysis
    # At the production size (no test runs it): the VMEM budget, and the index-map scan
    # that says whether the grid and blocks cover the arrays there.
    production = {r.analysis for r in plan.runs if r.draw.abstract and r.probe == "vmem"}
    assert production == {"vmem", "index-maps"}
    vmem = [r for r in plan.runs if r.analysis == "vmem"]
    assert {r.draw.signature for r in vmem} == sigs | {r.draw.signature for r in vmem if r.draw.abstract}
    assert sum(r.draw.abstract for r in vmem) == 1
    # A static run of a graded case reads exactly the data of that case's first correctness run.
    for r in plan.runs:
        if r.analysis == "index-maps" and r.stress is None and not r.draw.abstract:
            assert r.draw is plan.test_run(r.case.name, plan.rungs[0]).draw


def test_every_check_runs_on_every_graded_case_visible_and_secret_whatever_the_run_key():
    a = assignments.find("add")
    for key in range(6):
        plan = planning.build(a, a.cases, a.rungs, key, planners=PLANNERS)
        for probe in ("index-maps", "compile", "structure", "poisoning", "grid-order", "races"):
            assert plan.probe_cases(probe) == a.cases, (probe, key)
            if probe != "grid-order":
                assert all(set(plan.probe_runs(probe, c.name)) == set(plan.probe_runs(probe, a.cases[0].name))
                           for c in a.cases), probe
        # Grid order: every seed on one core and two on the probe case; on every other case,
        # visible or secret, the first seed on two cores (the races probe's two-core run too).
        first = next(c.name for c in a.cases if c.name in a.probe_cases)
        assert set(plan.probe_runs("grid-order", first)) == {"seed-1", "seed-1-2cores", "seed-2", "seed-2-2cores"}
        assert all(set(plan.probe_runs("grid-order", c.name)) == {"seed-1-2cores"} for c in a.cases if c.name != first)
    # The numerics stress inputs are inputs of their own, built on one case.
    m = assignments.find("matmul")
    plan = planning.build(m, m.cases, m.rungs, 1, planners=PLANNERS)
    assert [c.name for c in plan.probe_cases("numerics")] == list(m.probe_cases[:1])


def test_every_visible_case_and_stress_input_gets_one_index_map_scan_for_its_block_maps():
    plan = _plan()
    scans = [r for r in plan.runs if r.analysis == "index-maps"]
    visible = [c.name for c in plan.cases if c.visible]
    # Every case is scanned (the index-map probe scans every traced signature); the maps
    # draw visible cases only.
    assert set(visible) <= {r.case.name for r in scans if r.stress is None} == {c.name for c in plan.cases}
    assert all(r.kind == "static" for r in scans)
    # A case's scan reads its first correctness run's draw (no new inputs).
    bf16 = next(r for r in scans if r.case.name == "bf16-256x384x256")
    assert bf16.draw is plan.test_run(bf16.case.name, "generic").draw
    stress = {r.stress.name for r in scans if r.stress is not None}
    assert stress == {s.name for s in plan.assignment.probe("numerics").settings}
    # Without the probes that scan (index maps, poisoning), only visible cases get a scan
    # of their own (for the maps).
    from dataclasses import replace
    a = plan.assignment
    bare = replace(a, probes=tuple(p for p in a.probes if p.name not in ("index-maps", "poisoning")))
    scanned = {r.case for r in planning.build(bare, bare.cases, bare.rungs, 7, planners=PLANNERS).runs
               if r.analysis == "index-maps" and r.stress is None and not r.draw.abstract}
    assert sorted(c.name for c in scanned) == sorted(visible)


def test_stress_and_production_draws_are_their_own():
    plan = _plan()
    probe_case = plan.assignment.probe_cases[0]
    vmem = plan.probe_runs("vmem", probe_case)["vmem"]
    assert vmem.draw.abstract and vmem.draw.case.dim_map == {"M": 8192, "K": 8192, "N": 8192}
    bf16 = plan.probe_runs("numerics", probe_case)["stress-long-k-bf16"]
    assert bf16.stress.name == "long-k-bf16" and bf16.rung == "generic"
    assert bf16.draw.case.dtype == "bfloat16" and bf16.draw.case.dim_map["K"] == 4096
    assert bf16.case.name == probe_case   # the graded case it belongs to


def test_the_child_learns_neither_case_names_nor_probes_nor_limits():
    plan = _plan()
    text = json.dumps([r.to_child([]) for r in plan.runs])
    # (A static run names its analysis: the child runs it. Dynamic probes stay unnamed.)
    secrets = [c.name for c in plan.assignment.cases] + \
        ["poisoning", "grid-order", "numerics", "fill-1", "seed-1", "limit", "stress",
         "variant", "hidden"]
    for secret in secrets:
        assert f'"{secret}' not in text, secret    # as (the start of) a key or a value
    child = [r.to_child([]) for r in plan.runs]
    assert [c["id"] for c in child] == [f"r{i}" for i in range(len(plan.runs))]
    assert {c["trace"] for c in child} == {f"t{d.signature}" for d in plan.draws}


def test_selective_runs_plan_no_probes():
    plan = _plan(planners=None)
    assert plan.probes == () and all(r.probe is None for r in plan.runs)


def test_a_replay_knows_which_checks_it_runs_on_less_than_the_whole_grading():
    # Issue 45: a replay of test 1.2 showed P5 and P6 as passed, though poisoning had run
    # on one case of four and grid order without the generic test it compares with.
    a = assignments.find("matmul")

    def partial(cases, rungs, replay=True):
        plan = planning.build(a, cases, rungs, 7, planners=PLANNERS, replay=replay)
        return {p.probe: (p.cases_out, p.rungs_out) for p in plan.partial}
    one = a.cases[:1]      # the probe case: numerics runs on it alone
    assert partial(one, ("tpu-interpret",)) == {
        "index-maps": (3, ()), "compile": (3, ()), "vmem": (3, ()), "structure": (3, ()),
        "poisoning": (3, ("generic",)), "grid-order": (3, ("generic",)), "races": (3, ("generic",)),
        "numerics": (0, ("generic",))}
    # Both rungs of the probe case: numerics runs in full; a static check needs no test run.
    assert "numerics" not in partial(one, a.rungs) and partial(one, a.rungs)["compile"] == (3, ())
    # Another case: numerics would run on its stress inputs, not the probe case's.
    assert partial(a.cases[1:2], a.rungs)["numerics"] == (1, ())
    # Every case on one rung: the static checks run in full, the dynamic ones lack that rung's tests.
    assert partial(a.cases, ("generic",)) == {p: (0, ("tpu-interpret",))
                                              for p in ("poisoning", "grid-order", "races", "numerics")}
    assert partial(a.cases, a.rungs) == {} and partial(one, a.rungs, replay=False) == {}


@pytest.mark.parametrize("name", ["a/b", "with spaces", "größe-ω", "x/y/z · hidden"])
def test_any_case_name_works(tmp_path, name):
    folder = tmp_path / "add"
    shutil.copytree(REPO / "assignments" / "add", folder)
    text = (folder / "spec.toml").read_text().replace('name = "odd-rows"', f'name = "{name}"')
    text = text.replace('probe_cases = ["odd-rows"]', f'probe_cases = ["{name}"]')
    (folder / "spec.toml").write_text(text)
    a = assignments.load(folder)
    plan = planning.build(a, a.cases, a.rungs, 3, planners=PLANNERS)
    assert plan.test_run(name, "generic").case.name == name
    assert a.case(name) in plan.probe_cases("poisoning")
    assert all(r.case.name == name for r in plan.probe_runs("races", name).values())


def test_the_speed_estimate_runs_statically_on_the_production_draw_of_the_vmem_probe():
    plan = _plan()
    speed = plan.speed_runs()
    vmem = next(r for r in plan.runs if r.analysis == "vmem")
    assert [(r.variant, r.analysis, r.rung) for r in speed] == [("production", "speed:v5e", "static")]
    assert speed[0].draw is vmem.draw and speed[0].draw.abstract
    # Without probes (a local --case run), no estimate either.
    quick = planning.build(plan.assignment, plan.cases[:1], plan.rungs[:1], 1)
    assert quick.speed_runs() == ()


def test_the_spec_reader_is_handed_the_registrys_terms_and_names_no_probe_itself():
    from autograder.grading.probes import REGISTRY, TERMS
    assert list(REGISTRY) == list(TERMS) == list(PLANNERS)
    a = assignments.find("matmul")
    assert a.probes and all(r.terms is REGISTRY[r.name].terms for r in a.probes)
    # The spec layer's reader knows no probe of its own: handed none, it refuses every one.
    with pytest.raises(spec.SpecError, match=r"must be a known probe \(\[\]\)"):
        spec.read(spec.locate("matmul"), {})
