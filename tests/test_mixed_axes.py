"""Outputs that move with one input element the reference keeps them apart from
(``compare.mixed_axes``, the nudged rerun of a failing visible test): the axis the
kernel mixes, the reduction along it (``sources._reduction``, read from the traced
kernel) and the fix (``evidence.formula``). Pure logic without JAX, then one
softmax through the real CLI."""
from dataclasses import replace

import numpy as np
import pytest
from conftest import corpus, tags

from autograder.feedback import evidence, fixes
from autograder.findings import Finding
from autograder.grading import assignments
from autograder.grading.identity.sources import KernelSource, Place, Sources, _reduction
from autograder.grading.judge.compare import mixed_axes
from autograder.grading.run.draws import nudge
from autograder.grading.run.inputs import CaseInput

SOFTMAX = assignments.find("softmax")
MAX = Place("softmax.py:11", "mx = x.max(axis=0, keepdims=True)")
SUM = Place("softmax.py:13", "o_ref[...] = ex / ex.sum(axis=-1, keepdims=True)")


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _blocks(x, axis, rows=4):
    """A kernel's softmax block by block, its max along ``axis`` of each block."""
    return np.concatenate([_softmax(x[i:i + rows], axis) for i in range(0, len(x), rows)])


def _nudged(x):
    y = x.copy()
    y[0, 0] = 2 * np.abs(x).max() + 1
    return y


def test_a_max_down_the_blocks_rows_moves_the_other_rows_of_the_block_only():
    x = np.random.default_rng(0).standard_normal((8, 16))
    m = mixed_axes(_blocks(x, 0), _blocks(_nudged(x), 0), _softmax(x, -1), _softmax(_nudged(x), -1))
    assert m == {"axes": [0], "moved": 48, "shape": [8, 16], "span": [[1, 3]], "ref_moved": 16, "ref_axes": [1],
                 "ref_span": [[0, 0], [0, 15]]}


def test_a_right_kernel_a_wrong_one_that_mixes_nothing_and_unmoved_nans_say_nothing():
    x = np.random.default_rng(1).standard_normal((8, 16))
    ref, ref2 = _softmax(x, -1), _softmax(_nudged(x), -1)
    assert mixed_axes(_blocks(x, -1), _blocks(_nudged(x), -1), ref, ref2) is None
    assert mixed_axes(2 * _blocks(x, -1), 2 * _blocks(_nudged(x), -1), ref, ref2) is None     # wrong, unmixed
    out, out2 = _blocks(x, -1), _blocks(_nudged(x), -1)
    out[5:], out2[5:] = np.nan, np.nan                                  # never written: the same fill twice
    assert mixed_axes(out, out2, ref, ref2) is None
    assert mixed_axes(out[:4], out2, ref, ref2) is None                 # shapes that differ: no claim


def _wrong(mixed) -> Finding:
    return Finding.make("wrong-result", "generic", "5118 of 5120 outputs are wrong", case="rows-20x256",
                        first_mismatches=[[0, 0]], mixed=mixed)


MIXED = {"axes": [0], "moved": 3840, "shape": [20, 256], "span": [[1, 15]], "ref_moved": 256, "ref_axes": [1],
         "ref_span": [[0, 0], [0, 255]], "input": "x", "at": [0, 0]}


def _kernel(*reductions) -> Sources:
    return Sources((KernelSource("softmax.py:20", "softmax", "softmax_kernel", "softmax.py:9-13",
                                 stores=(SUM,), refs=("x_ref", "o_ref"), inputs=1, reductions=reductions),))


def test_the_one_reduction_along_the_mixed_axis_holds_the_fault_and_the_fix_names_the_axis_to_use():
    src = _kernel(((0,), 2, MAX), ((1,), 2, SUM))
    f = _wrong(MIXED)
    fault = evidence.fault(f, src)
    assert fault is not None and fault.place == MAX and fault.what == "the reduction"
    fix = fixes.fix(f, SOFTMAX, sources=src)
    assert fix.specific and fix.at == MAX
    assert fix.what == (
        "changing only x[0, 0] changed 3840 outputs at indices 1-15 along axis 0, which do not depend on it in the "
        "reference (there only index 0 along axis 0 changes): the reduction at line 11 runs along axis 0 of its "
        "value and so mixes them; in the reference the change spreads along axis 1 instead: reduce along axis=-1")


def test_two_reductions_along_the_axis_are_both_named_and_a_squeezed_value_is_matched_from_the_end():
    first = Place("softmax.py:16", "e = jnp.exp(x - jnp.max(x, axis=0, keepdims=True))")
    second = Place("softmax.py:17", "o_ref[...] = e / jnp.sum(e, axis=0, keepdims=True)")
    fix = fixes.fix(_wrong(MIXED), SOFTMAX, sources=_kernel(((0,), 2, first), ((0,), 2, second)))
    assert fix.at == first and "the reductions at lines 16, 17 run along axis 0 of their value and so mix them" \
        in fix.what
    # A 3-d output (batch, rows, columns) whose kernel sees 2-d blocks: axis 0 of the value is axis 1.
    three = {**MIXED, "axes": [1], "shape": [2, 20, 256], "span": [[1, 15]], "ref_axes": [2],
             "ref_span": [[0, 0], [0, 0], [0, 255]]}
    fix = fixes.fix(_wrong(three), SOFTMAX, sources=_kernel(((0,), 2, MAX), ((1,), 2, SUM)))
    assert fix.at == MAX and "runs along axis 0 of its value" in fix.what and "axis=-1" in fix.what


