"""The speed estimate's scoring and the TPU stage behind the device protocol.

Without JAX: the spec's [speed] table, the curve, the geometric mean, the
stopping rule, every anomaly gate, the leaderboard, the merge, and the stage
on a fake device (chip-reject, replay and caching cheats defeated by fresh
inputs and rechecks, honest timing). With JAX: chip-divergence against the
real interpreter on a real traced program, the estimate in a real grading,
and `speed --device fake` then `merge` through the CLI. The real TPU's tests
are marked ``tpu`` and skip where none is visible.
"""
import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import CORPUS, REPO, run_cli, trimmed_add

from autograder import spec
from autograder.feedback import tpu_timing
from autograder.feedback.results_format import validate
from autograder.speed import grade as speed_grade
from autograder.tpu import results as tpu_results, stage, timing
from autograder.tpu.command import passed_interpreters
from autograder.tpu.device import DeviceInfo, InputSpec, Kernel
from autograder.tpu.fake import FakeDevice, Script

SPEED = textwrap.dedent('''
    [speed]
    chip = "v5e"
    points = 2
    tpu_points = 4
    curve = [[0.5, 0.0], [1.0, 1.0]]
    leaderboard = true
    [[speed.sizes]]
    name = "s1"
    dims = { M = 64, N = 256 }
    dtype = "float32"
    [[speed.sizes]]
    name = "s2"
    dims = { M = 128, N = 128 }
    dtype = "float32"
    ''')
CASES = textwrap.dedent('''
    [[cases]]
    name = "small"
    dims = { M = 16, N = 256 }
    seed = 101
    points = 2
    ''')


@pytest.fixture
def small_add(tmp_path):
    """`add` with one case, no probes, and two small [speed] sizes, scored."""
    return spec.load(trimmed_add(tmp_path / "assignments", CASES, SPEED))


# -- the spec ---------------------------------------------------------------

def test_speed_table_reads_and_defaults(small_add):
    s = small_add.speed
    assert (s.chip, s.points, s.tpu_points, s.leaderboard) == ("v5e", 2.0, 4.0, True)
    assert [z.name for z in s.sizes] == ["s1", "s2"] and s.curve == ((0.5, 0.0), (1.0, 1.0))
    # matmul has no [speed] table: its production size, unscored.
    m = spec.find("matmul").speed
    assert [z.name for z in m.sizes] == ["production"] and (m.points, m.tpu_points, m.leaderboard) == (0, 0, False)


@pytest.mark.parametrize("table,key,rule", [
    ('chip = "v9"', "speed.chip", "must be one of"),
    ("curve = [[1.0, 1.0], [0.5, 0.0]]", "speed.curve", "speeds increasing"),
    ("curve = [[0.5, 1.5]]", "speed.curve", "shares in 0..1"),
    ("points = -1", "speed.points", "points >= 0"),
    ("wobble = 1", "speed.wobble", "not a known key"),
])
def test_broken_speed_tables_name_the_key_and_rule(tmp_path, table, key, rule):
    folder = trimmed_add(tmp_path / "a", CASES, "\n[speed]\n" + table + "\n[[speed.sizes]]\nname = \"s\"\n"
                         "dims = { M = 64, N = 256 }\ndtype = \"float32\"\n")
    with pytest.raises(spec.SpecError) as e:
        spec.load(folder)
    assert e.value.key == key and rule in e.value.rule


def test_speed_without_sizes_or_production_is_refused(tmp_path):
    with pytest.raises(spec.SpecError) as e:
        spec.load(trimmed_add(tmp_path / "a", CASES, "\n[speed]\npoints = 1\n"))
    assert e.value.key == "speed.sizes" and "[production]" in e.value.rule


# -- the curve, the mean --------------------------------------------------------

def test_the_curve_is_linear_between_its_points_and_flat_outside(small_add):
    s = small_add.speed
    assert [s.share(r) for r in (0.1, 0.5, 0.75, 1.0, 3.0)] == [0.0, 0.0, 0.5, 1.0, 1.0]
    assert speed_grade.curve_score(s, 2.0, 0.75) == 1.0 and speed_grade.curve_score(s, 2.0, None) == 0.0


