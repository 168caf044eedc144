"""Diagnosis (pure logic, no JAX): what the child reported -> one finding per run."""
from pathlib import Path

import numpy as np
import pytest

from autograder.grading import assignments
from autograder.grading.judge import diagnosis
from autograder.grading.probes import PLANNERS
from autograder.grading.run import plan as planning
from autograder.grading.run.submission import Located
from autograder.isolation.outcome import LoadError, Outcome

A = assignments.find("matmul")
PLAN = planning.build(A, A.cases, A.rungs, 7)
RUN = PLAN.test_run(A.cases[0].name, "tpu-interpret")
LOC = Located(Path("/w/matmul.py"), Path("/w"), "matmul.py")
REF = np.random.default_rng(0).standard_normal(A.output_shape(A.cases[0]))


def _ok(out, dtype="float32"):
    return Outcome("ok", output=None if out is None else out.astype(np.float32), dtype=dtype,
                   shape=tuple(out.shape) if out is not None else ())


def _diagnose(outcome):
    return diagnosis.from_outcome(A, RUN, outcome, REF, LOC)


def test_a_right_output_is_no_finding():
    assert _diagnose(_ok(REF)) is None


def test_far_off_is_wrong_result_and_small_error_is_numerics():
    f = _diagnose(_ok(REF + 1.0))
    assert f.id == "wrong-result" and f.run == RUN.index and f.case == RUN.case.name
    assert f.facts()["mismatches"] == REF.size
    g = _diagnose(_ok(REF * (1 + 1e-3)))
    assert g.id == "numerics" and "precision" in g.message


def test_nan_beside_right_values_is_numerics_beside_wrong_values_wrong_result():
    out = REF.copy()
    out[0, 0] = np.nan
    assert _diagnose(_ok(out)).id == "numerics"
    out = REF + 5.0
    out[0, 0] = np.nan
    assert _diagnose(_ok(out)).id == "wrong-result"


@pytest.mark.parametrize("outcome,problem", [
    (Outcome("ok", dtype="float32", shape=(3, 3), output_problem="wrong shape"), "wrong-shape"),
    (Outcome("ok", dtype="bfloat16", shape=(256, 256)), "wrong-dtype"),
    (Outcome("ok", dtype="float32", shape=(256, 256), output_problem="the output could not be read back"),
     "wrong-type"),
    (Outcome("bad-type", returned="builtins.tuple"), "wrong-type"),
    (Outcome("error", error_type="ValueError", message="bad\nmore", phase="trace"), "exception"),
    (Outcome("timeout", phase="run", limit_s=12.5), "timeout"),
    (Outcome("timeout", phase="trace", limit_s=10.0, not_run=True, reason="tracing the same call already hung"),
     "timeout"),
    (Outcome("memory"), "memory-limit"),
    (Outcome("disk", disk_mb=1024), "disk-limit"),
    (Outcome("died", returncode=-9), "killed"),
    (Outcome("skipped", reason="budget"), "not-run"),
])
def test_every_failure_is_one_submission_error_with_its_problem(outcome, problem):
    f = _diagnose(outcome)
    assert f.id == "submission-error" and f.problem == problem and f.rung == "tpu-interpret"


def test_timeouts_say_where_they_hung_and_why_a_run_was_not_started():
    assert "while tracing" in _diagnose(Outcome("timeout", phase="trace", limit_s=10.0)).message
    assert "while the kernel ran" in _diagnose(Outcome("timeout", phase="run", limit_s=10.0)).message
    f = _diagnose(Outcome("timeout", limit_s=10.0, not_run=True, reason="2 earlier runs on this rung hung"))
    assert f.message == "not run: 2 earlier runs on this rung hung (limit 10 s)"
    assert "SIGKILL" in _diagnose(Outcome("died", returncode=-9)).message


def test_upstream_errors_become_their_finding_by_the_table():
    oob = Outcome("error", error_type="IndexError", phase="run",
                  message="Out-of-bounds block index (0, 3) for input x in iteration (0, 3)")
    assert _diagnose(oob).id == "out-of-bounds"
    revisit = Outcome("error", error_type="RuntimeError", message="Revisited block (0, 0) of output 0")
    assert _diagnose(revisit).id == "output-block-revisit"
    other = Outcome("error", error_type="RuntimeError", message="something else")
    assert _diagnose(other).problem == "exception"
    assert diagnosis.classify_error("ValueError", "Out-of-bounds") is None   # the type matters too


