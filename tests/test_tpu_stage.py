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
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, corpus, run_cli, trimmed_add

from autograder import spec
from autograder.feedback import tpu_timing
from autograder.feedback.results_format import validate
from autograder.grading import assignments
from autograder.speed import grade as speed_grade
from autograder.tpu.chip.device import (
    ChipReject,
    CompileFailed,
    DeviceInfo,
    InputSpec,
    Kernel,
    OutputMismatch,
    check_output,
    digest_host,
    projection,
)
from autograder.tpu.chip.fake import FakeDevice, Script
from autograder.tpu.command import passed_interpreters
from autograder.tpu.stage import baseline, kernel as stage, results as tpu_results, timing

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
    return assignments.load(trimmed_add(tmp_path / "assignments", CASES, SPEED))


# -- the spec ---------------------------------------------------------------

def test_speed_table_reads_and_defaults(small_add):
    s = small_add.speed
    assert (s.chip, s.points, s.tpu_points, s.leaderboard) == ("v5e", 2.0, 4.0, True)
    assert [z.name for z in s.sizes] == ["s1", "s2"] and s.curve == ((0.5, 0.0), (1.0, 1.0))
    # matmul has no [speed] table: its production size, unscored.
    m = assignments.find("matmul").speed
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
        assignments.load(folder)
    assert e.value.key == key and rule in e.value.rule


def test_speed_without_sizes_or_production_is_refused(tmp_path):
    with pytest.raises(spec.SpecError) as e:
        assignments.load(trimmed_add(tmp_path / "a", CASES, "\n[speed]\npoints = 1\n"))
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

def _size(name, median, floor=1e-6, stopped="converged", rse=0.001, mismatched=(), source="profiler"):
    return stage.SizeTime(name, median, rse, 20, stopped, source, 0.5, floor, (1, 2, 3), tuple(mismatched))


def _base(**medians):
    """A solution baseline: size -> its timing (device time)."""
    return {k: _size(k, v) for k, v in medians.items()}


@pytest.mark.parametrize("size,gate", [
    (_size("a", 1e-7, floor=1e-6), "faster-than-roofline"),
    (_size("a", 11e-3), "slow"),
    (_size("a", 1e-3, stopped="cap", rse=0.04), "noisy"),
    (_size("a", 1e-3, mismatched=(4,)), "output-check"),
])
def test_every_anomaly_gate_holds_a_result(size, gate):
    found = stage.holds((size,), _base(a=1e-3))
    assert [h.split(":")[0] for h in found] == [gate]
    assert stage.holds((_size("a", 1e-3),), _base(a=1e-3)) == ()


def test_times_on_different_clocks_are_never_compared():
    wall = _size("a", 50e-3, source="wall")         # 50x the solution, but on the wall clock
    assert [h.split(":")[0] for h in stage.holds((wall,), _base(a=1e-3))] == ["clock"]
    assert stage.holds((_size("a", 1e-3, source="wall"),), {"a": _size("a", 1e-3, source="wall")}) == ()
    # No floor where the chip's figures are unknown (a CPU stand-in, an unknown TPU): no gate.
    assert stage.holds((_size("a", 1e-9, floor=0.0),), {}) == ()


def test_the_noisy_gate_follows_the_rule_in_use():
    loose = timing.Rule(target_rse=0.05)
    noisy = _size("a", 1e-3, stopped="cap", rse=0.04)
    assert stage.holds((noisy,), _base(a=1e-3), loose) == ()
    s = timing.measure(lambda i: 1e-3 * (1 + 0.03 * (-1) ** i), timing.Rule(max_calls=20, target_rse=1e-6))
    assert s.stopped == "cap" and s.noisy and not loose.noisy(s.stopped, s.rse)


# -- the stage on a fake device ----------------------------------------------------------

def _ctx(a, script, solution=None, rule=None):
    dev = FakeDevice(script)
    from autograder.grading.run.draws import load_reference
    ref = load_reference(a)
    return stage.Context(a, dev, dev.info(), lambda *x: np.asarray(ref(*x), np.float64),
                         interpret=_no_interpreter, secret=12345, rule=rule or timing.Rule(),
                         solution={k: _size(k, v) for k, v in (solution or {}).items()})


def _no_interpreter(program, args, dtypes):
    raise AssertionError("the interpreters are consulted only when the chip's output is wrong")


def _honest(a):
    from autograder.grading.run.draws import load_reference
    return load_reference(a)


PROGRAMS = {"s1": b"{}", "s2": b"{}"}


def test_an_honest_kernel_is_timed_on_fresh_inputs_and_its_outputs_checked(small_add):
    script = Script(compute=_honest(small_add), times=(2e-2, 2.02e-2, 1.98e-2), profiled=(1.9e-2,))
    r = stage.run(_ctx(small_add, script, {"s1": 2e-2, "s2": 2e-2}), "honest", PROGRAMS)
    assert r.status == "timed" and r.holds == () and r.seconds == pytest.approx(1.9e-2)
    assert all(len(s.checked) == 3 and s.mismatched == () and s.calls >= 10 for s in r.sizes)
    # The call checked element by element was chosen before the run, among the calls certain to happen.
    assert all(s.checked[0] < timing.Rule().min_calls for s in r.sizes)


def test_device_time_from_the_profiler_is_preferred_and_the_wall_time_kept(small_add):
    script = Script(compute=_honest(small_add), times=(2e-2,), profiled=(5e-3, 5.1e-3))
    r = stage.run(_ctx(small_add, script), "profiled", PROGRAMS)
    s = r.sizes[0]
    assert (s.source, s.wall_median_s, s.clock_note) == ("profiler", 2e-2, "") and s.median_s == pytest.approx(5.05e-3)


def test_a_profiler_failure_is_said_and_never_compared_with_device_time(small_add, capsys):
    script = Script(compute=_honest(small_add), times=(2e-2,), no_profiler="the profiler did not start: busy")
    r = stage.run(_ctx(small_add, script, {"s1": 2e-2, "s2": 2e-2}), "walled", PROGRAMS)
    assert {s.source for s in r.sizes} == {"wall"} and "did not start: busy" in r.sizes[0].clock_note
    assert r.status == "held" and {h.split(":")[0] for h in r.holds} == {"clock"}
    assert "walled at s1: no device time from the profiler (the profiler did not start: busy)" in \
        capsys.readouterr().err


