"""A ref slice past its end, and where a problem seen on another case is explained (no JAX).

The DMA of dma_scale/corpus/chunks_from_wrong_axis.py: JAX refuses its slice while
tracing ("Out of bound slice: start=192, dim=192", tests/test_canaries.py has the
real error on both releases); its other case never stores half its rows.
"""
import pytest

from autograder.feedback import render
from autograder.findings import Finding
from autograder.grading import assignments
from autograder.grading.grade import Report
from autograder.grading.identity.sources import Sources
from autograder.grading.judge import diagnosis, scoring
from autograder.grading.probes import PLANNERS
from autograder.grading.run import plan as planning
from autograder.isolation.outcome import Outcome

SLUG = "dma_scale"
FRAMES = ['File "dma_scale.py", line 30, in dma_scale\n    return pl.pallas_call(',
          'File "dma_scale.py", line 22, in dma_scale_kernel\n    fetch(c + 1, (c + 1) % 2).start()',
          'File "dma_scale.py", line 15, in fetch\n    return pltpu.make_async_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK)],']
FIX = ("a DMA or ref slice starts at 192 of a dimension of 192 (its elements are 0 to 191): keep every pl.ds "
       "inside the array")


@pytest.mark.parametrize("message, expected", [
    ("Out of bound slice: start=192, dim=192.", {"start": 192, "dim": 192}),
    ("Out of bound slice: start=120, size=16, stride=1, dim=128.", {"start": 120, "size": 16, "stride": 1, "dim": 128}),
])
def test_the_slice_error_is_out_of_bounds_with_its_own_numbers(message, expected):
    rule = diagnosis.classify_error("ValueError", message)
    assert rule is not None and rule.finding == "out-of-bounds"
    assert diagnosis.oob_slice(message) == expected
    # Another exception type with the same words is not JAX's indexer.
    assert diagnosis.classify_error("TypeError", message) is None
    assert diagnosis.oob_slice("Out-of-bounds block index (2,) for input") is None


def _slice_finding(case: str, rung: str, message="Out of bound slice: start=192, dim=192.") -> Finding:
    outcome = Outcome("error", error_type="ValueError", message=message, phase="trace", frames=FRAMES)
    f = diagnosis.known_error(outcome, rung, case, FRAMES, run=0)
    assert f is not None
    return f


def test_the_fix_speaks_the_slices_numbers_at_the_line_the_traceback_names():
    from autograder.feedback import fixes
    f = _slice_finding("f32-192x256", "generic")
    assert f.id == "out-of-bounds" and f.facts()["slice"] == {"start": 192, "dim": 192}
    assert f.facts()["phase"] == "trace" and "window" not in f.facts()
    text = "\n" * 14 + "        return pltpu.make_async_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK)],\n"
    sources = Sources(file="dma_scale.py", text=tuple(text.split("\n")), where=lambda file, line: f"{file}:{line}")
    fix = fixes.fix(f, assignments.find(SLUG), sources=sources)
    assert fix.specific and fix.what == FIX
    assert fix.at is not None and fix.at.where == "dma_scale.py:15"
    assert fix.at.text == "return pltpu.make_async_copy(x_hbm.at[pl.ds(c * CHUNK, CHUNK)],"
    runs_out = _slice_finding("f32-192x256", "generic", "Out of bound slice: start=160, size=64, stride=1, dim=192.")
    assert fixes.fix(runs_out).what == (
        "a DMA or ref slice of 64 elements from 160 ends at 223, past the end of a dimension of 192 (its elements "
        "are 0 to 191): keep every pl.ds inside the array")
    # A frame of another file (JAX's own) is no line of the student's.
    assert sources.innermost(['File "indexing.py", line 110, in __post_init__\n    raise']) is None