def test_a_load_error_is_reported_once_as_the_submission_wide_finding():
    assert _diagnose(Outcome("load-error")) is None
    cases = [
        (LoadError("syntax", message="invalid syntax", line=3), "syntax-error", "matmul.py:3"),
        (LoadError("missing-function", found=("matmul_kernel",)), "function-missing",
         "does not define matmul(x, y)"),
        (LoadError("arity", signature="matmul(x)", message="missing y"), "wrong-arity", "cannot be called"),
        (LoadError("exit", message="the submission called exit(0)"), "exit-at-import", "exit(0)"),
        (LoadError("timeout", limit_s=30.0), "import-timeout", "longer than 30 s"),
        (LoadError("memory"), "memory-limit", "600 MB"),
        (LoadError("died", returncode=3), "killed", "exit code 3"),
        (LoadError("import", error_type="ImportError", message="no module named x"), "import-error",
         "raised ImportError"),
    ]
    for err, problem, needle in cases:
        f = diagnosis.from_load_error(err, LOC, A)
        assert f.case is None and f.problem == problem and needle in f.message, (problem, f.message)


def test_notebook_frames_point_at_cells():
    loc = Located(Path("/w/nb/matmul.py"), Path("/w"), "matmul.ipynb", cells=((1, 1), (5, 3)))
    err = LoadError("import", error_type="NameError", message="x",
                    frames=('File "matmul.py", line 7, in <module>\n    x',))
    f = diagnosis.from_load_error(err, loc, A)
    assert f.facts()["frames"] == ["matmul.ipynb cell 3, line 3, in <module>\n    x"]


def test_the_untouched_starter_is_one_finding_for_the_whole_submission():
    raised = [diagnosis.from_outcome(A, r, Outcome("error", phase="trace", error_type="NotImplementedError",
                                                  message=""), REF, LOC) for r in PLAN.runs]
    f = diagnosis.starter_untouched(raised, A, LOC)
    assert f.case is None and f.problem == "not-implemented"
    assert f.message == ("matmul(x, y) in matmul.py still raises NotImplementedError: the starter has "
                         "not been filled in yet")
    other = diagnosis.from_outcome(A, RUN, Outcome("error", phase="trace", error_type="ValueError",
                                                   message="bad"), REF, LOC)
    assert diagnosis.starter_untouched(raised[:-1] + [other], A, LOC) is None


# -- memory never written, judged on the failing test's own case (grading.unwritten) --

ADD = assignments.find("add")
ADD_PLAN = planning.build(ADD, ADD.cases, ADD.rungs, 7, planners=PLANNERS)