@pytest.mark.parametrize("times,solution,gate", [
    ((1e-9,), {}, "faster-than-roofline"),
    ((2e-2,), {"s1": 1e-3, "s2": 2e-2}, "slow"),
])
def test_the_gates_hold_results_timed_on_the_fake_device(small_add, times, solution, gate):
    script = Script(compute=_honest(small_add), times=times, profiled=times)
    # A nanosecond per call never reaches the rule's 0.1 s: a lower call cap keeps it quick.
    r = stage.run(_ctx(small_add, script, solution, timing.Rule(max_calls=100)), gate, PROGRAMS)
    assert r.status == "held" and {h.split(":")[0] for h in r.holds} == {gate}


@pytest.mark.parametrize("behaviour", ["replay", "stale"])
def test_replayed_or_cached_outputs_are_caught_by_the_recheck(small_add, behaviour):
    script = Script(compute=_honest(small_add), times=(2e-2,), behaviour=behaviour)
    r = stage.run(_ctx(small_add, script), behaviour, PROGRAMS)
    assert r.status == "held" and {h.split(":")[0] for h in r.holds} == {"output-check"}
    assert all(s.mismatched for s in r.sizes)


def test_inputs_differ_on_every_call_are_shared_by_one_runs_kernels_and_change_with_the_run(small_add):
    ctx = _ctx(small_add, Script(compute=_honest(small_add)))
    k = stage.kernel(small_add, "s1", b"{}", {"M": 64, "N": 256}, "float32")
    c = ctx.device.compile(k)
    seeds = {stage.timed_seed(ctx, "s1", i) for i in range(50)}
    assert len(seeds) == 50 and all(0 <= s < 2 ** 32 for s in seeds)   # what jax.random.key keeps
    x0, x1 = (ctx.device.inputs(c, stage.timed_seed(ctx, "s1", i)) for i in (0, 1))
    assert not np.array_equal(x0[0], x1[0])
    other_run = replace(ctx, secret=ctx.secret + 1)
    assert not seeds & {stage.timed_seed(other_run, "s1", i) for i in range(50)}


def test_a_runs_kernels_share_the_timed_calls_references_and_each_is_still_checked(small_add):
    """Call i's inputs are the same in every kernel of a run, so its float64 reference is
    computed once (matmul's 8192^3 costs 8 s each on a v5e host); a kernel that replays
    its first output after an honest one is still caught."""
    computed = []

    def counted(*args):
        computed.append(1)
        return np.asarray(_honest(small_add)(*args), np.float64)
    script = Script(compute=_honest(small_add), times=(2e-2, 2.02e-2, 1.98e-2), profiled=(1.9e-2,))
    ctx = replace(_ctx(small_add, script), reference=counted)
    first = [stage.run(ctx, f"k{j}", PROGRAMS) for j in range(4)]
    assert all(r.status == "timed" for r in first)
    checked = {(s.size, i) for r in first for s in r.sizes for i in s.checked}
    # The same secret calls in every kernel (each its own choice of the one checked element-wise).
    assert all({tuple(sorted(s.checked)) for r in first for s in r.sizes if s.size == size}
               == {stage.checked_calls(ctx, size)} for size in ("s1", "s2"))
    assert all(0 <= i < ctx.rule.min_calls for _size, i in checked) and len(checked) == 2 * ctx.rule.sample
    assert len(computed) == len(checked) == ctx.references.misses
    assert ctx.references.hits == sum(len(s.checked) for r in first for s in r.sizes) - len(checked) > 0
    cheat = replace(ctx, device=FakeDevice(replace(script, behaviour="replay")))
    r = stage.run(cheat, "replays", PROGRAMS)
    assert r.status == "held" and all(s.mismatched for s in r.sizes)


def test_references_keep_the_most_recently_used_within_their_bytes():
    refs = stage.References(max_bytes=3 * 8 * 100)
    made = []

    def make(n):
        return lambda: made.append(n) or np.full(100, float(n))
    for n in (1, 2, 3, 1, 4):          # 1 used again before 4 arrives: 2 goes first
        refs.get((n,), make(n))
    refs.get((1,), make(1))
    refs.get((2,), make(2))
    assert made == [1, 2, 3, 4, 2] and (refs.hits, refs.misses) == (2, 5)


@pytest.mark.parametrize("primitives,relative,status", [
    (("exp", "log"), 5e-5, "timed"),           # a log-sum-exp kernel's error on a real v5e: allowed for
    ((), 5e-5, "chip-divergence"),             # the same error with no transcendental: not allowed
    (("exp", "log"), 5e-3, "chip-divergence"),   # far beyond what the chip's exp and log lose
    (("exp",), 2e-5, "timed"),
])
def test_the_chip_check_allows_what_the_chips_transcendentals_were_measured_to_lose(small_add, primitives,
                                                                                     relative, status):
    """A real v5e's exp and log are less exact than XLA's on a CPU (chip_numerics, measured): on a
    TPU the check widens the relative tolerance by what the kernel's transcendentals lose there."""
    script = Script(compute=_honest(small_add), kind="tpu", primitives=primitives, relative=relative,
                    profiled=(1e-3,))
    ctx = stage.Context(**{**_ctx(small_add, script).__dict__,
                           "interpret": lambda program, args, dtypes: _honest(small_add)(*args)})
    r = stage.run(ctx, "k", {"check:small": b"p", "s1": b"p", "s2": b"p"})
    assert r.status == status, (r.message, r.evidence)
    if status == "chip-divergence" and primitives:
        assert "were measured up to" in r.evidence["compared with"]


def test_the_chip_allowance_comes_from_the_measured_table_and_is_capped():
    from autograder.tpu.stage.chip_numerics import ALLOWANCE, MAX_EXTRA_RTOL, MEASURED, extra_rtol
    extra, used = extra_rtol("v5e", ("exp", "log", "add", "dot_general"))
    assert used == ("exp", "log")
    assert extra == pytest.approx(ALLOWANCE * (MEASURED["v5e"]["exp"].error + MEASURED["v5e"]["log"].error))
    assert extra_rtol("v5e", ("add",)) == (0.0, ()) and extra_rtol("v6e", ("exp",)) == (0.0, ())  # not measured
    assert extra_rtol("v5e", tuple(MEASURED["v5e"]))[0] == MAX_EXTRA_RTOL


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