def test_geometric_mean_across_sizes():
    assert speed_grade.geometric_mean([2.0, 0.5]) == pytest.approx(1.0)
    assert speed_grade.geometric_mean([1.0, None]) is None
    r = stage.StageResult("x", "timed", sizes=(_size("a", 4e-3), _size("b", 1e-3)))
    assert r.seconds == pytest.approx(2e-3)


# -- the stopping rule ------------------------------------------------------------

def test_steady_calls_stop_once_the_error_is_small_and_the_minimums_are_met():
    s = timing.measure(lambda i: 0.02 * (1 + 0.001 * (-1) ** i))
    assert s.stopped == "converged" and len(s.times) == 10 and s.rse < 0.01 and not s.noisy
    # Fast calls: the 100 ms minimum, not the 10 calls, decides.
    fast = timing.measure(lambda i: 1e-3)
    assert fast.stopped == "converged" and len(fast.times) == 100


def test_a_kernel_too_fast_for_the_minimum_time_stops_at_the_cap_without_being_noisy():
    s = timing.measure(lambda i: 1e-6, timing.Rule(max_calls=100))
    assert s.stopped == "cap" and len(s.times) == 100 and not s.noisy


def test_noisy_calls_stop_at_the_cap_and_are_flagged():
    rng = np.random.default_rng(0)
    s = timing.measure(lambda i: float(rng.choice([1e-3, 5e-3])), timing.Rule(max_calls=50))
    assert s.stopped == "cap" and len(s.times) == 50 and s.noisy and s.rse > 0.01
    assert 1e-3 <= s.median <= 5e-3


# -- anomaly gates -------------------------------------------------------------------

def _size(name, median, floor=1e-6, stopped="converged", rse=0.001, mismatched=()):
    return stage.SizeTime(name, median, rse, 20, stopped, "profiler", 0.5, floor, (1, 2, 3), tuple(mismatched))


@pytest.mark.parametrize("size,gate", [
    (_size("a", 1e-7, floor=1e-6), "faster-than-roofline"),
    (_size("a", 11e-3), "slow"),
    (_size("a", 1e-3, stopped="cap", rse=0.04), "noisy"),
    (_size("a", 1e-3, mismatched=(4,)), "output-check"),
])
def test_every_anomaly_gate_holds_a_result(size, gate):
    found = stage.holds((size,), {"a": 1e-3})
    assert [h.split(":")[0] for h in found] == [gate]
    assert stage.holds((_size("a", 1e-3),), {"a": 1e-3}) == ()


def test_the_noisy_gate_follows_the_rule_in_use():
    loose = timing.Rule(target_rse=0.05)
    noisy = _size("a", 1e-3, stopped="cap", rse=0.04)
    assert stage.holds((noisy,), {"a": 1e-3}, loose) == ()
    s = timing.measure(lambda i: 1e-3 * (1 + 0.03 * (-1) ** i), timing.Rule(max_calls=20, target_rse=1e-6))
    assert s.stopped == "cap" and s.noisy and not loose.noisy(s.stopped, s.rse)


# -- the stage on a fake device ----------------------------------------------------------

def _ctx(a, script, solution=None):
    dev = FakeDevice(script)
    from autograder.grading.draws import load_reference
    ref = load_reference(a)
    return stage.Context(a, dev, dev.info(), lambda *x: np.asarray(ref(*x), np.float64),
                         interpret=_no_interpreter, secret=12345, rule=timing.Rule(), solution=solution or {})


def _no_interpreter(program, args, dtypes):
    raise AssertionError("the interpreters are consulted only when the chip's output is wrong")


def _honest(a):
    from autograder.grading.draws import load_reference
    return load_reference(a)


PROGRAMS = {"s1": b"{}", "s2": b"{}"}