def _add_scan(shape):
    from autograder.pallas_surface.static.facts import decode
    grid = [shape[0] // 8, shape[1] // 128]
    return decode("index-maps", {"calls": [{"grid": grid, "dimension_semantics": ["arbitrary"] * 2, "skipped": [],
                                            "operands": [{"operand": "output 0", "is_output": True,
                                                          "array_shape": list(shape), "block_shape": [8, 128],
                                                          "grid": grid, "partial_blocks": [], "partial_count": 0,
                                                          "out_of_bounds_count": 0, "out_of_bounds": []}]}]})


def _unwritten(test, out, fills=None, scan=True):
    from autograder.grading.probes import unwritten
    ref = np.random.default_rng(1).standard_normal(ADD.output_shape(test.case))
    outcomes = {r: _ok(f(ref)) for r, f in zip(planning.unwritten_runs(ADD_PLAN, test), fills or ())}
    got = out(ref)
    return unwritten.explain(ADD_PLAN, test, _ok(got), ref, outcomes, _add_scan(got.shape) if scan else None)


def _row7(fill):
    def out(ref):
        o = ref.copy()
        o[7::8] = fill
        return o
    return out


def test_a_row_that_changes_with_the_fill_is_uninitialized_memory_on_either_rung():
    # The generic test shows NaN there; TPU interpret mode shows another block's stale row.
    # Both are charged from the same case's fill reruns: the row changes with the fill.
    for rung, shown in (("generic", np.nan), ("tpu-interpret", 3.0)):
        test = ADD_PLAN.test_run(ADD.cases[0].name, rung)
        f = _unwritten(test, _row7(shown), [_row7(-2.5e-2), _row7(7.5e5)])
        assert f.id == "uninitialized-memory" and f.rung == rung and f.case == ADD.cases[0].name
        facts = f.facts()
        assert facts["own_case"] and facts["differing"] == facts["wrong_unwritten"] == 2 * 256
        assert facts["changed_by_block"]["counts"] == [128] * 4


def test_wrong_values_the_fill_does_not_change_are_not_unwritten():
    test = ADD_PLAN.test_run(ADD.cases[0].name, "generic")
    same = _row7(3.0)
    assert _unwritten(test, same, [same, same]) is None


def _partial_scan(shape):
    """Row blocks of 8 over a row count that is no multiple of 8: the last block is partial."""
    from autograder.pallas_surface.static.facts import decode
    grid = [-(-shape[0] // 8), shape[1] // 128]
    return decode("index-maps", {"calls": [{"grid": grid, "dimension_semantics": ["arbitrary"] * 2, "skipped": [],
                                            "operands": [{"operand": "output 0", "is_output": True,
                                                          "array_shape": list(shape), "block_shape": [8, 128],
                                                          "grid": grid, "block_grid": grid,
                                                          "partial_blocks": [], "partial_count": 2,
                                                          "out_of_bounds_count": 0, "out_of_bounds": []}]}]})


def _held(run, n=256):
    """What a rerun's fill puts in a row of ``n`` elements: values drawn element by
    element, the same in both reruns up to the second's scale (``fills``)."""
    return np.float32(np.random.default_rng(5).uniform(-1e6, 1e6, n)) * np.float32(run.fill.scale)


def _last_row_rerun(test, value_of_fill):
    """The test's output with its last row wrong, and its two fill reruns, where the
    last row is ``value_of_fill(the rerun's fill values)`` (the plan's own fills)."""
    from autograder.grading.probes import unwritten
    ref = np.random.default_rng(1).standard_normal((20, 256))
    outcomes = {}
    for r in planning.unwritten_runs(ADD_PLAN, test):
        o = ref.copy()
        o[-1] = value_of_fill(_held(r))
        outcomes[r] = _ok(o)
    got = ref.copy()
    got[-1] = np.nan
    return unwritten.explain(ADD_PLAN, test, _ok(got), ref, outcomes, _partial_scan(ref.shape))


def test_a_valid_row_in_a_partial_block_that_holds_the_fill_is_never_written():
    # A masked store off by one leaves out the array's last row, inside the partial
    # edge block. Output padding is dropped, so the row holds each rerun's own fill:
    # never stored, whatever the fill; not padding, and not a logic error.
    test = ADD_PLAN.test_run(ADD.cases[0].name, "generic")
    f = _last_row_rerun(test, lambda fill: fill)
    assert f is not None and f.id == "uninitialized-memory"
    assert f.facts()["never_written"] == 256 and "hold the fill itself" in f.message


def test_a_partial_block_row_computed_from_its_padding_is_no_unwritten_memory():
    # The row changes with the fill but never holds it (a reduction over the block's
    # padding rows): wrong with every fill, a logic error. Its NaN is the padding's,
    # not an overflow: wrong-result, which stands for the test's numerics symptom.
    test = ADD_PLAN.test_run(ADD.cases[0].name, "generic")
    f = _last_row_rerun(test, lambda fill: 2.0 * fill + 1.0)
    assert f is not None and f.id == "wrong-result" and f.problem == "padding-read"
    assert "not an overflow" in f.message


def test_nan_the_fill_does_not_explain_is_left_to_the_comparison():
    # NaN also in a row that no fill changes (an overflow, say): the padding does not
    # explain it, so nothing is said here and the test keeps its own verdict.
    from autograder.grading.probes import unwritten
    test = ADD_PLAN.test_run(ADD.cases[0].name, "generic")
    ref = np.random.default_rng(1).standard_normal((20, 256))
    outcomes = {}
    for r in planning.unwritten_runs(ADD_PLAN, test):
        o = ref.copy()
        o[-1], o[0] = 2.0 * _held(r) + 1.0, np.nan
        outcomes[r] = _ok(o)
    got = ref.copy()
    got[-1] = got[0] = np.nan
    assert unwritten.explain(ADD_PLAN, test, _ok(got), ref, outcomes, _partial_scan(ref.shape)) is None


def _input_partial_scan(shape):
    """A matmul-like call: x's K blocks of 256 over K = 384 stick out along axis 1, y's
    along axis 0; the output's (8, 128) blocks divide it."""
    from autograder.pallas_surface.static.facts import decode
    grid = [shape[0] // 8, shape[1] // 128, 2]

    def operand(name, array, block, partial):
        return {"operand": name, "is_output": name.startswith("output"), "array_shape": array,
                "block_shape": block, "grid": grid, "block_grid": [-(-a // b) for a, b in zip(array, block)],
                "partial_blocks": partial, "partial_count": len(partial), "out_of_bounds_count": 0,
                "out_of_bounds": []}
    x_last = [{"block_index": [0, 1], "element_range": [[0, 8], [256, 512]]}]
    y_last = [{"block_index": [1, 0], "element_range": [[256, 512], [0, 128]]}]
    return decode("index-maps", {"calls": [{"grid": grid, "dimension_semantics": ["arbitrary"] * 3, "skipped": [],
                                            "operands": [operand("input 0", [shape[0], 384], [8, 256], x_last),
                                                         operand("input 1", [384, shape[1]], [256, 128], y_last),
                                                         operand("output 0", list(shape), [8, 128], [])]}]})


def _k_padding_reruns(test, memory_too=False):
    """A sum over K whose last block is half padding: every output is off by the
    padding's fill squared (times the padded length); with ``memory_too``, by the
    accumulator's unzeroed start as well."""
    from autograder.grading.probes import unwritten
    ref = np.random.default_rng(1).standard_normal((20, 256))
    outcomes = {}
    for r in planning.unwritten_runs(ADD_PLAN, test):
        # (Each fill stands in by its scale: the same values, 1 or -1/128 times.)
        pad = (r.pad_fill if r.pad_fill is not None else r.fill).scale
        outcomes[r] = _ok(ref + 128 * pad ** 2 + (r.fill.scale if memory_too else 0.0))
    got = np.full_like(ref, np.nan)
    return unwritten.explain(ADD_PLAN, test, _ok(got), ref, outcomes, _input_partial_scan(ref.shape))


def test_padding_an_input_block_adds_to_every_sum_is_padding_dependence_not_unwritten():
    # The third rerun changes only the padding's fill: every wrong element follows it,
    # none follows the memory the kernel writes. The output has no partial block.
    test = ADD_PLAN.test_run(ADD.cases[0].name, "generic")
    f = _k_padding_reruns(test)
    assert f is not None and f.id == "padding-dependence" and f.problem == "input-padding"
    assert f.facts()["differing"] == f.facts()["wrong_padded"] == 20 * 256
    assert "padding of an input's partial block" in f.message
    assert "through the partial blocks of input 0 (along axis 1) and input 1 (along axis 0)" in f.message
    # An accumulator never zeroed as well: the memory the kernel writes changes the
    # output too, and that is what it is charged with first.
    assert _k_padding_reruns(test, memory_too=True).id == "uninitialized-memory"


def test_nan_in_whole_blocks_with_the_rest_right_is_unwritten_without_reruns():
    test = ADD_PLAN.test_run(ADD.cases[3].name, "generic")   # the tall secret case

    def blocks(ref):
        o = ref.copy()
        o[256:] = np.nan                                      # the last row of blocks
        return o
    f = _unwritten(test, blocks)
    assert f.id == "uninitialized-memory" and f.problem == "unwritten-blocks"

    def scattered(ref):
        o = ref.copy()
        o[::3, ::5] = np.nan                                  # overflow's pattern, not a block's
        return o
    assert _unwritten(test, scattered) is None
    assert _unwritten(test, blocks, scan=False) is None       # no block geometry: nothing to say


def test_the_poisoning_checks_fills_on_an_input_padding_case_are_that_padding():
    # The poisoning check fills padding and memory alike; where the case's own test's
    # reruns told them apart, its "uninitialized-memory" is the same padding (one root cause).
    from autograder.findings import Finding
    from autograder.grading.probes import unwritten
    own = Finding.make("padding-dependence", "generic", "padding", case="c", problem="input-padding",
                       partial_inputs=[{"operand": "input 0", "axes": [1]}])
    probe = Finding.make("uninitialized-memory", "tpu-interpret", "the output depends on memory the kernel never "
                         "wrote: wrong with every fill", case="c", check="poisoning", fills_failing=["nan"],
                         differing=4, total=4, changed_by_block={"counts": [4]})
    other = Finding.make("uninitialized-memory", "tpu-interpret", "unwritten", case="d", check="poisoning")
    got = unwritten.same_padding([own, probe, other])
    assert got[0] is own and got[2] is other
    assert got[1].id == "padding-dependence" and got[1].problem == "input-padding" and got[1].check == "poisoning"
    assert "not memory the kernel never wrote" in got[1].message and "changed_by_block" not in got[1].facts()
    assert got[1].facts()["partial_inputs"] == [{"operand": "input 0", "axes": [1]}]


# --- overflow: NaN or Inf that only larger inputs bring is numerics ----------------------

FA = assignments.find("flash_attention")
FA_PLAN = planning.build(FA, FA.cases, FA.rungs, 7)


def _nan_and_far_off(case: str, rung: str):
    """What the comparison says of no_running_max.py on the q x 40 case: mostly NaN, and
    finite outputs far off (a sum that overflowed to Inf divides them to 0)."""
    return diagnosis.Finding.make(
        "wrong-result", rung, "48064 of 49152 outputs are wrong", case=case, run=0, mismatches=48064,
        total=49152, nonfinite=47791, finite_relative_to_output=0.54, first_mismatches=[[0, 0, 0]],
        max_abs_error="inf", max_rel_error="inf", relative_to_output="inf", atol=2e-4, rtol=1e-4)


def test_nan_only_at_a_larger_input_scale_is_an_overflow_charged_as_numerics():
    scaled = "logits-f32-b2-s384-d64"          # q scaled by 40; f32-b2-s384-d64 is the same, unscaled
    found = diagnosis.overflows(FA_PLAN, [_nan_and_far_off(scaled, r) for r in FA.rungs])
    assert [(f.id, f.case, f.rung) for f in found] == [("numerics", scaled, r) for r in FA.rungs]
    facts = found[0].facts()
    assert facts["overflow"] is True and facts["scaled"] == "q scaled by 40"
    assert facts["right_on"] == "f32-b2-s384-d64" and facts["nonfinite"] == 47791
    assert "overflows at this case's input scale (q scaled by 40)" in found[0].message


def test_nan_where_the_smaller_case_fails_too_or_the_padding_put_it_stays_a_logic_error():
    scaled, plain = "logits-f32-b2-s384-d64", "f32-b2-s384-d64"
    # Wrong on the unscaled case too: the size of the values is not what broke it.
    both = [_nan_and_far_off(scaled, "generic"), _nan_and_far_off(plain, "generic")]
    assert [f.id for f in diagnosis.overflows(FA_PLAN, both)] == ["wrong-result", "wrong-result"]
    # NaN the fill reruns traced to the padding: wrong-result, whatever the scale.
    padded = _nan_and_far_off(scaled, "generic").with_facts(padding_read=True)
    assert diagnosis.overflows(FA_PLAN, [padded])[0].id == "wrong-result"
    # A case of another dtype is no baseline: bf16's passing says nothing of float32's range.
    bf16 = planning.build(FA, tuple(c for c in FA.cases if c.dtype == "bfloat16" or c.name == scaled), FA.rungs, 7)
    assert diagnosis.overflows(bf16, [_nan_and_far_off(scaled, "generic")])[0].id == "wrong-result"