def test_an_unscored_timing_is_a_section_of_the_output_not_a_green_test():
    """Gradescope shows a 0/0 test green, "passed": an unscored timing that is shown
    now goes in the top-level output, and a second merge replaces it there."""
    unscored = spec.Speed(tpu_points=0)
    doc = {**_doc(), "output": "#### Add: 10 / 10\n"}
    doc["tests"] = doc["tests"][:1]
    result = stage.StageResult("x", "timed", sizes=(_size("s1", 1.5e-3),)).to_json()
    device = {"kind": "tpu", "chip": "v5e", "jax": "0.10.2", "libtpu": "0.0.x"}
    merged = tpu_results.merge(doc, unscored, result, device, 1.2e-3)
    assert validate(merged) == [] and [t["number"] for t in merged["tests"]] == ["1.1"]
    assert merged["score"] == 10.0 and merged["output"].startswith("#### Add: 10 / 10\n\n")
    assert "TPU timing (v5e) (not scored)" in merged["output"] and "Timed on a TPU v5e" in merged["output"]
    held = tpu_results.merge(merged, unscored, {**result, "status": "held", "holds": ["noisy: x"]}, device, 1.2e-3)
    assert held["output"].count("TPU timing (v5e)") == 1 and "Held for review" in held["output"]
    assert held["output"].count("Timed on a TPU v5e") == 1
    # Hidden until later: the top-level output has no visibility, so it stays a test.
    later = tpu_results.merge(doc, spec.Speed(tpu_points=0, visibility="after_published"), result, device, 1.2e-3)
    assert [t["number"] for t in later["tests"]] == ["1.1", "T1"] and later["output"] == doc["output"]


def test_results_are_labelled_with_the_chip_that_measured_them(small_add):
    result = stage.StageResult("x", "timed", sizes=(_size("s1", 1e-3), _size("s2", 1e-3))).to_json()
    note = "measured on a TPU v5p (TPU v5), but the assignment's [speed] chip is v5e"
    first = tpu_results.merge(_doc(), small_add.speed, result, {"kind": "tpu", "chip": "v5e"}, 1e-3)
    merged = tpu_results.merge(first, small_add.speed, result, {"kind": "tpu", "chip": "v5p", "chip_note": note},
                               1e-3)
    t1 = next(t for t in merged["tests"] if t["number"] == "T1")
    assert t1["name"] == "TPU timing (v5p)" and note in t1["output"] and "Timed on a TPU v5p" in t1["output"]
    assert [r["name"] for r in merged["leaderboard"]] == ["checks ran", "TPU v5p time (ms)"]   # v5e's replaced
    cpu = tpu_results.merge(merged, small_add.speed, result, {"kind": "cpu", "chip": "cpu",
                                                               "label": "not a TPU measurement: x"}, 1e-3)
    assert [r["name"] for r in cpu["leaderboard"]][1:] == ["CPU stand-in time, not a TPU measurement (ms)"]
    assert "Not a TPU measurement: x" in next(t for t in cpu["tests"] if t["number"] == "T1")["output"]


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
    from autograder.feedback.render import render

    def render_speed(view, fmt):
        return render("speed.j2", fmt, speed=view)
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

def _solution_programs(a) -> tuple[dict[str, bytes], dict[str, float]]:
    """The solution's checked programs (traced as a submission's are) and its flops per size."""
    from autograder.grading import grade
    from autograder.grading.run import plan as planning
    report = grade.grade(a, REPO / "solutions" / "add.py", grade.GradeOptions(keep_programs=True),
                         plan=planning.speed_plan(a))
    flops = {s.size: s.estimate.flops for s in (report.speed.sizes if report.speed else ()) if s.estimate}
    return {k: v.encode("utf-8") for k, v in report.programs.items()}, flops


@pytest.mark.jax
@pytest.mark.grading
def test_chip_divergence_against_the_real_interpreter_on_a_real_program(small_add, tmp_path):
    from autograder.tpu.chip import interpreter
    programs, flops = _solution_programs(small_add)
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
    proc = run_cli("grade", str(corpus("add") / "wrong_formula.py"), "-a", "add", "--assignments", str(root),
                   "--results", str(results))
    doc = json.loads(results.read_text())
    s1 = next(t for t in doc["tests"] if t["number"] == "S1")
    assert s1["score"] == 0 and "once every correctness test passes" in s1["output"]
    assert "leaderboard" not in doc


@pytest.mark.jax
@pytest.mark.grading
def test_speed_then_merge_through_the_cli_on_a_fake_device(small_add, tmp_path):
    subs = tmp_path / "subs"
    for sid, src in (("good", REPO / "solutions" / "add.py"), ("bad", corpus("add") / "wrong_formula.py")):
        (subs / sid).mkdir(parents=True)
        (subs / sid / "add.py").write_text(src.read_text())
    root, out = str(small_add.folder.parent), tmp_path / "out"
    proc = run_cli("speed", str(subs), "-a", "add", "--assignments", root, "-o", str(out), "--device", "fake")
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


