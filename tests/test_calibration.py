"""Time limits from the instructor solution's measured times (pure logic, no JAX)."""
import shutil
from pathlib import Path

from autograder import spec
from autograder.grading import assignments
from autograder.grading.probes import PLANNERS
from autograder.grading.run import calibration, plan as planning
from autograder.grading.run.calibration import MARGIN, MIN_RUN_S, Measured, Timing
from autograder.pallas_surface.release import INSTALLED

REPO = Path(__file__).resolve().parent.parent


def _assignment(tmp_path, slug="add"):
    folder = tmp_path / slug
    shutil.copytree(REPO / "assignments" / slug, folder, ignore=shutil.ignore_patterns("calibration-*.json"))
    return assignments.load(folder)


def test_limits_come_from_the_measured_time_within_floor_and_ceiling(tmp_path):
    a = _assignment(tmp_path)
    plan = planning.build(a, a.cases, a.rungs, 1, planners=PLANNERS)
    runs = list(plan.runs)
    measured = {runs[0]: Measured(0.2, 12), runs[1]: Measured(3.0, 12), runs[2]: Measured(100.0, 12)}
    calibration.save(a, 1.5, measured)
    timing = Timing(a, calibration.load(a))
    assert timing.limit(runs[0]) == MIN_RUN_S                       # floor
    assert timing.limit(runs[1]) == 3.0 * MARGIN
    assert timing.limit(runs[2]) == a.limits.case_s                 # ceiling
    assert timing.limit(runs[3]) == a.limits.case_s                 # not measured: the ceiling
    # A student's grid four times the solution's gets four times as long.
    assert timing.after_trace(runs[1], 48) == min(a.limits.case_s, 4 * 3.0 * MARGIN)
    assert timing.after_trace(runs[1], 6) == 3.0 * MARGIN
    assert timing.startup() == max(calibration.MIN_STARTUP_S, MARGIN * 1.5)


def test_a_calibration_for_another_spec_is_not_used(tmp_path):
    a = _assignment(tmp_path)
    plan = planning.build(a, a.cases, a.rungs, 1, planners=PLANNERS)
    calibration.save(a, 1.0, {plan.runs[0]: Measured(3.0, 1)})
    assert calibration.load(a) is not None
    (a.folder / "spec.toml").write_text((a.folder / "spec.toml").read_text() + "\n# edited\n")
    assert calibration.load(a) is None
    assert "made for another spec.toml" in calibration.why_not(a)
    assert Timing(a, None).limit(plan.runs[0]) == a.limits.case_s


def test_a_calibration_for_another_release_is_ignored_and_says_so(tmp_path):
    a = _assignment(tmp_path)
    plan = planning.build(a, a.cases, a.rungs, 1, planners=PLANNERS)
    path = calibration.save(a, 1.0, {plan.runs[0]: Measured(3.0, 1)})
    assert path.name == f"calibration-{INSTALLED}.json" and calibration.why_not(a) is None
    other = a.folder / "calibration-0.0.1.json"
    other.write_text(path.read_text().replace(f'"jax": "{INSTALLED}"', '"jax": "0.0.1"'))
    path.unlink()
    assert calibration.load(a) is None
    assert calibration.why_not(a) == (f"no calibration-{INSTALLED}.json (calibration-0.0.1.json are for other JAX "
                                      f"releases, ignored): every run gets the spec's ceiling; run "
                                      f"`pallas-autograder calibrate add` with jax {INSTALLED}")
    # A file under this release's name but made with another release is not trusted either.
    path.write_text(other.read_text())
    assert calibration.load(a) is None and "made with jax '0.0.1', ignored" in calibration.why_not(a)


def test_a_fixed_timeout_overrides_everything(tmp_path):
    a = _assignment(tmp_path)
    plan = planning.build(a, a.cases, a.rungs, 1, planners=PLANNERS)
    calibration.save(a, 1.0, {plan.runs[0]: Measured(3.0, 1)})
    timing = Timing(a, calibration.load(a), fixed_s=5.0)
    assert timing.limit(plan.runs[0]) == 5.0 and timing.after_trace(plan.runs[0], 10 ** 6) == 5.0


def test_runs_are_named_stably_across_gradings(tmp_path):
    a = _assignment(tmp_path)
    one = planning.build(a, a.cases, a.rungs, 1, planners=PLANNERS)
    two = planning.build(a, a.cases, a.rungs, 2, planners=PLANNERS)
    assert [calibration.run_id(r) for r in one.runs] == [calibration.run_id(r) for r in two.runs]
    assert len({calibration.run_id(r) for r in one.runs}) == len(one.runs)


def test_bundled_calibrations_match_their_specs():
    for slug in spec.available():
        a = assignments.find(slug)
        assert calibration.load(a) is not None, f"run: pallas-autograder calibrate {slug}"
