"""Rendering from findings (no JAX): formats, hidden-case redaction, strict templates."""
from dataclasses import replace

import jinja2
import pytest

from autograder.feedback import blockmaps, render, results
from autograder.findings import Finding
from autograder.grading import assignments
from autograder.grading.grade import Report
from autograder.grading.judge import scoring
from autograder.grading.probes import PLANNERS
from autograder.grading.run import plan as planning


def _report(findings, probes=False):
    a = assignments.find("matmul")
    plan = planning.build(a, a.cases, a.rungs, 7, planners=PLANNERS if probes else None)
    return Report(a, "matmul.py", plan, scoring.score(plan, findings), findings, "matmul.py", 1.0)


def _wrong(case, rung="generic"):
    return Finding.make("wrong-result", rung, "65535 of 65536 outputs are wrong", case=case,
                        max_abs_error=85.5, max_rel_error=1.0, relative_to_output=0.9,
                        mismatches=65535, total=65536, first_mismatches=[[0, 0]], nonfinite=0,
                        atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("fmt", render.FORMATS)
def test_every_format_renders_a_failed_visible_test_with_snippet(fmt):
    rep = _report([_wrong("f32-256x384x256")])
    view = render.report_view(rep)
    out = render.render_test(view["tests"][0], fmt)
    assert "wrong-result" in out and "default_rng([1001, 7, 0])" in out and "--run-key 7" in out and "256, 384" in out
    assert "--case f32-256x384x256 --rung generic" in out
    whole = render.render_report(view, fmt)
    assert "[wrong-result]" in whole


def test_tpu_rung_snippet_forces_tpu_interpret_mode():
    rep = _report([_wrong("f32-256x384x256", "tpu-interpret")])
    out = render.render_test(render.report_view(rep)["tests"][1], "text")
    assert "force_tpu_interpret_mode(pltpu.InterpretParams())" in out


def test_hidden_tests_show_no_shape_seed_or_expected_values():
    hidden = [c for c in assignments.find("matmul").cases if not c.visible][0]
    rep = _report([_wrong(hidden.name)])
    view = render.report_view(rep)
    t = next(t for t in view["tests"] if not t["passed"])
    out = render.render_test(t, "md")
    assert str(hidden.seed) not in out and hidden.name not in out
    for dim in hidden.dim_map.values():
        assert f"{dim}," not in out and f"[{dim}" not in out
    assert "65536" not in out and "85.5" not in out and "default_rng" not in out
    assert "secret case" in t["name"]


def test_html_escapes_student_text():
    f = Finding.make("submission-error", "static", "<script>alert(1)</script>",
                     check="submission", problem="import-error", file="add.py", type="X",
                     detail="<b>", frames=[])
    rep = _report([f])
    out = render.render_summary(render.report_view(rep), "html")
    assert "<script>" not in out and "&lt;script&gt;" in out


def test_a_reference_to_another_test_links_on_the_page_only_and_the_text_beside_it_is_escaped():
    bold = [replace(_wrong(c), message="<b>65535</b> of 65536 outputs are wrong")
            for c in ("f32-256x384x256", "bf16-256x384x256")]
    view = render.report_view(_report(bold))
    line = ('<p>Problem 1, Wrong result [wrong-result], explained under <a href="#test-1.1">test 1.1</a>: '
            '&lt;b&gt;65535&lt;/b&gt; of 65536 outputs are wrong.</p>')
    assert line in render.render_report(view, "html")
    # A test's html alone (Gradescope's: no sections to link to), Markdown and text keep the words.
    pointer = next(t for t in view["tests"] if t["number"] == "2.1")
    assert render.render_test(pointer, "html").startswith(
        "<p>Problem 1, Wrong result [wrong-result], explained under test 1.1: &lt;b&gt;65535")
    assert render.render_test(pointer, "text").startswith(
        "Problem 1, Wrong result [wrong-result], explained under test 1.1: <b>65535</b>")
    assert render.render_test(pointer, "md").startswith(
        "Problem 1, Wrong result [wrong-result], explained under test 1.1: &lt;b>65535&lt;/b>")


def test_templates_fail_on_a_missing_field():
    with pytest.raises(jinja2.UndefinedError):
        render.render("test.j2", "md", test={"passed": True})


def test_vmem_overflow_lists_buffered_blocks_and_run_scoped_buffers():
    a = assignments.find("matmul")
    f = Finding.make("vmem-overflow", "static", "needs 20.0 MiB", case=a.probe_cases[0], check="vmem",
                     bytes=20 * 2 ** 20, limit_bytes=16 * 2 ** 20, chip="TPU v5e", production_dims={"K": 8},
                     production_dtype="bfloat16", scratch=[],
                     blocks=[{"operand": "input 0", "shape": [512, 512], "dtype": "bfloat16", "buffers": 3,
                              "buffering": "pl.Buffered(3)", "bytes": 1572864}],
                     scoped=[{"shape": [256, 128], "dtype": "float32", "bytes": 131072}])
    rep = _report([f], probes=True)
    vmem = next(i for i, t in enumerate(rep.tests) if t.probe == "vmem")
    out = render.render_test(render.report_view(rep)["tests"][vmem], "text")
    assert "x3 (pl.Buffered(3)) = 1572864 bytes" in out
    assert "pl.run_scoped 256x128 float32 = 131072 bytes" in out


class _Tags(__import__("html.parser").parser.HTMLParser):
    """Checks that every opened tag is closed, in order."""

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.seen = [], [], []

    def handle_starttag(self, tag, attrs):
        self.seen.append(tag)
        if tag not in ("br", "meta", "img", "hr", "input", "link"):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(tag)


@pytest.mark.parametrize("fmt", render.FORMATS)
def test_each_format_has_its_own_structure_and_nothing_of_the_others(fmt):
    rep = _report([_wrong("f32-256x384x256")])
    view = render.report_view(rep)
    out = render.render_report(view, fmt)
    one = render.render_test(view["tests"][0], fmt)
    failed = sum(not t.passed for t in rep.tests)
    if fmt == "md":
        assert out.count("\n```\n") % 2 == 0 and out.count("```") >= 2
        assert "#### Wrong result [wrong-result], problem 1" in one and "<h3>" not in out
        assert "#### Problems found: 1" in out
    elif fmt == "html":
        parser = _Tags()
        parser.feed(out)
        assert parser.errors == [] and parser.stack == []
        assert out.startswith("<!DOCTYPE html>") and "<style>" in out and "<script>" in out
        assert 'class="test fail"' in out and 'class="test pass"' in out
        assert "<h3>Wrong result [wrong-result], problem 1</h3>" in one and "<pre><code>" in out
        assert "####" not in out and "```" not in out
    else:
        assert "Wrong result [wrong-result], problem 1\n-----------------------" in one
        assert "Problems found: 1\n-----------------" in out
        assert "<h3>" not in out and "####" not in out and "```" not in out
    assert out.count("[wrong-result]") >= failed


def test_a_problem_is_explained_once_and_pointed_to_elsewhere():
    a = assignments.find("matmul")
    visible = [c.name for c in a.cases if c.visible]
    rep = _report([_wrong(c) for c in visible])
    view = render.report_view(rep)
    assert [(p["id"], p["cost"], p["explained_in"]) for p in view["problems"]] == \
        [("wrong-result", ["1.1", "2.1"], "1.1")]
    out = render.render_report(view, "text")
    assert out.count("Which rung catches it") == 1 and out.count("default_rng") == 1
    pointer = out[out.index("[FAIL] 2.1 "):].split("[PASS]")[0]
    assert "problem 1, see 1.1" in pointer and "--case " + visible[1] in pointer
    # Gradescope's per-test output: in full where explained, one line elsewhere.
    second = render.render_test(view["tests"][2], "md")
    assert "explained under test 1.1" in second and "Which rung" not in second
    assert "--case " + visible[1] in second


def test_fixing_one_of_two_bugs_changes_what_the_student_sees():
    a = assignments.find("matmul")
    case = a.probe_cases[0]
    revisit = Finding.make("output-block-revisit", "tpu-interpret", "revisited", case=case, check="grid-order")
    uninit = Finding.make("uninitialized-memory", "tpu-interpret", "unzeroed", case=case, check="poisoning",
                          fills_passing=[], fills_failing=["nan", "zero"], differing=4, total=8)
    both = render.report_view(_report([_wrong(case, "tpu-interpret"), revisit, uninit], probes=True))
    one = render.report_view(_report([_wrong(case, "tpu-interpret"), revisit], probes=True))
    # The poisoning check's finding is the revisit seen on its own test's case and rung: the
    # grader charges it as problem 1, so it is one note under problem 1, not a problem (with a
    # ladder and a fix of its own); fixing the revisit makes the note go.
    assert [p["id"] for p in both["problems"]] == [p["id"] for p in one["problems"]] == ["output-block-revisit"]
    explained = next(t for t in both["tests"] if t["explained_here"])
    poisoning = next(t["number"] for t in both["tests"] if t["probe"] == "poisoning")
    assert explained["notes"] == [f"check {poisoning} (poisoning) sees this bug too, as depends on uninitialized "
                                  "memory [uninitialized-memory]: unzeroed"]
    assert explained["also_explained"] == [] and not next(t for t in one["tests"] if t["explained_here"])["notes"]
    text = render.render_report(both, "text")
    assert text.count("Which rung catches it") == 1 and "note: check" in text
    assert render.render_report(both, "text") != render.render_report(one, "text")


# --- block maps: one per problem, where it is explained; SVG only in the page -----------------

PROBE_CASE = "f32-256x384x256"


def _static_oob(case=PROBE_CASE):
    return Finding.make(
        "out-of-bounds", "static", "input 0 at grid point (0, 0, 2) addresses block (0, 2)", case=case,
        check="index-maps", operand="input 0", grid_point=[0, 0, 2], block_index=[0, 2],
        element_range=[[0, 128], [256, 384]], array_shape=[256, 256], block_shape=[128, 128], grid=[2, 2, 3],
        count=4, examples=[], stops_tpu_interpret=True, read_instead=[[0, 128], [128, 256]],
        outside_blocks=[{"block_index": [0, 2], "grid_point": [0, 0, 2]}])


def _runtime_oob(case, window=True):
    where = {"element_range": [[0, 128], [256, 384]], "array_shape": [256, 256], "access": "read",
             "read_instead": [[0, 128], [128, 256]], "block_index": [0, 2], "grid_point": [0, 0, 2],
             "operand": 'input "x_ref"'} if window else None
    return Finding.make("out-of-bounds", "tpu-interpret", "IndexError: Out-of-bounds block index (0, 2)",
                        case=case, rule="every block must lie inside its array", type="IndexError",
                        detail="Out-of-bounds block index (0, 2)", frames=[], phase="run", window=where)


def test_a_problem_gets_one_map_where_it_is_explained_in_every_format():
    hidden = [c for c in assignments.find("matmul").cases if not c.visible][0].name
    rep = _report([_static_oob(), _runtime_oob(PROBE_CASE), _runtime_oob("bf16-256x384x256"),
                   _runtime_oob(hidden)], probes=True)
    view = render.report_view(rep)
    legend = "X asked for outside the array"
    for fmt in ("text", "md"):
        assert render.render_report(view, fmt).count(legend) == 1
    explained = next(t for t in view["tests"] if t["finding"] and t["finding"]["map"])
    assert explained["number"] == "1.2"
    assert 'input "x_ref" (256, 256) in 128 x 128 blocks; case f32-256x384x256' in explained["finding"]["map"]["text"]
    # The self-contained page draws it as inline SVG; results.json's html keeps the text
    # (Gradescope sanitizes html by rules it does not publish).
    page = render.render_report(view, "html")
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" class="blockmap"') == 1
    assert "<svg" not in render.render_test(explained, "html") and legend in render.render_test(explained, "html")
    doc = results.results_document(rep, "md", view)
    carried = {t["number"]: t.get("extra_data", {}).get("block_maps") for t in doc["tests"]}
    assert [n for n, maps in carried.items() if maps] == ["1.2"]
    assert blockmaps.decode(carried["1.2"][0]) is not None
    # The static scan's words give way to the map where the map is drawn.
    assert "Grid points affected" not in render.render_test(explained, "text")


def test_a_map_drawn_at_another_case_says_where():
    rep = _report([_runtime_oob("bf16-256x384x256", window=False), _static_oob()], probes=True)
    view = render.report_view(rep)
    t = next(t for t in view["tests"] if t["finding"] and t["finding"]["map"])
    assert t["number"] == "2.2"
    assert "Drawn at case f32-256x384x256, where the index-maps check saw the same fault." in \
        " ".join(t["finding"]["map"]["text"].split())


def test_secret_cases_never_give_a_map_and_the_feedback_says_so():
    hidden = [c for c in assignments.find("matmul").cases if not c.visible][0]
    rep = _report([_runtime_oob(hidden.name)], probes=True)
    view = render.report_view(rep)
    t = next(t for t in view["tests"] if t["finding"] and t["explained_here"])
    assert t["finding"]["map"] is None
    out = render.render_test(t, "text")
    assert "No block map: this fault was seen only on secret cases, whose shapes are never shown." in \
        " ".join(out.split())
    assert "256" not in out and "x_ref" not in out


def test_a_secret_cases_map_drawn_at_a_stress_input_names_that_input():
    # Issue 45: a secret case's map was said to be drawn at a visible case that passed, with
    # a stress input's shapes. What was drawn is named: the check and its stress input.
    a = assignments.find("matmul")
    hidden = [c for c in a.cases if not c.visible][0]
    rep = _report([_runtime_oob(hidden.name)], probes=True)
    stress = next(r for r in rep.plan.runs if r.stress is not None)
    seen = replace(_static_oob(stress.case.name), check="numerics", run=stress.index)
    rep = _report([_runtime_oob(hidden.name), seen], probes=True)
    t = next(t for t in render.report_view(rep)["tests"] if t["finding"] and t["finding"]["map"])
    text = " ".join(t["finding"]["map"]["text"].split())
    drawn = f"case {stress.case.name}, the numerics check's stress input {stress.stress.name}"
    assert f"Drawn at {drawn}, where the numerics check shows the same fault: a secret case's shapes are " \
        "never shown." in text and f"; {drawn}" in text


def test_a_grid_order_hang_says_it_has_no_order_to_draw():
    hang = Finding.make("grid-order-dependence", "tpu-interpret", "TPU interpret mode hung", case=PROBE_CASE,
                        check="races", problem="hang", limit_s=10.0, interpret_params={}, right_in_order=True)
    view = render.report_view(_report([hang], probes=True))
    t = next(t for t in view["tests"] if t["finding"] and t["explained_here"])
    assert t["finding"]["map"] is None
    assert "No map of the grid order: the shuffled run hung" in render.render_test(t, "text")


def _code_lines(view) -> set[str]:
    """Every line of the report's code blocks (commands, snippets, block maps): kept
    whole, to paste, whatever their width."""
    code = set()
    for t in view["tests"]:
        for text in (t["command"], t["snippet"], *[fv["map"]["text"] for fv in (t["finding"], *t["also_explained"])
                                                   if fv and fv["map"]]):
            code |= {line.strip() for line in (text or "").splitlines()}
    return code


def test_the_terminal_report_ends_with_the_score_and_the_problems_within_80_columns():
    a = assignments.find("matmul")
    visible = [c.name for c in a.cases if c.visible]
    view = render.report_view(_report([_wrong(c) for c in visible], probes=True))
    out = render.render_report(view, "text")
    lines = out.splitlines()
    # The last screen of an 80 x 24 terminal: the score, each problem, the counts.
    last = "\n".join(lines[-23:])
    assert f"{a.title}: 15 / 18" in last and "Problems found: 1" in last
    assert "  1. Wrong result [wrong-result]: cost 3 points in tests 1.1, 2.1. Fix: check\n" in last
    assert "16 tests, as Gradescope lists them: 2 failed, 14 passed." in " ".join(last.split())
    assert lines[-23:].count("=" * 79) == 1
    # Prose wraps at 79 columns; only code (to paste as is) may be wider.
    code = _code_lines(view)
    assert [line for line in lines if len(line) > 79 and line.strip().removeprefix("reproduce: ") not in code] == []


def test_checks_that_keep_their_points_say_why_in_one_line_and_are_counted_apart():
    a = assignments.find("matmul")
    case = a.probe_cases[0]
    revisit = Finding.make("output-block-revisit", "tpu-interpret", "revisited", case=case, check="grid-order")
    view = render.report_view(_report([_wrong(case, "tpu-interpret"), revisit], probes=True))
    order = next(t for t in view["tests"] if t["probe"] == "grid-order")
    assert (order["state"], order["badge"], order["snippet"]) == ("same", "SAME BUG", None)
    md = render.render_test(order, "md")
    assert md == ("Same bug, not charged again: this check found problem 1, Output block revisited "
                  "[output-block-revisit], which already cost points in test 1.2.\n")
    text = " ".join(render.render_report(view, "text").split())
    assert ("[SAME BUG] P6 Grid order: shuffled parallel axes, two cores (1/1): problem 1 again (charged "
            "in 1.2), not charged again") in text
    assert "[PASS] P6" not in text and view["listing"]["same"] == 1


def _unwritten(case, check="poisoning", rung="tpu-interpret"):
    return Finding.make("uninitialized-memory", rung, "the output depends on memory the kernel never wrote",
                        case=case, check=check, fills_passing=[], fills_failing=["fill-1", "fill-2"],
                        differing=10, total=65536, first_differing=[0, 0])


def test_a_test_tied_to_its_problem_by_another_cases_check_replays_that_evidence_too():
    # Issue 45: flash attention's accumulator reset on the query axis fails test 3.1 with a
    # plain wrong result of its own, and the whole grading ties it to the poisoning check's
    # finding on case 1 (TPU interpret mode, compared with that case's test there). Its command
    # replayed case 3 on the generic rung alone, which runs neither: another finding and fix.
    a = assignments.find("matmul")
    first, second = [c.name for c in a.cases if c.visible]
    hidden = next(c.name for c in a.cases if not c.visible)
    rep = _report([_wrong(first), _wrong(second), _unwritten(first)], probes=True)
    view = render.report_view(rep)
    tests = {t["number"]: t for t in view["tests"]}
    assert tests["2.1"]["finding"]["id"] == "uninitialized-memory" and tests["2.1"]["explained_here"] is False
    # Both cases, every rung (no --rung): the check's own runs and the test run they compare with.
    assert tests["2.1"]["command"] == (f"python -m autograder grade matmul.py -a matmul --case {first} "
                                       f"--case {second} --run-key 7")
    # A test whose finding is its own run's still replays that test alone.
    own = render.report_view(_report([_wrong(second)], probes=True))
    assert next(t for t in own["tests"] if t["number"] == "2.1")["command"].endswith(
        f"--case {second} --rung generic --run-key 7")
    # A tie seen on a secret case only: no command (none may name it, and a replay without it
    # shows another finding), and its name appears nowhere.
    secret = render.report_view(_report([_wrong(second), _unwritten(hidden)], probes=True))
    tied = next(t for t in secret["tests"] if t["number"] == "2.1")
    assert tied["finding"]["id"] == "uninitialized-memory" and tied["command"] is None
    assert hidden not in render.render_report(secret, "text")


def test_the_replay_of_a_test_names_the_cases_and_rungs_its_verdict_read():
    from autograder.feedback import repro
    a = assignments.find("matmul")
    first, second = [c for c in a.cases if c.visible]
    hidden = next(c for c in a.cases if not c.visible)

    def names(replay):
        return None if replay is None else ([c.name for c in replay.cases], list(replay.rungs))
    assert names(repro.replay_of(a, second, "generic", None)) == ([second.name], ["generic"])
    assert names(repro.replay_of(a, second, "generic", _wrong(second.name))) == ([second.name], ["generic"])
    # A static check's finding on another case: its scan, on the test's own rung.
    static = _unwritten(first.name, check="index-maps", rung="static")
    assert names(repro.replay_of(a, second, "generic", static)) == ([first.name, second.name], ["generic"])
    # A check that ran the kernel: every rung (the test runs it compares with).
    assert names(repro.replay_of(a, second, "generic", _unwritten(first.name))) == ([first.name, second.name], [])
    # An overflow read from the smaller inputs another case gets right on this rung; a
    # small error read as the logic error another case shows (of any rung).
    over = Finding.make("numerics", "generic", "overflow", case=second.name, right_on=first.name)
    assert names(repro.replay_of(a, second, "generic", over)) == ([first.name, second.name], ["generic"])
    far = Finding.make("wrong-result", "generic", "far", case=second.name, one_cause=True, far_case=first.name)
    assert names(repro.replay_of(a, second, "generic", far)) == ([first.name, second.name], [])
    # Never a secret case: a secret case's verdict is not named (its facts say None), and a
    # check's finding seen there only gives no replay.
    quiet = Finding.make("numerics", "generic", "overflow", case=second.name, right_on=hidden.name)
    assert names(repro.replay_of(a, second, "generic", quiet)) == ([second.name], ["generic"])
    assert repro.replay_of(a, second, "generic", _unwritten(hidden.name)) is None
    cmd = repro.KIT.command(a, repro.replay_of(a, second, "generic", _unwritten(first.name)), "matmul.py", 7)
    assert cmd == f"python -m autograder grade matmul.py -a matmul --case {first.name} --case {second.name} --run-key 7"
