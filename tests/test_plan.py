"""The run plan (pure logic, no JAX): every run built once, typed, and what
crosses to the child."""
import json
import shutil
from pathlib import Path

import pytest

from autograder import spec
from autograder.grading import plan as planning
from autograder.grading.probes import PLANNERS

REPO = Path(__file__).resolve().parent.parent


def _plan(slug="matmul", **kw):
    a = spec.find(slug)
    return planning.build(a, a.cases, a.rungs, 7, **{"planners": PLANNERS, **kw})


def test_correctness_runs_cover_every_case_and_rung():
    plan = _plan()
    tests = plan.correctness()
    assert [(r.case.name, r.rung) for r in tests] == \
        [(c.name, rung) for c in plan.assignment.cases for rung in plan.assignment.rungs]
    assert all(r.probe is None and r.kind == "kernel" for r in tests)
    assert [r.index for r in plan.runs] == list(range(len(plan.runs)))


def test_probe_case_runs_share_one_draw_other_cases_one_per_rung():
    plan = _plan()
    probe_case = plan.assignment.probe_cases[0]
    g, t = plan.test_run(probe_case, "generic"), plan.test_run(probe_case, "tpu-interpret")
    assert g.draw is t.draw and g.draw.entropy == (1001, 7, 0)
    hidden = plan.assignment.cases[2].name
    hg, ht = plan.test_run(hidden, "generic"), plan.test_run(hidden, "tpu-interpret")
    assert hg.draw != ht.draw and hg.draw.signature == ht.draw.signature   # one trace, two draws
    fill = plan.probe_runs("poisoning", probe_case)["fill-zero"]
    assert fill.draw is t.draw and fill.fill == 0.0 and fill.rung == "tpu-interpret"


def test_static_runs_come_first_and_a_shared_analysis_runs_once():
    plan = _plan()
    kinds = [r.kind for r in plan.runs]
    assert kinds == sorted(kinds, key=lambda k: k != "static")
    probe_case = plan.assignment.probe_cases[0]
    scan = plan.probe_runs("index-maps", probe_case)["index-maps"]
    assert plan.probe_runs("poisoning", probe_case)["index-maps"] is scan
    own = [r for r in plan.runs if r.analysis == "index-maps" and r.case.name == probe_case and r.stress is None]
    assert own == [scan]
    assert {ask[0] for ask, index in plan.asks if index == scan.index} == {"index-maps", "poisoning"}


def test_every_visible_case_and_stress_input_gets_one_index_map_scan_for_its_block_maps():
    plan = _plan()
    scans = [r for r in plan.runs if r.analysis == "index-maps"]
    visible = [c.name for c in plan.cases if c.visible]
    assert sorted({r.case.name for r in scans if r.stress is None}) == sorted(visible)
    assert all(r.kind == "static" for r in scans)
    # A non-probe case's scan reads its first correctness run's draw (no new inputs).
    bf16 = next(r for r in scans if r.case.name == "bf16-256x384x256")
    assert bf16.probe == planning.BLOCK_MAP and bf16.draw is plan.test_run(bf16.case.name, "generic").draw
    stress = {r.stress.name for r in scans if r.stress is not None}
    assert stress == {s.name for s in plan.assignment.probe("numerics").settings}
    assert not any(c.secret for c in {r.case for r in scans})


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
        ["poisoning", "grid-order", "numerics", "fill-zero", "seed-1", "limit", "stress",
         "variant", "hidden"]
    for secret in secrets:
        assert f'"{secret}' not in text, secret    # as (the start of) a key or a value
    child = [r.to_child([]) for r in plan.runs]
    assert [c["id"] for c in child] == [f"r{i}" for i in range(len(plan.runs))]
    assert {c["trace"] for c in child} == {f"t{d.signature}" for d in plan.draws}


def test_selective_runs_plan_no_probes():
    plan = _plan(planners=None)
    assert plan.probes == () and all(r.probe is None for r in plan.runs)


@pytest.mark.parametrize("name", ["a/b", "with spaces", "größe-ω", "x/y/z · hidden"])
def test_any_case_name_works(tmp_path, name):
    folder = tmp_path / "add"
    shutil.copytree(REPO / "assignments" / "add", folder)
    text = (folder / "spec.toml").read_text().replace('name = "odd-rows"', f'name = "{name}"')
    text = text.replace('probe_cases = ["odd-rows"]', f'probe_cases = ["{name}"]')
    (folder / "spec.toml").write_text(text)
    a = spec.load(folder)
    plan = planning.build(a, a.cases, a.rungs, 3, planners=PLANNERS)
    assert plan.test_run(name, "generic").case.name == name
    assert set(plan.probe_cases("poisoning")) == {a.case(name)}
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


def test_the_probe_registry_and_the_spec_vocabulary_name_the_same_probes():
    from autograder.grading.probes import REGISTRY
    from autograder.spec import PROBES
    assert list(REGISTRY) == list(PROBES) == list(PLANNERS)
    for name, probe in REGISTRY.items():
        assert probe.terms is PROBES[name], name
