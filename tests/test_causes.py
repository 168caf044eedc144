"""One bug, one finding across cases (pure logic, no JAX): a finite numerics
label is the logic error the same kernel shows far off on another case of the
same dtype (``grading.judge.causes``)."""
from autograder.findings import Finding
from autograder.grading import assignments
from autograder.grading.identity.canonical import Form
from autograder.grading.judge import causes, scoring
from autograder.grading.judge.faces import Faces
from autograder.grading.probes import PLANNERS
from autograder.grading.run import plan as planning


def _plan(slug):
    a = assignments.find(slug)
    return planning.build(a, a.cases, a.rungs, 7, planners=PLANNERS)


def _faces(plan, face_of=lambda case: "k"):
    forms = {}
    for run in plan.correctness():
        forms[run.draw.signature] = Form("f", face_of(run.case), 1, frozenset())
    return Faces(forms, tuple(sorted({f.face for f in forms.values()})))


def _compare(fid, case, rung="generic", **more):
    facts = dict(mismatches=22, total=4736, max_abs_error=0.026, relative_to_output=0.026, nonfinite=0,
                 finite_relative_to_output=0.026)
    facts.update(more)
    return Finding.make(fid, rung, f"{fid} on {case}", case=case, **facts)


def test_a_small_error_beside_a_far_one_of_the_same_kernel_is_the_logic_error():
    plan = _plan("softmax")
    wrong = [_compare("wrong-result", "rows-20x256", relative_to_output=0.9),
             _compare("wrong-result", "hidden-tall", relative_to_output=0.8)]
    small = [_compare("numerics", "logits100-37x128"), _compare("numerics", "hidden-logits1000", "tpu-interpret")]
    out = causes.one_cause(plan, wrong + small, _faces(plan))
    assert [f.id for f in out] == ["wrong-result"] * 4
    said = out[2]
    assert said.facts()["one_cause"] and said.facts()["far_case"] == "rows-20x256"
    assert "wrong far beyond rounding on case rows-20x256" in said.message
    # Scored, one problem: every failing test carries the one ID.
    tests = scoring.score(plan, out)
    assert {t.finding.id for t in tests if t.finding is not None} == {"wrong-result"}


def test_a_secret_case_is_never_named_as_the_far_one():
    plan = _plan("softmax")
    out = causes.one_cause(plan, [_compare("wrong-result", "hidden-tall", relative_to_output=0.8),
                                  _compare("numerics", "rows-20x256")], _faces(plan))
    assert out[1].id == "wrong-result" and "another case" in out[1].message
    assert "hidden" not in out[1].message and out[1].facts()["far_case"] is None


def test_what_stays_numerics():
    plan = _plan("matmul")
    far = _compare("wrong-result", "f32-256x384x256", relative_to_output=0.5)
    # Another dtype: a bfloat16 accumulator is a bug of its own.
    other_dtype = _compare("numerics", "bf16-256x384x256")
    assert causes.one_cause(plan, [far, other_dtype], _faces(plan))[1].id == "numerics"
    # NaN or Inf (an overflow), or an overflow said by diagnosis.overflows.
    plan = _plan("softmax")
    far = _compare("wrong-result", "rows-20x256", relative_to_output=0.5)
    for odd in (_compare("numerics", "hidden-logits1000", nonfinite=3),
                _compare("numerics", "hidden-logits1000").with_facts(overflow=True)):
        assert causes.one_cause(plan, [far, odd], _faces(plan))[1].id == "numerics"
    # Another kernel computed that case (a function may specialise by shape).
    split = _faces(plan, lambda case: "wide" if case.name == "logits100-37x128" else "k")
    assert causes.one_cause(plan, [far, _compare("numerics", "logits100-37x128")], split)[1].id == "numerics"
    # Nowhere far off: a precision problem on every case it shows.
    alone = [_compare("numerics", "logits100-37x128"), _compare("numerics", "hidden-wide")]
    assert [f.id for f in causes.one_cause(plan, alone, _faces(plan))] == ["numerics", "numerics"]
    # A probe's finding, or a far-off case whose wrong output is padding the kernel read, explains nothing.
    probe = Finding.make("wrong-result", "generic", "stress", case="rows-20x256", check="numerics",
                         relative_to_output=0.9)
    padding = far.with_facts(padding_read=True)
    for other in (probe, padding):
        assert causes.one_cause(plan, [other, _compare("numerics", "hidden-wide")], _faces(plan))[1].id == "numerics"


def _unread(input_name="input 1"):
    return {"input": input_name, "arg": 1, "output": "output 0", "output_block": [0, 1], "input_block": [0, 1],
            "read": [[1, 0]], "read_count": 1, "wrong_blocks": 2, "of": 2, "block_shape": [8, 128],
            "array_shape": [16, 256], "kind": "map-misses", "name": "y", "also": []}


def test_an_index_map_with_crossed_axes_is_one_bug_past_the_end_and_on_the_wrong_blocks():
    """The seventh read's add: only y's map swapped, (j, i). Square block grids read the
    wrong blocks; the tall secret case runs past the end: one problem, out-of-bounds."""
    plan = _plan("add")
    oob = Finding.make("out-of-bounds", "static", "past the end", case="hidden-tall", check="index-maps",
                       map_axes="input 1")
    wrong = [_compare("wrong-result", "small", unread_needed=_unread()),
             _compare("wrong-result", "odd-rows", "tpu-interpret", unread_needed=_unread()),
             _compare("wrong-result", "hidden-wide")]        # (a secret case: no evidence kept)
    out = causes.one_map(plan, [oob, *wrong])
    assert [f.same_bug_as for f in out] == [None, "out-of-bounds", "out-of-bounds", "out-of-bounds"]
    # A visible wrong result whose missing block is another input's, or none at all: another bug.
    for other in (_unread("input 0"), None):
        mixed = [oob, wrong[0], _compare("wrong-result", "odd-rows", unread_needed=other)]
        assert causes.one_map(plan, mixed) == mixed
    assert causes.one_map(plan, wrong) == wrong        # no crossed map
    # A probe's wrong result on a stress input (no case of the spec's): kept, never looked up.
    stress = Finding.make("wrong-result", "generic", "off with stress input", case="large-values", check="numerics")
    out = causes.one_map(plan, [oob, *wrong, stress])
    assert out[-1] is stress and [f.same_bug_as for f in out[1:4]] == ["out-of-bounds"] * 3


def test_the_fix_for_a_block_read_with_its_axes_swapped_says_so():
    from autograder.feedback import evidence
    f = _compare("wrong-result", "small", unread_needed=_unread())
    assert evidence.reads_fix(f) == (
        "output block (0, 1) depends on block (0, 1) of y, but the step that writes it reads block (1, 0), the same "
        "block index in another axis order: y's index map returns its block axes swapped. Return the block index in "
        "the array's axis order, as the output's index map does")
    other = _compare("wrong-result", "small", unread_needed={**_unread(), "read": [[1, 1]]})
    assert "the steps that write it read only (1, 1)" in evidence.reads_fix(other)