def test_an_honest_kernel_is_timed_on_fresh_inputs_and_its_outputs_checked(small_add):
    script = Script(compute=_honest(small_add), times=(2e-2, 2.02e-2, 1.98e-2))
    r = stage.run(_ctx(small_add, script, {"s1": 2e-2, "s2": 2e-2}), "honest", PROGRAMS)
    assert r.status == "timed" and r.holds == () and r.seconds == pytest.approx(2e-2)
    assert all(len(s.checked) == 3 and s.mismatched == () and s.calls >= 10 for s in r.sizes)


def test_device_time_from_the_profiler_is_preferred_and_the_wall_time_kept(small_add):
    script = Script(compute=_honest(small_add), times=(2e-2,), profiled=(5e-3, 5.1e-3))
    r = stage.run(_ctx(small_add, script), "profiled", PROGRAMS)
    s = r.sizes[0]
    assert (s.source, s.wall_median_s) == ("profiler", 2e-2) and s.median_s == pytest.approx(5.05e-3)


@pytest.mark.parametrize("times,solution,gate", [
    ((1e-9,), {}, "faster-than-roofline"),
    ((2e-2,), {"s1": 1e-3, "s2": 2e-2}, "slow"),
])
def test_the_gates_hold_results_timed_on_the_fake_device(small_add, times, solution, gate):
    script = Script(compute=_honest(small_add), times=times)
    r = stage.run(_ctx(small_add, script, solution), gate, PROGRAMS)
    assert r.status == "held" and {h.split(":")[0] for h in r.holds} == {gate}


@pytest.mark.parametrize("behaviour", ["replay", "stale"])
def test_replayed_or_cached_outputs_are_caught_by_the_recheck(small_add, behaviour):
    script = Script(compute=_honest(small_add), times=(2e-2,), behaviour=behaviour)
    r = stage.run(_ctx(small_add, script), behaviour, PROGRAMS)
    assert r.status == "held" and {h.split(":")[0] for h in r.holds} == {"output-check"}
    assert all(s.mismatched for s in r.sizes)


def test_inputs_differ_on_every_call_and_between_submissions(small_add):
    ctx = _ctx(small_add, Script(compute=_honest(small_add)))
    k = stage.kernel(small_add, "s1", b"{}", {"M": 64, "N": 256}, "float32")
    c = ctx.device.compile(k)
    seeds = {stage.seed(ctx.secret, sub, "s1", "timed", i) for sub in ("a", "b") for i in range(50)}
    assert len(seeds) == 100
    x0, x1 = (ctx.device.inputs(c, stage.seed(ctx.secret, "a", "s1", "timed", i)) for i in (0, 1))
    assert not np.array_equal(x0[0], x1[0])


def test_a_compiler_refusal_is_chip_reject_with_its_message(small_add):
    script = Script(compute=_honest(small_add), reject="Mosaic: unsupported shape (3, 5) for vector.load")
    r = stage.run(_ctx(small_add, script), "rejected", PROGRAMS)
    assert r.status == "chip-reject" and "vector.load" in r.message


def test_a_missing_program_is_an_error_not_a_crash(small_add):
    r = stage.run(_ctx(small_add, Script(compute=_honest(small_add))), "partial", {"s1": b"{}"})
    assert r.status == "error" and "s2" in r.message


# -- results.json: the leaderboard and the merge ----------------------------------------------

def _doc():
    return {"score": 10.0, "execution_time": 1.0, "output": "", "output_format": "md", "visibility": "visible",
            "stdout_visibility": "hidden",
            "tests": [{"name": "small", "number": "1.1", "score": 10.0, "max_score": 10.0, "status": "passed",
                       "output": "", "visibility": "visible"},
                      tpu_timing.entry(spec.Speed(tpu_points=4), None, None, None)],
            "leaderboard": [{"name": "checks ran", "value": 1, "order": "desc"}]}