def test_no_reduction_along_the_axis_says_what_moved_at_the_kernel_and_no_line():
    src = _kernel(((1,), 2, SUM))
    f = _wrong(MIXED)
    assert evidence.fault(f, src) is None
    fix = fixes.fix(f, SOFTMAX, sources=src)
    assert fix.specific and fix.at is None and "something in the kernel mixes values along axis 0" in fix.what
    # Facts of another shape: the general line, never an error.
    assert "mixes" not in fixes.fix(_wrong({"axes": "0"}), SOFTMAX, sources=src).what


def test_a_reduction_is_read_from_the_traced_kernels_document():
    doc = {"p": "reduce_max", "in": [{"v": 5}], "params": [["axes", {"t": [0]}], ["out_sharding", None]],
           "out": [{"v": 6, "aval": {"sa": [[256], {"dt": "float32"}, False]}}], "src": 1}
    assert _reduction(doc) == ((0,), 2)
    assert _reduction({**doc, "p": "argmax", "params": [["axes", {"t": [1]}]]}) == ((1,), 2)
    for bad in ({**doc, "p": "exp"}, {**doc, "params": [["axes", {"t": [5]}]]}, {**doc, "out": []},
                {**doc, "params": [["axes", "0"]]}, {**doc, "out": [{"aval": None}]}):
        assert _reduction(bad) is None


def test_the_nudge_changes_one_element_of_the_first_float_array_exactly_in_its_dtype():
    idx = CaseInput("idx", "array", "int32", np.arange(4, dtype=np.int32))
    x = CaseInput("x", "array", "bfloat16", np.array([[0.3, -2.5], [1.0, 0.0]], dtype=np.float32))
    made = nudge([CaseInput("scale", "float", "float", None, 2.0), idx, x])
    assert made[1] is idx and made[2].array[0, 0] == 6.0 and (made[2].array.flat[1:] == x.array.flat[1:]).all()
    assert x.array[0, 0] == np.float32(0.3)      # the draw's own inputs untouched


@pytest.mark.grading
@pytest.mark.releases
def test_a_row_max_down_the_block_is_placed_at_its_line_through_the_cli(grade_cli):
    doc, out = grade_cli(corpus("softmax") / "row_max_over_block.py", "softmax", "--run-key", "5")
    assert tags(doc) == [["wrong-result"]] * 12 and doc["score"] == 7.0      # the score is the comparison's
    first = " ".join(doc["tests"][0]["output"].split())
    assert "At row_max_over_block.py:17: ``` mx = x.max(axis=0, keepdims=True)" in first
    assert ("Fix: changing only x[0, 0] changed 3840 outputs at indices 1-15 along axis 0, which do not depend on "
            "it in the reference (there only index 0 along axis 0 changes): the reduction at line 17 runs along "
            "axis 0 of its value and so mixes them; in the reference the change spreads along axis 1 instead: "
            "reduce along axis=-1.") in first
    assert "first wrong output is at" not in first
    assert "Problems found: 1 " in " ".join(out.split())


def test_a_value_copied_one_chunk_away_is_an_offset_not_a_mixing():
    """The eighth read's dma_scale: the prefetch copies chunk c, not c + 1, so the
    output's chunks are x's 0, 0, 1: x[0, 0] lands at [0, 0] and also 64 rows after."""
    x = np.random.default_rng(2).standard_normal((192, 8))

    def kernel(a):
        return np.concatenate([a[:64], a[:64], a[64:128]]) * 2

    found = mixed_axes(kernel(x), kernel(_nudged(x)), x * 2, _nudged(x) * 2)
    assert (found["moved_to"], found["ref_to"], found["also"]) == ([64, 0], [0, 0], True)
    f = Finding.make("wrong-result", "generic", "wrong", case="f32-192x256", check="correctness",
                     mixed={**found, "input": "x", "at": [0, 0]})
    where = Sources((KernelSource("dma_scale.py:40", "dma_scale", "body", "dma_scale.py:18-26"),), file="dma_scale.py")
    assert fixes.fix(f, assignments.find("dma_scale"), sources=where).what == (
        "changing only x[0, 0] changed output [64, 0], which does not depend on it in the reference (there only "
        "output [0, 0] changes): the kernel also puts that value 64 after where it belongs along axis 0. Look for "
        "an index, a block index or a copy's source or destination that is off by that much")
    # A copy the unroller saw land in another slot than its wait's: that start moved the value.
    from autograder.grading.identity.sources import SemMismatch
    start = Place("dma_scale.py:28", "copy(c, nxt).start()")
    moved = SemMismatch(Place("dma_scale.py:30", "copy(c, slot).wait()"), start, "sem[1]", "sem[0]", "buf[1]",
                        "slot", "buf[0]", "x_hbm[64:128]")
    dma = Sources((replace(where.kernels[0], sem_mismatches=(moved,)),), file="dma_scale.py")
    assert evidence.fault(f, dma).place == start
    assert evidence.fault(f, where) is None            # (no such copy: no line)
    # A kernel that moves many outputs (a reduction's mixing) keeps the mixing words.
    rows = mixed_axes(_blocks(x, 0), _blocks(_nudged(x), 0), _softmax(x, -1), _softmax(_nudged(x), -1))
    assert "moved_to" not in rows