def _grading():
    a = assignments.find(SLUG)
    plan = planning.build(a, a.cases, a.rungs, 5, planners=PLANNERS)
    small, tall = a.cases[0].name, a.cases[1].name
    unwritten = dict(fills_passing=[], fills_failing=["fill-a", "fill-b"], differing=16384, total=32768,
                     first_differing=[128, 0], wrong_unwritten=16384, wrong=16384, changed_by_block=[],
                     own_case=True, rerun_rung="generic", never_written=16384, first_never=[128, 0])
    findings = [_slice_finding(small, rung) for rung in a.rungs]
    findings += [Finding.make("uninitialized-memory", rung, "the output depends on memory the kernel never wrote",
                              case=tall, **unwritten) for rung in a.rungs]
    # The poisoning check saw it on the tall case too, with fills of its own and no count.
    findings.append(Finding.make("uninitialized-memory", "tpu-interpret", "wrong with every fill tried",
                                 case=tall, check="poisoning", fills_passing=[], fills_failing=["fill-1", "fill-2"],
                                 differing=16083, total=32768, first_differing=[128, 0]))
    return a, plan, findings


def test_a_test_refused_while_tracing_carries_no_other_cases_finding():
    a, plan, findings = _grading()
    tests = scoring.score(plan, findings)
    by_number = {t.number: t for t in tests}
    assert by_number["1.1"].finding.id == "out-of-bounds" and by_number["1.1"].others == ()
    assert by_number["2.1"].finding.id == "uninitialized-memory"
    report = Report(a, "dma_scale.py", plan, tests, findings, "dma_scale.py", 1.0)
    view = render.report_view(report)
    assert [(p["id"], p["explained_in"]) for p in view["problems"]] == \
        [("out-of-bounds", "1.1"), ("uninitialized-memory", "2.1")]
    first = next(t for t in view["tests"] if t["number"] == "1.1")
    assert first["also_explained"] == [] and first["also"] == []


def test_a_problem_also_on_a_test_of_another_case_is_explained_where_its_case_showed_it():
    # A run that raised (not while tracing) on the small case: the poisoning check's
    # finding from the tall case still explains that test, but its ladder goes under a
    # test of the tall case, and there it gives the problem list's one fix.
    a, plan, findings = _grading()
    small = a.cases[0].name
    findings = [f for f in findings if f.id != "out-of-bounds"]
    findings += [Finding.make("submission-error", rung, "raised ZeroDivisionError while running", case=small,
                              problem="exception", type="ZeroDivisionError", detail="division by zero", frames=[],
                              phase="run") for rung in a.rungs]
    report = Report(a, "dma_scale.py", plan, scoring.score(plan, findings), findings, "dma_scale.py", 1.0)
    view = render.report_view(report)
    problems = {p["id"]: p for p in view["problems"]}
    assert problems["uninitialized-memory"]["explained_in"] == "2.1"
    first = next(t for t in view["tests"] if t["number"] == "1.1")
    assert first["also_explained"] == [] and [p["id"] for p in first["also"]] == ["uninitialized-memory"]
    second = next(t for t in view["tests"] if t["number"] == "2.1")
    never = ("the kernel never stores 16384 of the output's elements (the first at index [128, 0]): make the store "
             "write every valid element of its block (its mask or slice stops short)")
    assert second["finding"]["fix_here"] == never
    assert f"Fix: {never}" in " ".join(render.render_report(view, "text").split())


def test_an_also_on_this_test_explanation_gives_the_problems_one_fix():
    # On the tall case the generic run reads a block past the end (its own, first
    # problem), and the poisoning check's finding of that case is also on the test: its
    # explanation there gives the fix the problem list gives (from the fill reruns of
    # test 2.2, which count the rows never stored), not the general line.
    a, plan, findings = _grading()
    tall = a.cases[1].name
    findings = [f for f in findings if f.id != "out-of-bounds" and (f.rung, f.check) != ("generic", "correctness")]
    findings.append(Finding.make("out-of-bounds", "generic", "IndexError: Out-of-bounds block index", case=tall,
                                 type="IndexError", detail="", frames=[], phase="run"))
    report = Report(a, "dma_scale.py", plan, scoring.score(plan, findings), findings, "dma_scale.py", 1.0)
    view = render.report_view(report)
    problems = {p["id"]: p for p in view["problems"]}
    assert problems["uninitialized-memory"]["explained_in"] == "2.1"
    second = next(t for t in view["tests"] if t["number"] == "2.1")
    (also,) = second["also_explained"]
    never = ("the kernel never stores 16384 of the output's elements (the first at index [128, 0]): make the store "
             "write every valid element of its block (its mask or slice stops short)")
    assert also["id"] == "uninitialized-memory" and also["fix_here"] == never
    text = " ".join(render.render_test(second, "text").split())
    assert f"Fix: {never}." in text and "zero the accumulator" not in text
    listed = " ".join(render.render_report(view, "text").split())
    assert f"Fix: {never}." in listed


