"""What a secret case's findings carry (pure logic, no JAX): only the grader's
words and coarse bands, whatever the submission made its failure look like."""
import pytest

from autograder.feedback import render
from autograder.findings import Finding
from autograder.grading import assignments
from autograder.grading.grade import Report
from autograder.grading.judge import scoring, secrecy
from autograder.grading.run import plan as planning

A = assignments.find("matmul")
SECRET = next(c for c in A.cases if not c.visible)
VISIBLE = next(c for c in A.cases if c.visible)


def _rendered(finding, planners=None):
    """The secret case's failed test, as a student sees it, in every format."""
    plan = planning.build(A, A.cases, A.rungs, 7, planners=planners)
    findings = secrecy.shown_findings(A, [finding])
    rep = Report(A, "matmul.py", plan, scoring.score(plan, findings), findings, "matmul.py", 1.0)
    view = render.report_view(rep)
    t = next(t for t in view["tests"] if not t["passed"])
    return findings[0], "\n".join(render.render_test(t, fmt) for fmt in render.FORMATS)


def test_an_exception_made_at_trace_time_shows_neither_its_class_nor_its_frames():
    f = Finding.make("submission-error", "generic", "raised Shape_384_512 while tracing: M=384",
                     case=SECRET.name, problem="exception", type="Shape_384_512", detail="M=384 K=512",
                     frames=['File "matmul.py", line 9, in leak_384_512\n    raise Shape_384_512()'], phase="trace")
    shown, out = _rendered(f)
    assert shown.facts()["type"] == "an exception" and shown.facts()["frames"] == []
    assert shown.message == "raised an exception while tracing"
    assert "Your code raised an exception while tracing" in out
    for leak in ("384", "512", "Shape_", "leak_"):
        assert leak not in out and leak not in shown.message, leak


@pytest.mark.parametrize("raised", ["KeyError", "ValueError", "ZeroDivisionError", "JaxRuntimeError", "Exception"])
def test_a_secret_case_shows_that_it_raised_never_which_exception(raised):
    """Even a builtin's name is a choice of the submission's: 28 names spell ~5 bits of
    a secret dimension a submission. Every path a secret case's words take says only
    that it raised: the test's own run, a probe run that raised, a check's note."""
    from autograder.grading import probes
    from autograder.isolation.outcome import Outcome
    own = Finding.make("submission-error", "generic", f"raised {raised} while running: M=384",
                       case=SECRET.name, problem="exception", type=raised, detail="shape (384, 512)", frames=[],
                       phase="run")
    probe = Finding.make("uninitialized-memory", "tpu-interpret", f"the kernel raised {raised} with other values",
                         case=SECRET.name, check="poisoning", problem="probe-run-raised", type=raised, phase="run")
    known = Finding.make("out-of-bounds", "tpu-interpret", f"{raised}: index 384 out of bounds", case=SECRET.name,
                         type=raised, rule="a block outside", detail="384", frames=[], phase="run")
    for f in (own, probe, known):
        shown, out = _rendered(f, probes.PLANNERS)
        assert raised not in out and raised not in shown.message and raised not in str(shown.facts()), f.id
        assert shown.facts()["type"] == "an exception"
    assert probes._why(Outcome("error", error_type=raised), visible=False) == "it raised an exception"
    assert probes._why(Outcome("error", error_type=raised), visible=True) == f"it raised {raised}"


def test_an_exit_status_is_not_shown():
    f = Finding.make("submission-error", "tpu-interpret", "the process ended abruptly (exit code 128)",
                     case=SECRET.name, problem="killed", exit="exit code 128", stderr_tail="M=384")
    shown, out = _rendered(f)
    assert "exit" not in shown.facts() and "stderr_tail" not in shown.facts()
    assert "128" not in out and "384" not in out


@pytest.mark.parametrize("wrong,band", [(1, "under 1% of the outputs"), (1000, "1% to 10% of the outputs"),
                                        (30000, "10% to 50% of the outputs"),
                                        (60000, "more than half of the outputs"), (98304, "every output")])
def test_the_share_of_wrong_outputs_is_a_coarse_band(wrong, band):
    total = 384 * 256
    f = Finding.make("wrong-result", "generic", f"{wrong} of {total} outputs are wrong", case=SECRET.name,
                     mismatches=wrong, total=total, max_abs_error=1.25, max_rel_error=0.5, relative_to_output=0.0123,
                     first_mismatches=[[0, 1]], nonfinite=0, atol=2e-5, rtol=1e-5)
    shown, out = _rendered(f)
    assert shown.facts()["mismatch_text"] == band and band in out
    assert f"{wrong} of" not in shown.message and f"{wrong} of" not in out and str(total) not in out
    assert "1.25" not in out and "0.0123" not in out and "1.2%" not in out


def test_numerics_says_some_or_all_and_the_error_as_a_band():
    f = Finding.make("numerics", "generic", "7 of 98304 outputs are NaN", case=SECRET.name, mismatches=7,
                     total=98304, nonfinite=7, relative_to_output=3.7e-3, max_abs_error=0.5, max_rel_error=0.1,
                     first_mismatches=[[1, 2]], atol=2e-5, rtol=1e-5)
    shown, out = _rendered(f)
    assert shown.facts()["nonfinite"] == "Some" and "Some outputs are NaN or Inf" in out
    assert "7 " not in out.replace("0.7", "") and "98304" not in out
    quiet = secrecy.shown(Finding.make("numerics", "generic", "x", case=SECRET.name, mismatches=3, total=10,
                                       nonfinite=0, relative_to_output=3.7e-3))
    assert quiet.facts()["relative_to_output"] == "under 1%" and quiet.facts()["nonfinite"] == 0


def test_a_time_limit_scaled_by_the_grid_is_a_band_and_upstream_words_are_withheld():
    f = Finding.make("submission-error", "tpu-interpret", "did not finish within 23.7 s", case=SECRET.name,
                     problem="timeout", limit_s=23.7, not_run=False, phase="run")
    shown, out = _rendered(f)
    assert shown.facts()["limit_s"] == 30 and "23.7" not in out
    oob = Finding.make("out-of-bounds", "tpu-interpret", "IndexError: reading [384:392] but input has shape (384, 512)",
                       case=SECRET.name, rule="a block outside the array", type="IndexError",
                       detail="input has shape (384, 512)", frames=[], phase="run",
                       window={"element_range": [[384, 392]], "array_shape": [384, 512]})
    shown, out = _rendered(oob)
    assert shown.facts()["window"] is None and shown.facts()["rule"] == "a block outside the array"
    assert "384" not in out and "512" not in out and "384" not in shown.message


def test_a_visible_case_keeps_everything():
    f = Finding.make("submission-error", "generic", "raised Boom while tracing", case=VISIBLE.name,
                     problem="exception", type="Boom", frames=["frame"], detail="d", phase="trace")
    assert secrecy.shown_findings(A, [f]) == [f]