def test_the_cpu_grading_says_not_run_and_the_merge_replaces_it(small_add):
    doc = _doc()
    assert doc["tests"][1]["score"] == 0 and "Not run" in doc["tests"][1]["output"]
    result = stage.StageResult("x", "timed", sizes=(_size("s1", 1.5e-3), _size("s2", 1.5e-3))).to_json()
    device = {"kind": "tpu", "chip": "v5e", "jax": "0.10.2", "libtpu": "0.0.x"}
    merged = tpu_results.merge(doc, small_add.speed, result, device, 1.2e-3)
    assert validate(merged) == []
    t1 = next(t for t in merged["tests"] if t["number"] == "T1")
    # 1.2/1.5 = 0.8 of the solution's speed: the curve gives 0.6 of 4 points.
    assert t1["score"] == pytest.approx(2.4) and merged["score"] == pytest.approx(12.4)
    assert {"name": "TPU v5e time (ms)", "value": 1.5, "order": "asc"} in merged["leaderboard"]
    assert merged["extra_data"]["tpu_stage"]["device"]["libtpu"] == "0.0.x"
    again = tpu_results.merge(merged, small_add.speed, {**result, "status": "held", "holds": ["noisy: x"]},
                              device, 1.2e-3)
    assert again["score"] == pytest.approx(10.0) and not any(r["name"].startswith("TPU") for r in again["leaderboard"])
    assert "Held for review" in next(t for t in again["tests"] if t["number"] == "T1")["output"]


@pytest.mark.parametrize("status,needle", [
    ("chip-reject", "Refused by the TPU compiler"), ("chip-divergence", "reported upstream"),
    ("not-queued", "only kernels that pass every correctness test")])
def test_each_stage_outcome_has_its_feedback(small_add, status, needle):
    result = {"status": status, "message": "Mosaic: <script>x</script>", "evidence": {"index": [0, 1]}}
    entry = tpu_timing.entry(small_add.speed, result, {"chip": "v5e"}, 1e-3)
    assert needle in entry["output"] and entry["score"] == 0
    html = tpu_timing.entry(small_add.speed, result, {"chip": "v5e"}, 1e-3, fmt="html")["output"]
    assert "<script>" not in html


def test_the_estimate_leaderboard_needs_passing_tests(small_add):
    g = speed_grade.SpeedGrade("v5e", (speed_grade.SizeEstimate("s1", (), "float32", _est(2e-3), _est(2e-3)),),
                               2.0, 2.0, leaderboard=True)
    assert speed_grade.leaderboard(g) == [{"name": "Estimated TPU v5e time (ms)", "value": 2.0, "order": "asc"}]
    gated = speed_grade.SpeedGrade("v5e", g.sizes, 2.0, 0.0, "earns its points once every correctness test passes",
                                   correct=False, leaderboard=True)
    assert speed_grade.leaderboard(gated) == []


def test_a_scored_estimate_says_why_it_earns_nothing_with_or_without_a_leaderboard():
    from autograder.feedback.render import render_speed
    sizes = (speed_grade.SizeEstimate("s1", (("M", 64),), "float32", _est(2e-3), _est(2e-3)),)
    for board in (False, True):
        g = speed_grade.SpeedGrade("v5e", sizes, 2.0, 0.0, "earns its points once every correctness test passes",
                                   correct=False, leaderboard=board)
        text = " ".join(render_speed(speed_grade.view(g), "text").split())
        assert "0 of 2 points. Earns its points once every correctness test passes." in text
    unscored = speed_grade.SpeedGrade("v5e", sizes, 0.0, 0.0, "x", correct=False, leaderboard=True)
    assert "Not on the leaderboard until every correctness test passes" in " ".join(render_speed(
        speed_grade.view(unscored), "text").split())


def _est(seconds):
    from autograder.speed.model import Estimate
    return Estimate(seconds, "memory", 1, 1, 0.0, 1, "v5e", 0.0, seconds / 2, "", 0.0, seconds, 0.0)