# ---- one length from the wrong dimension: two symptoms, one problem ----------------------

KERNEL = ("def dma_scale_kernel(x_hbm, o_ref, buf, sem, *, alpha):\n"
          "    n_chunks = x_hbm.shape[1] // CHUNK\n"
          "    m, n = x_hbm.shape\n"
          "    assert x_hbm.shape[-2] > 0\n")


def _kernel_sources() -> Sources:
    from autograder.grading.identity.sources import KernelSource
    return Sources(kernels=(KernelSource(call="dma_scale.py:30", caller="dma_scale", lines="dma_scale.py:1-4"),),
                   file="dma_scale.py", text=tuple(KERNEL.split("\n")),
                   where=lambda file, line: f"{file}:{line}")


def test_a_length_from_the_wrong_dimension_is_one_problem_at_the_line_that_reads_it():
    # 192x256: four chunks of a 192-row array (past the end); 256x128: two of four (rows
    # 128.. never stored, exactly dimension 1's size): one bug, one problem, one fix.
    from autograder.grading.judge import causes
    a, plan, findings = _grading()
    tied = causes.one_length(plan, findings)
    small, tall = a.cases[0].name, a.cases[1].name
    assert all(f.same_bug_as == "out-of-bounds" for f in tied if f.id == "uninitialized-memory")
    fact = {"axis": 0, "dim": 1, "rank": 2, "cases": [[small, 192, 256], [tall, 256, 128]]}
    assert all(f.facts()["length_from"] == fact for f in tied if f.id == "out-of-bounds")
    tests = scoring.score(plan, tied)
    # The points each test lost stay as they were; the problems become one.
    assert [t.score for t in tests] == [t.score for t in scoring.score(plan, findings)]
    report = Report(a, "dma_scale.py", plan, tests, tuple(tied), "dma_scale.py", 1.0, sources=_kernel_sources())
    view = render.report_view(report)
    assert [(p["id"], p["explained_in"]) for p in view["problems"]] == [("out-of-bounds", "1.1")]
    fix = ("x_hbm.shape[1] is dimension 1 (256 on f32-192x256, 128 on f32-256x128), but what it counts runs along "
           "dimension 0 (192 on f32-192x256, 256 on f32-256x128): past the end where dimension 1 is the larger, "
           "short where it is the smaller; take it from dimension 0: x_hbm.shape[0]")
    first = " ".join(render.render_test(next(t for t in view["tests"] if t["number"] == "1.1"), "text").split())
    assert "At dma_scale.py:2: n_chunks = x_hbm.shape[1] // CHUNK" in first and f"Fix: {fix}." in first
    second = " ".join(render.render_test(next(t for t in view["tests"] if t["number"] == "2.1"), "text").split())
    assert "Problem 1, Out-of-bounds access [out-of-bounds], explained under test 1.1; seen here as depends on " \
           "uninitialized memory [uninitialized-memory]" in second
    assert "Fix:" not in second and "Which rung" not in second


@pytest.mark.parametrize("change", ["other-edge", "other-slice", "one-case"])
def test_numbers_that_do_not_fit_one_wrong_length_tie_nothing(change):
    from autograder.grading.judge import causes
    a, plan, findings = _grading()
    if change == "other-edge":      # never stored from row 64: no dimension is 64
        findings = [f.with_facts(first_never=[64, 0], never_written=24576, wrong=24576, wrong_unwritten=24576)
                    if f.id == "uninitialized-memory" else f for f in findings]
    elif change == "other-slice":   # a slice of another size: not this axis's overrun; one case left
        findings = [f.with_facts(slice={"start": 70, "dim": 64}) if f.id == "out-of-bounds" else f for f in findings]
    else:                           # the short case alone: one case is no pattern
        findings = [f for f in findings if f.id != "out-of-bounds"]
    assert causes.one_length(plan, findings) == findings