GOOD_ADD = '''
import jax
from jax.experimental import pallas as pl


def add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


@jax.jit
def add(x, y):
    m, n = x.shape
    spec = pl.BlockSpec((16, 256), lambda i, j: (i, j))     # 4x fewer grid steps than the solution's
    return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(m // 16, n // 256),
                          in_specs=[spec, spec], out_specs=spec, interpret=True)(x, y)
'''
# Right on the interpreters (y @ I is y exactly in float32); a TPU's default
# precision rounds y to bfloat16 first, and so does the CPU stand-in.
DIVERGING_ADD = '''
import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl


def add_kernel(x_ref, y_ref, o_ref):
    n = y_ref.shape[1]
    eye = lax.broadcasted_iota(jnp.int32, (n, n), 0) == lax.broadcasted_iota(jnp.int32, (n, n), 1)
    o_ref[...] = x_ref[...] + jnp.dot(y_ref[...], eye.astype(jnp.float32), preferred_element_type=jnp.float32)


@jax.jit
def add(x, y):
    m, n = x.shape
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(m // 8, n // 128),
                          in_specs=[spec, spec], out_specs=spec, interpret=True)(x, y)
'''
# Right everywhere, and slow only at the speed size: 200 tanh per element that change nothing.
SLOW_ADD = '''
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def add_kernel(x_ref, y_ref, o_ref, *, repeat):
    z = x_ref[...] + y_ref[...]
    w = z
    for _ in range(repeat):
        w = jnp.tanh(w)
    o_ref[...] = z + 0.0 * w


@jax.jit
def add(x, y):
    m, n = x.shape
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(functools.partial(add_kernel, repeat=200 if m >= 128 else 1),
                          out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(m // 8, n // 128),
                          in_specs=[spec, spec], out_specs=spec, interpret=True)(x, y)
'''
# Right at every graded case, wrong only at the speed size (which the interpreters never run).
WRONG_AT_SPEED_SIZE_ADD = GOOD_ADD.replace("import jax\n", "import jax\nimport jax.numpy as jnp\n").replace(
    "o_ref[...] = x_ref[...] + y_ref[...]",
    "o_ref[...] = x_ref[...] + jnp.where(pl.num_programs(0) < 2, y_ref[...], 0.0)   # y dropped past one row block")
E2E_SPEED = textwrap.dedent('''
    [speed]
    chip = "v5e"
    tpu_points = 4
    leaderboard = true
    [[speed.sizes]]
    name = "s1"
    dims = { M = 128, N = 256 }
    dtype = "float32"
    ''')