def test_only_kernels_that_passed_every_correctness_test_are_queued():
    ok = {"tests": [{"number": "1.1", "status": "passed"}, {"number": "P1", "status": "failed"}]}
    assert passed_interpreters(ok)
    assert not passed_interpreters({"tests": [{"number": "1.1", "status": "failed"}]})
    assert not passed_interpreters({"tests": [{"number": "P1", "status": "passed"}]}) and not passed_interpreters(None)


# -- with JAX -----------------------------------------------------------------------------

@pytest.mark.jax
@pytest.mark.grading
def test_chip_divergence_against_the_real_interpreter_on_a_real_program(small_add, tmp_path):
    from autograder.tpu import command, interpreter
    programs, flops = command.solution_programs(small_add, REPO / "solutions" / "add.py")
    assert set(programs) == {"s1", "s2", "check:small"} and flops == {"s1": 0.0, "s2": 0.0}  # no matrix work
    ctx = _ctx(small_add, Script(compute=_honest(small_add), diverge=0.01))
    ctx = stage.Context(**{**ctx.__dict__, "interpret": interpreter.generic, "evidence_dir": tmp_path})
    r = stage.run(ctx, "diverging", programs)
    assert r.status == "chip-divergence"
    ev = r.evidence
    kept = {p.name for p in Path(ev["files"]).iterdir()}
    assert kept == {"input0.npy", "input1.npy", "chip.npy", "interpreters.npy", "reference.npy"}
    assert math.isclose(ev["interpreters"], ev["reference"], rel_tol=1e-5, abs_tol=1e-5)
    assert not math.isclose(ev["chip"], ev["reference"], rel_tol=1e-3)
    # The same program on an honest chip: timed.
    honest = stage.run(stage.Context(**{**ctx.__dict__, "device": FakeDevice(Script(compute=_honest(small_add)))}),
                       "honest", programs)
    assert honest.status == "timed"


@pytest.mark.jax
@pytest.mark.grading
def test_the_estimate_is_in_every_grading_and_scored_by_its_curve(small_add, tmp_path):
    root = small_add.folder.parent
    results = tmp_path / "results.json"
    proc = run_cli("grade", str(REPO / "solutions" / "add.py"), "-a", "add", "--assignments", str(root),
                   "--results", str(results))
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(results.read_text())
    assert validate(doc) == []
    s1 = next(t for t in doc["tests"] if t["number"] == "S1")
    t1 = next(t for t in doc["tests"] if t["number"] == "T1")
    # No calibration: the solution's estimate is missing, so the estimate is not held against the student.
    assert (s1["score"], s1["max_score"]) == (2.0, 2.0) and "calibrate" in s1["output"]
    assert (t1["score"], t1["max_score"]) == (0.0, 4.0) and "Not run" in t1["output"]
    assert doc["leaderboard"][0]["name"] == "Estimated TPU v5e time (ms)"
    assert set(doc["extra_data"]["speed_estimate"]["sizes"]) == {"s1", "s2"}
    assert "Speed estimate (TPU v5e" in proc.stdout
    # A wrong kernel: the estimate is shown, earns nothing, and stays off the leaderboard.
    proc = run_cli("grade", str(CORPUS / "add" / "wrong_formula.py"), "-a", "add", "--assignments", str(root),
                   "--results", str(results))
    doc = json.loads(results.read_text())
    s1 = next(t for t in doc["tests"] if t["number"] == "S1")
    assert s1["score"] == 0 and "once every correctness test passes" in s1["output"]
    assert "leaderboard" not in doc