def test_a_test_tied_only_by_a_secret_cases_evidence_says_why_it_has_no_command():
    # The tall visible case's output is wrong; the poisoning check saw unwritten memory on
    # a secret case only. That finding explains the visible test, so a replay of the
    # visible case alone would show another finding: no command, and the test says why.
    from autograder.grading.judge import secrecy
    a, plan, _findings = _grading()
    tall, secret = a.cases[1].name, next(c.name for c in a.cases if not c.visible)
    findings = [Finding.make("wrong-result", rung, "16384 of 32768 outputs are wrong", case=tall,
                             mismatches=16384, total=32768) for rung in a.rungs]
    findings.append(Finding.make("uninitialized-memory", "tpu-interpret", "wrong with every fill tried",
                                 case=secret, check="poisoning", fills_passing=[], fills_failing=["fill-1"]))
    findings = secrecy.shown_findings(a, findings)
    tests = scoring.score(plan, findings)
    second = next(t for t in tests if t.number == "2.1")
    assert second.finding.case == secret and not second.passed
    view = render.report_view(Report(a, "dma_scale.py", plan, tests, tuple(findings), "dma_scale.py", 1.0))
    shown = next(t for t in view["tests"] if t["number"] == "2.1")
    assert shown["command"] is None and shown["command_withheld"]
    text = " ".join(render.render_test(shown, "text").split())
    assert "No grader command replays this test: what ties it to its problem was seen on a secret case" in text
    assert secret not in text
    # A test its own case explains keeps its command and says nothing of the kind.
    first = next(t for t in view["tests"] if t["number"] == "1.1")
    assert not first["command_withheld"]


def test_the_divisor_of_a_store_and_every_line_that_writes_it():
    from autograder.grading.identity.calls import divisor
    assert divisor("o_ref[0] = (acc_ref[...] / l_ref[...]).astype(o_ref.dtype)") == ("l_ref[...]", "l_ref")
    assert divisor("o_ref[...] = acc / denom") == ("denom", "denom")
    assert divisor("o_ref[...] = a / b / c") is None and divisor("o_ref[...] = a * b") is None
    assert divisor("o_ref[...] = a / (b + c)") is None and divisor("o_ref[ = ") is None
    text = ("def k(l_ref, o_ref):\n    l_ref[...] = 0\n    l_ref[...] += 1\n    x = l_ref[...]\n"
            "    o_ref[...] = x / l_ref[...]\n")
    sources = Sources(file="k.py", text=tuple(text.split("\n")), where=lambda file, line: f"{file}:{line}")
    assert [p.where for p in sources.writes_to("l_ref")] == ["k.py:2", "k.py:3"]
    assert sources.writes_to("m_ref") == ()


def _race(case: str, read_at: str = "dma_scale.py:30:11 (k)") -> Finding:
    return Finding.make("data-race", "tpu-interpret", "the race detector found conflicting accesses", case=case,
                        check="races", accesses=[
                            {"access": "write", "where": "dma_scale.py:28:11 (k)", "element_range": [[0, 64]]},
                            {"access": "read", "where": read_at, "element_range": [[0, 64]]}])


def _unfilled(case: str, **facts) -> Finding:
    return Finding.make("uninitialized-memory", "tpu-interpret", "wrong with every fill tried", case=case,
                        check="poisoning", fills_passing=[], fills_failing=["fill-1"], **facts)


def test_memory_read_before_the_dma_that_fills_it_is_the_race_on_its_case():
    from autograder.grading.judge import causes
    store = frozenset({"dma_scale.py:30"})
    tied = causes.one_race([_race("a"), _unfilled("a"), _unfilled("b")], store)
    assert [f.same_bug_as for f in tied] == [None, "data-race", None]     # only the race's own case
    # A race whose read is not the output's store, two stores, or elements never stored: no tie.
    assert causes.one_race([_race("a", "dma_scale.py:25:3 (k)"), _unfilled("a")], store)[1].same_bug_as is None
    assert causes.one_race([_race("a"), _unfilled("a")], store | {"dma_scale.py:31"})[1].same_bug_as is None
    never = _unfilled("a", never_written=64, first_never=[64, 0])
    assert causes.one_race([_race("a"), never], store)[1].same_bug_as is None