@pytest.mark.jax
@pytest.mark.grading
def test_speed_on_the_cpu_device_end_to_end(tmp_path):
    """`speed --device cpu`: the real device's code on JAX's CPU backend over a
    small export (the review grading, the solution as baseline, each kernel
    checked and timed under the profiler, the solution timed again, the merge)."""
    root = trimmed_add(tmp_path / "assignments", CASES, E2E_SPEED).parent
    subs, out = tmp_path / "export", tmp_path / "out"
    for sid, text in (("good", GOOD_ADD), ("diverging", DIVERGING_ADD), ("slow", SLOW_ADD),
                      ("wrong-at-speed", WRONG_AT_SPEED_SIZE_ADD)):
        (subs / sid).mkdir(parents=True)
        (subs / sid / "add.py").write_text(text)
    proc = run_cli("speed", str(subs), "-a", "add", "--assignments", str(root), "-o", str(out), "--device", "cpu",
                   "--target-rse", "0.2", "--max-seconds", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((out / "speed.json").read_text())
    got = {r["submission"]: r for r in doc["results"]}
    assert doc["device"]["kind"] == "cpu" and doc["device"]["label"].startswith("not a TPU measurement")
    assert doc["partial"] is False and doc["isolation"] == "one worker, replaced after any fault"
    # The solution: the baseline, timed on device time from the trace, its outputs checked; timed again after.
    sol = doc["solution"]
    assert sol["status"] == "timed" and [s["source"] for s in sol["sizes"]] == ["profiler"]
    assert len(sol["sizes"][0]["checked"]) == 3 and sol["sizes"][0]["mismatched"] == []
    assert set(doc["solution_drift"]["sizes"]) == {"s1"} and doc["solution_drift"]["again_status"] == "timed"
    # Divergence: wrong on the chip's precision, right on the interpreters, found at the check case.
    div = got["diverging"]
    assert div["status"] == "chip-divergence" and div["evidence"]["kernel"] == "check:small"
    assert not math.isclose(div["evidence"]["chip"], div["evidence"]["reference"], rel_tol=1e-4)
    assert math.isclose(div["evidence"]["interpreters"], div["evidence"]["reference"], rel_tol=1e-6)
    assert {p.name for p in Path(div["evidence"]["files"]).iterdir()} >= {"chip.npy", "interpreters.npy"}
    # Held: more than 10x the solution at the speed size, compared on the same clock.
    assert got["slow"]["status"] == "held" and [h.split(":")[0] for h in got["slow"]["holds"]] == ["slow"]
    # Held: right on the interpreters, wrong at the speed size; the calls timed are the calls checked.
    wrong = got["wrong-at-speed"]
    # (A loaded machine may add "noisy": a CPU stand-in's timing spread, not what this checks.)
    holds = [h.split(":")[0] for h in wrong["holds"]]
    assert wrong["status"] == "held" and holds[0] == "output-check" and set(holds[1:]) <= {"noisy"}
    assert wrong["sizes"][0]["mismatched"] == wrong["sizes"][0]["checked"]     # element-wise and digests
    # Ranked: timed, faster than the solution, every point, on the leaderboard labelled as not a TPU's.
    good = got["good"]
    assert good["status"] == "timed" and good["sizes"][0]["source"] == "profiler" and good["score"] == 4.0
    assert good["seconds"] < sol["seconds"]
    merged = json.loads((out / "review" / "merged" / "good" / "results.json").read_text())
    assert validate(merged) == []
    t1 = next(t for t in merged["tests"] if t["number"] == "T1")
    assert "Not a TPU measurement" in t1["output"]
    rows = [r["name"] for r in merged["leaderboard"]]
    assert "CPU stand-in time, not a TPU measurement (ms)" in rows and "TPU v5e time (ms)" not in rows


def test_a_site_graded_under_another_jax_release_says_which_and_what_this_host_runs(small_add, tmp_path):
    """A site made by a grader on one JAX release, read on a host with another: the
    keys miss (they include the release), and the message names both releases."""
    from autograder.pallas_surface import release
    from autograder.review import batch
    from autograder.review.export import read_submissions
    subs, site = tmp_path / "export", tmp_path / "site"
    (subs / "one").mkdir(parents=True)
    (subs / "one" / "add.py").write_text((REPO / "solutions" / "add.py").read_text())
    sub = read_submissions(subs, tmp_path / "x")[0]
    other = next(r for r in release.SUPPORTED if r != batch.jax_release())
    store = batch.Store(site / ".review-cache")
    store.put(batch.Graded("k" * 24, "one", "graded", 1.0, {"tests": []}, jax=other, content=sub.content_hash()))
    proc = run_cli("speed", str(subs), "-a", "add", "--assignments", str(small_add.folder.parent), "-o",
                   str(tmp_path / "out"), "--review", str(site), "--device", "tpu")
    assert proc.returncode != 0
    assert (f"The site was graded under jax {other}; this host runs jax {batch.jax_release()}" in
            " ".join(proc.stderr.split()))


def test_speed_on_a_tpu_host_grades_nothing_and_says_to_run_review_elsewhere(small_add, tmp_path):
    subs = tmp_path / "export"
    (subs / "one").mkdir(parents=True)
    (subs / "one" / "add.py").write_text((REPO / "solutions" / "add.py").read_text())
    site = tmp_path / "site"
    proc = run_cli("speed", str(subs), "-a", "add", "--assignments", str(small_add.folder.parent), "-o",
                   str(tmp_path / "out"), "--review", str(site), "--device", "tpu")
    assert proc.returncode != 0
    assert "1 of 1 submissions have no grading in" in proc.stderr and "on a CPU machine" in proc.stderr
    assert not list((site / ".review-cache").glob("*.json"))           # nothing was graded here


# -- what the chip gives back, and how it is checked (no JAX) ------------------------------

def test_a_call_gives_one_output_of_the_declared_shape_and_dtype_never_a_broadcast_list():
    """An executable returns a list of outputs; a one-element list read as an
    array was (1, M, N), which broadcasting let pass when right and turned into
    an IndexError when wrong. Now the list is unwrapped and the output checked."""
    k = Kernel("s1", b"", (), (4, 128), "float32")
    out = np.zeros((4, 128), np.float32)
    assert check_output([out], k) is out and check_output(out, k) is out
    for bad in ([out, out], [out[None]], out[:2], out.astype(np.float64)):
        with pytest.raises(OutputMismatch):
            check_output(bad, k)


def _attention(q, k, v, keys=None, p_bf16=False):
    """Softmax attention in float64 (over the first ``keys`` keys), P in bfloat16 as TPU kernels feed P·V."""
    from autograder.grading.run.inputs import round_to
    keys = keys or k.shape[1]
    s = q @ k[:, :keys].transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    return (round_to(p, "bfloat16") if p_bf16 else p) @ v[:, :keys]


def test_the_digest_bound_catches_zeros_and_half_the_keys_at_flash_attentions_speed_size():
    """At flash attention's speed size (S = 2048, D = 128, bfloat16) the old
    bound (per-element tolerances summed along a row) let an all-zeros output
    and attention over half the keys pass; the statistical bound does not, and
    still passes a right kernel's output (P rounded to bfloat16 for P·V)."""
    from autograder.grading.run.inputs import round_to
    fa = assignments.find("flash_attention")
    size = fa.speed.sizes[0]
    dims = dict(size.dims)
    rng = np.random.default_rng(0)
    q, k, v = (round_to(rng.standard_normal((1, dims["S"], dims["D"])), "bfloat16").astype(np.float64)
               for _ in range(3))
    ref = _attention(q, k, v)
    tol, red, key = fa.tolerance(size.dtype), dims["S"], 1234
    e = stage.Expected(ref, tol, "ref")
    flat = ref.reshape(-1, ref.shape[-1])
    r = projection(key, flat.shape[-1])
    old = (tol.atol * math.sqrt(red) + tol.rtol * np.abs(flat)) @ np.abs(r)     # the old bound, per row
    zeros = np.zeros_like(ref)
    assert np.all(np.abs(digest_host(zeros, key) - flat @ r) <= old + 1e-6)   # the old bound passed it
    assert tol.atol * math.sqrt(red) > np.sqrt(np.mean(ref ** 2))              # per element too: 0.09 > RMS
    for wrong in (zeros, _attention(q, k, v, keys=red // 2)):
        assert not stage.digest_ok(digest_host(wrong, key), e, key, red, fa.numerics_bound)
        assert not stage.close(wrong, e, red, fa.numerics_bound)
    right = _attention(q, k, v, p_bf16=True).astype(np.float32)
    assert stage.digest_ok(digest_host(right, key), e, key, red, fa.numerics_bound)
    assert stage.close(right, e, red, fa.numerics_bound)


MATMUL_TABLES = textwrap.dedent("""
    [[cases]]
    name = "f32"
    dims = { M = 128, K = 256, N = 128 }
    dtype = "float32"
    seed = 1
    points = 1
    [speed]
    [[speed.sizes]]
    name = "s1"
    dims = { M = 128, K = 384, N = 128 }
    dtype = "float32"
    """)


def _matmul_spec(root: Path):
    """`matmul` with one float32 case, no probes, and a small float32 [speed] size."""
    import shutil
    folder = root / "matmul"
    shutil.copytree(REPO / "assignments" / "matmul", folder)
    text = (folder / "spec.toml").read_text().replace('probe_cases = ["f32-256x384x256"]\n', "")
    (folder / "spec.toml").write_text(text[:text.index("[[cases]]")] + MATMUL_TABLES)
    for old in folder.glob("calibration-*.json"):
        old.unlink()
    return assignments.load(folder)


def _rounded_matmul(x, y):
    from autograder.grading.run.inputs import round_to
    return round_to(np.asarray(x), "bfloat16").astype(np.float64) @ round_to(np.asarray(y), "bfloat16")


def _exact_matmul(program, args, dtypes):
    return np.asarray(args[0], np.float64) @ np.asarray(args[1], np.float64)


def test_float32_products_a_tpu_rounds_are_checked_at_the_chips_precision(tmp_path):
    """A TPU computes a kernel's float32 jnp.dot from bfloat16-rounded operands
    (Mosaic's default precision): a right matmul kernel misses the float64
    reference there. The stage accepts the reference of the rounded inputs
    within the bfloat16 tolerance for such kernels, and only for them."""
    mm = _matmul_spec(tmp_path)
    programs = {"check:f32": b"{}", "s1": b"{}"}
    for dots, status in ((1, "timed"), (0, "chip-divergence")):
        script = Script(compute=_rounded_matmul, profiled=(1e-3,), bf16_dots=dots)
        r = stage.run(replace(_ctx(mm, script), interpret=_exact_matmul), "rounding", programs)
        assert r.status == status, (r.status, r.holds, r.message)
    assert "rounded to bfloat16" not in r.evidence["compared with"]


def test_the_solution_is_a_baseline_only_when_sound():
    timed = stage.StageResult("solution", "timed", sizes=(_size("s1", 1e-3),))
    assert baseline.guard(timed) is timed
    for bad, needle in ((stage.StageResult("solution", "chip-divergence", "differs"), "chip-divergence"),
                        (stage.StageResult("solution", "chip-reject", "Mosaic: no"), "chip-reject"),
                        (stage.StageResult("solution", "held", holds=("noisy: at s1, 4%",)), "noisy"),
                        (stage.StageResult("solution", "timed", sizes=(_size("s1", 1e-3, source="wall"),)),
                         "wall clock")):
        with pytest.raises(baseline.SolutionUnusable) as e:
            baseline.guard(bad)
        assert needle in str(e.value) and "cannot be the baseline" in str(e.value)


def test_a_solution_whose_stage_fails_or_diverges_stops_the_run(small_add):
    with pytest.raises(baseline.SolutionUnusable, match="chip-divergence"):
        baseline.timed(replace(_ctx(small_add, Script(compute=_honest(small_add), diverge=0.01)),
                               interpret=lambda p, args, d: args[0] + args[1]), {**PROGRAMS, "check:small": b"{}"})
    with pytest.raises(baseline.SolutionUnusable, match="its stage failed: OutputMismatch"):
        baseline.timed(_ctx(small_add, Script(compute=lambda x, y: (x + y)[None])), PROGRAMS)
    noisy = Script(compute=_honest(small_add), times=(1e-3, 9e-3), profiled=(1e-3, 9e-3))
    with pytest.raises(baseline.SolutionUnusable, match="noisy"):
        baseline.timed(replace(_ctx(small_add, noisy), rule=timing.Rule(max_calls=20)), PROGRAMS)


def test_the_solutions_drift_between_its_two_timings_is_reported():
    before = stage.StageResult("solution", "timed", sizes=(_size("s1", 1e-3), _size("s2", 2e-3)))
    steady = baseline.drift(before, stage.StageResult("s", "timed", sizes=(_size("s1", 1.02e-3),
                                                                           _size("s2", 1.97e-3))))
    assert steady.exceeded == () and steady.message() == "" and steady.sizes["s1"] == pytest.approx(0.02)
    moved = baseline.drift(before, stage.StageResult("s", "timed", sizes=(_size("s1", 1.2e-3), _size("s2", 2e-3))))
    assert moved.exceeded == ("s1",) and "s1 +20.0%" in moved.message()


def test_every_device_takes_32_bit_seeds(small_add):
    dev = FakeDevice(Script(compute=_honest(small_add)))
    c = dev.compile(stage.kernel(small_add, "s1", b"{}", {"M": 64, "N": 256}, "float32"))
    dev.inputs(c, 2 ** 32 - 1)
    with pytest.raises(ValueError, match="32-bit"):
        dev.inputs(c, 2 ** 32)


# -- the real device, on JAX's CPU backend (and on a TPU where one is visible) -----------------

def _kernels():
    """Small kernels, traced in this process into checked program documents."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def add_kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    def add(x, y, block=(8, 128)):
        spec = pl.BlockSpec(block, lambda i, j: (i, j))
        return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=(x.shape[0] // block[0], x.shape[1] // block[1]),
                              in_specs=[spec, spec], out_specs=spec)(x, y)

    def matmul(x, y, precision=None):
        def kernel(x_ref, y_ref, o_ref):
            o_ref[...] = jnp.dot(x_ref[...], y_ref[...], precision=precision, preferred_element_type=jnp.float32)
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), jnp.float32))(x, y)

    return {"add": add, "bad_block": lambda x, y: add(x, y, block=(8, 100)), "matmul": matmul,
            "matmul_highest": lambda x, y: matmul(x, y, jax.lax.Precision.HIGHEST)}


def _program(name: str, *shapes) -> bytes:
    import jax
    import jax.numpy as jnp

    from autograder.pallas_surface.program import serial
    from autograder.pallas_surface.rungs import rung
    traced = rung.trace(_kernels()[name], [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes])
    return json.dumps(serial.encode(traced, {__file__})).encode()


def _jax_device(platform: str):
    from autograder.tpu.chip.real import JaxDevice
    dev = JaxDevice(platform)
    if dev.info() is None:
        pytest.skip(f"{dev.absent()}: this test runs where JAX sees a {platform.upper()}")
    return dev


@pytest.mark.jax
def test_jax_names_the_chip_from_its_device_kind():
    from autograder.pallas_surface.rungs import chips
    assert [chips.chip_of(k) for k in ("TPU v4 lite", "TPU v4", "TPU v5 lite", "TPU v5", "TPU v6 lite")] == \
        ["v4i", "v4", "v5e", "v5p", "v6e"]
    assert chips.chip_of("TPU v99 ultra") is None and chips.chip_of("cpu") is None    # unknown: no error
    one, megacore = chips.figures("v5p", 1), chips.figures("v5p", 2)
    # JAX's table is per TensorCore; a megacore device is two of them.
    assert megacore.hbm_bytes_per_s == 2 * one.hbm_bytes_per_s == pytest.approx(2.46e12)
    assert megacore.bf16_flops_per_s == pytest.approx(4.59e14)


@pytest.mark.jax
def test_a_tpu_held_by_another_process_is_told_apart_from_no_tpu(monkeypatch):
    import jax

    from autograder.tpu.chip import real
    devices, why = real.backend("tpu")
    if not devices:
        assert why.startswith("no TPU is visible to JAX here")

    def held(platform):
        raise RuntimeError("Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by process "
                           "with pid 4242. Not attempting to load libtpu.so in this process.")
    monkeypatch.setattr(jax, "devices", held)
    devices, why = real.backend("tpu")
    assert devices == [] and why.startswith("the TPU is held by another process") and "pid 4242" in why


@pytest.mark.jax
@pytest.mark.parametrize("platform", ["cpu", "gpu", pytest.param("tpu", marks=pytest.mark.tpu)])
def test_the_real_device_makes_runs_profiles_and_digests_on_the_device(small_add, platform, tmp_path,
                                                                         monkeypatch):
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))        # where the profiler's folders go
    dev = _jax_device(platform)
    info = dev.info()
    assert info.kind == platform and info.label.startswith("not a TPU measurement") == (platform != "tpu")
    k = stage.kernel(small_add, "s1", _program("add", (64, 256), (64, 256)), {"M": 64, "N": 256}, "float32")
    c = dev.compile(k)
    assert c.bf16_dots == 0 and c.compile_s > 0
    x = dev.inputs(c, 2 ** 32 - 1)
    out = dev.run(c, x)
    host, args = dev.fetch(out), dev.fetch(x)
    assert host.shape == (64, 256) and host.dtype == np.float32 and not np.array_equal(args[0], args[1])
    np.testing.assert_array_equal(host, args[0] + args[1])
    assert np.allclose(dev.digest(out, 7), digest_host(host, 7), rtol=1e-6, atol=1e-5)
    # The profiled loop is the timed loop: inputs made, the call timed, its output digested;
    # the trace picks this kernel's executions out by its module's name.
    with dev.profile(c) as trace:
        walls = [dev.time(c, dev.inputs(c, i)) for i in range(5)]
        for t in walls:
            dev.digest(t.output, 7)
    got = trace.result(5)
    assert got.why == "" and len(got.times) == 5 and all(0 < s <= t.seconds for s, t in zip(got.times, walls))
    assert trace.result(6).times is None and "5 executions" in trace.result(6).why
    assert not list(tmp_path.glob("pallas-profile-*"))                 # the trace folder is deleted
    with pytest.raises(OutputMismatch):
        dev.run(replace(c, kernel=replace(k, output_shape=(1, 64, 256))), x)


def _pb(field: int, value) -> bytes:
    """One protobuf field: an int (varint) or bytes/str/nested message (length-delimited)."""
    def varint(n: int) -> bytes:
        out = b""
        while True:
            out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
            n >>= 7
            if not n:
                return out
    if isinstance(value, int):
        return varint(field << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(field << 3 | 2) + varint(len(data)) + data


def _xplane(name: str, lines: dict[str, list[tuple[str, int, int]]]) -> bytes:
    """An XPlane (tsl/profiler/protobuf/xplane.proto): lines of (event name, offset ps, duration ps)."""
    names = sorted({e[0] for events in lines.values() for e in events})
    ids = {n: i + 1 for i, n in enumerate(names)}
    out = _pb(2, name)
    for i, (line, events) in enumerate(lines.items()):
        body = _pb(1, i) + _pb(2, line) + b"".join(
            _pb(4, _pb(1, ids[n]) + _pb(2, off) + _pb(3, dur)) for n, off, dur in events)
        out += _pb(3, body)
    for n, i in ids.items():
        out += _pb(4, _pb(1, i) + _pb(2, _pb(1, i) + _pb(2, n)))         # event_metadata map entry
    return out


@pytest.mark.jax
def test_a_tpu_traces_module_line_gives_one_time_per_call_of_this_kernel_only(tmp_path):
    """The TPU branch of the trace parser, on a hand-made trace (no TPU here):
    the kernel's executions on a device plane's "XLA Modules" line, named
    "jit_name" or "jit_name(N)", other modules ignored, one plane where a
    megacore device's two cores both show them, in time order."""
    from autograder.tpu.chip.real import module_runs
    ours = [("jit_pallas_stage_ab(7)", 3_000_000, 2_000_000), ("jit_pallas_stage_ab", 1_000_000, 1_000_000),
            ("jit_make(3)", 2_000_000, 9_000_000), ("jit_pallas_stage_abc(7)", 5_000_000, 9_000_000)]
    core0 = _xplane("/device:TPU:0", {"XLA Modules": ours, "XLA Ops": [("fusion", 0, 5)]})
    core1 = _xplane("/device:TPU:1", {"XLA Modules": ours[:1]})
    host = _xplane("/host:CPU", {"python": [("jit_pallas_stage_ab", 0, 50_000_000)]})
    trace = tmp_path / "t.xplane.pb"
    trace.write_bytes(b"".join(_pb(1, p) for p in (core1, core0, host)))
    assert module_runs(str(trace), "jit_pallas_stage_ab") == pytest.approx([1e-6, 2e-6])


@pytest.mark.jax
def test_a_mosaic_refusal_is_chip_reject_and_other_compile_failures_are_not(small_add):
    dev = _jax_device("cpu")
    bad = stage.kernel(small_add, "s1", _program("bad_block", (64, 200), (64, 200)), {"M": 64, "N": 256},
                       "float32")
    with pytest.raises(ChipReject, match="divisible by 8 and 128"):
        dev.compile(bad)
    broken = stage.kernel(small_add, "s1", b'{"format": 1}', {"M": 64, "N": 256}, "float32")
    with pytest.raises(CompileFailed, match="rebuilding the checked program failed"):
        dev.compile(broken)
    r = stage.run(replace(_ctx(small_add, Script(compute=_honest(small_add))), device=dev), "broken",
                  {"s1": broken.program, "s2": broken.program})
    assert r.status == "error" and "not because the TPU compiler refused" in r.message


@pytest.mark.jax
def test_the_cpu_device_rounds_a_kernels_float32_products_as_a_tpu_does(tmp_path):
    """Mosaic's default precision, emulated: the stand-in's float32 jnp.dot
    takes bfloat16-rounded operands (HIGHEST keeps float32), and the stage
    checks such a kernel at the chip's precision: a right kernel passes."""
    mm = _matmul_spec(tmp_path)
    dev = _jax_device("cpu")
    dims = {"M": 128, "K": 384, "N": 128}
    outs = {}
    for name in ("matmul_highest", "matmul"):
        k = stage.kernel(mm, "s1", _program(name, (128, 384), (384, 128)), dims, "float32")
        c = dev.compile(k)
        assert c.bf16_dots == (1 if name == "matmul" else 0)
        x = dev.inputs(c, 3)
        outs[name], args = dev.fetch(dev.run(c, x)).astype(np.float64), dev.fetch(x)
    exact = np.asarray(args[0], np.float64) @ args[1]
    np.testing.assert_allclose(outs["matmul_highest"], exact, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(outs["matmul"], _rounded_matmul(*args), rtol=1e-5, atol=1e-4)
    assert np.abs(outs["matmul"] - exact).max() > 1e-2          # far outside the float32 tolerance
    ctx = replace(_ctx(mm, Script(compute=_rounded_matmul)), device=dev, interpret=_exact_matmul)
    assert stage.check(ctx, "rounding", k, dims, "float32") is None


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


# -- `on-chip`: a student's own check on a real TPU -------------------------------------------

@pytest.mark.jax
def test_on_chip_says_what_the_compiler_and_the_chip_did_per_visible_case():
    """The code `pallas-autograder on-chip` and the chip check's outcomes phase run, on JAX's CPU
    stand-in (Pallas's TPU lowering in place of Mosaic): right, wrong, refused, not loaded."""
    from autograder.tpu import onchip
    from autograder.tpu.chip.real import JaxDevice
    a = assignments.find("matmul", REPO / "assignments")
    device = JaxDevice("cpu")
    right = onchip.file_outcome(device, a, REPO / "solutions" / "matmul.py")
    assert right["status"] == "ran" and [c["status"] for c in right["cases"]] == ["right", "right"]
    assert right["cases"][0]["against"] == "bf16-rounded inputs"       # float32 products, default precision
    wrong = onchip.file_outcome(device, a, corpus("matmul") / "wrong_formula.py")
    assert [c["status"] for c in wrong["cases"]] == ["wrong", "wrong"]
    refused = onchip.file_outcome(device, a, corpus("matmul") / "k_block_64.py")
    assert [c["status"] for c in refused["cases"]] == ["refused", "refused"]
    assert "last two dimensions" in refused["cases"][0]["message"]
    assert onchip.describe(refused["cases"][0]).startswith("refused by the TPU compiler: ")
    broken = onchip.file_outcome(device, assignments.find("add", REPO / "assignments"),
                                 corpus("add") / "syntax_error.py")
    assert broken["status"] == "not-loaded" and "SyntaxError" in broken["message"]


@pytest.mark.jax
def test_the_cpu_stand_in_runs_a_students_debug_check():
    """An honest pl.debug_check compiles and runs on the stand-in (a plain check on the generic
    interpreter, as in the grader's child); a real v5e ran both files right (chip call L: Pallas's
    checks are off there unless the kernel turns them on). Before, the stand-in refused both."""
    from autograder.tpu import onchip
    from autograder.tpu.chip.real import JaxDevice
    a = assignments.find("add", REPO / "assignments")
    device = JaxDevice("cpu")
    honest = onchip.file_outcome(device, a, corpus("add") / "debug_check.py")
    assert [c["status"] for c in honest["cases"]] == ["right", "right"], honest
    failing = onchip.file_outcome(device, a, corpus("add") / "debug_check_fails.py")
    # Its check fails at run time: the case says the run raised, in the student's words.
    assert [c["status"] for c in failing["cases"]] == ["raised", "raised"], failing
    assert "adding y never makes an element smaller" in failing["cases"][0]["message"], failing


@pytest.mark.jax
def test_on_chip_without_a_tpu_says_so_and_that_the_grade_never_needs_one():
    proc = run_cli("on-chip", str(REPO / "solutions" / "add.py"), "-a", "add")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("No TPU here") and "The grade never needs one." in proc.stdout


def test_a_timed_output_checked_a_slice_at_a_time_says_what_compare_says(monkeypatch):
    """The stage's sliced check (matmul's 8192^2 outputs) says what ``compare(...).ok``
    says, where the one wrong element sits in any slice, NaN and Inf included, and
    its norms are numpy's."""
    import math

    from autograder.grading.judge.compare import compare
    from autograder.spec import Tolerance
    tol = Tolerance(rtol=1e-5, atol=1e-5)
    monkeypatch.setattr(stage, "CHUNK", 7)          # many slices, the last one short
    ref = np.random.default_rng(3).standard_normal((6, 9))
    near = (ref + 1e-7).astype(np.float32)
    assert stage.within(near, ref, tol, 1) and compare(near, ref, tol, 1, 0.05).ok
    for flat in (0, 6, 7, 31, 53):
        for bad in (1.0, np.nan, np.inf):
            out = near.copy().reshape(-1)
            out[flat] += bad
            out = out.reshape(ref.shape)
            assert stage.within(out, ref, tol, 1) is False
            assert compare(out, ref, tol, 1, 0.05).ok is False
    err, size = stage.norms(near, ref)
    assert math.isclose(err, float(np.linalg.norm(near.astype(np.float64) - ref)), rel_tol=1e-12)
    assert math.isclose(size, float(np.linalg.norm(ref)), rel_tol=1e-12)
    assert stage.within(near[:5], ref, tol, 1) is False      # another shape is never within


def test_references_kept_in_a_runs_folder_serve_its_next_process(tmp_path):
    """`--fresh-process`: a process per submission; the run's references are left in its folder for the
    next one (a half-written file is made again)."""
    from autograder.tpu.stage.references import References
    first, made = References(folder=tmp_path), []
    value = first.get(("speed", 3, False), lambda: made.append(1) or np.arange(6.0))
    assert (first.misses, first.disk_hits) == (1, 0) and len(list(tmp_path.glob("*.npy"))) == 1
    second = References(folder=tmp_path)            # the next submission's process
    again = second.get(("speed", 3, False), lambda: made.append(2) or np.zeros(6))
    assert made == [1] and second.disk_hits == 1 and np.array_equal(again, value)
    (only,) = tmp_path.glob("*.npy")
    only.write_bytes(b"half written")
    third = References(folder=tmp_path)
    assert np.array_equal(third.get(("speed", 3, False), lambda: made.append(3) or np.ones(6)), np.ones(6))
    assert made == [1, 3] and third.misses == 1