@pytest.mark.jax
@pytest.mark.grading
def test_speed_then_merge_through_the_cli_on_a_fake_device(small_add, tmp_path):
    subs = tmp_path / "subs"
    for sid, src in (("good", REPO / "solutions" / "add.py"), ("bad", CORPUS / "add" / "wrong_formula.py")):
        (subs / sid).mkdir(parents=True)
        (subs / sid / "add.py").write_text(src.read_text())
    root, out = str(small_add.folder.parent), tmp_path / "out"
    proc = run_cli("speed", str(subs), "-a", "add", "--assignments", root, "-o", str(out), "--device", "fake",
                   "--solution", str(REPO / "solutions" / "add.py"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((out / "speed.json").read_text())
    got = {r["submission"]: r for r in doc["results"]}
    assert got["good"]["status"] == "timed" and got["bad"]["status"] == "not-queued"
    assert doc["solution"]["status"] == "timed" and doc["device"]["kind"] == "fake"
    # As fast as the solution: every TPU point.
    assert got["good"]["score"] == 4.0
    merged = json.loads((out / "review" / "merged" / "good" / "results.json").read_text())
    assert validate(merged) == [] and "dry run on a fake device" in \
        next(t for t in merged["tests"] if t["number"] == "T1")["output"]
    page = (out / "review" / "s" / "good.html").read_text()
    assert "TPU timing (v5e)" in page and "dry run on a fake device" in page
    again = run_cli("merge", str(out / "speed.json"), str(subs), "-a", "add", "--assignments", root,
                    "--review", str(out / "review"))
    assert again.returncode == 0 and "merged 2 TPU results" in again.stdout


# -- the real TPU ---------------------------------------------------------------------------

def _tpu():
    from autograder.tpu.real import TpuDevice
    dev = TpuDevice()
    if dev.info() is None:
        pytest.skip("no TPU visible (jax.devices('tpu') is empty): the real device's tests run on a TPU VM")
    return dev


@pytest.mark.tpu
@pytest.mark.jax
def test_the_real_device_compiles_runs_and_times_the_solution(small_add):
    from autograder.tpu import command
    dev = _tpu()
    programs, _ = command.solution_programs(small_add, REPO / "solutions" / "add.py")
    k = stage.kernel(small_add, "s1", programs["s1"], {"M": 64, "N": 256}, "float32")
    c = dev.compile(k)
    x = dev.inputs(c, 1)
    out = dev.fetch(dev.run(c, x))
    args = dev.fetch(x)
    assert np.allclose(out, args[0] + args[1], rtol=1e-5, atol=1e-5)
    assert dev.time(c, x).seconds > 0


@pytest.mark.jax
def test_canary_the_profilers_trace_reads_back_with_its_public_api(tmp_path):
    """jax.profiler.ProfileData (what the real device reads device time from):
    planes, lines and events with durations; a CPU trace has no TPU plane."""
    import glob

    import jax
    import jax.numpy as jnp
    from jax.profiler import ProfileData

    from autograder.tpu.real import module_times
    f = jax.jit(lambda x: (x @ x).sum())
    x = jnp.ones((128, 128))
    f(x).block_until_ready()
    with jax.profiler.trace(str(tmp_path)):
        f(x).block_until_ready()
    files = glob.glob(f"{tmp_path}/**/*.xplane.pb", recursive=True)
    data = ProfileData.from_file(files[0])
    events = [e for p in data.planes for line in p.lines for e in line.events]
    assert any(p.name.startswith("/host:CPU") for p in data.planes) and events
    assert all(e.duration_ns >= 0 for e in events)
    assert module_times(files[0], 1) is None


def test_the_kernel_signature_comes_from_the_spec_at_each_size(small_add):
    info = DeviceInfo("fake", "v5e", "x", "y", 1.0, 2.0)
    k = Kernel("k", b"", (InputSpec("float", value=1.0),), (1,), "float32")
    assert info.chip == "v5e" and k.inputs[0].value == 1.0
    s2 = stage.kernel(small_add, "s2", b"{}", {"M": 128, "N": 128}, "float32")
    assert [(i.kind, i.shape, i.dtype) for i in s2.inputs] == [("array", (128, 128), "float32")] * 2
    assert (s2.output_shape, s2.output_dtype) == ((128, 128), "float32")
    # The roofline floor of a 128x128 f32 add: three arrays of 64 KiB at v5e's bandwidth.
    assert stage._floor(s2, DeviceInfo("fake", "v5e", "", "", 8.19e11, 1.97e14), 0.0) == \
        pytest.approx(3 * 128 * 128 * 4 / 8.19e11)
