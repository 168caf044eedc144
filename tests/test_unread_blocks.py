"""A wrong output block that depends on an input block its steps never read
(``grading.judge.reads``): the fix and the line follow where that block lies.
Pure logic first (numpy references, no JAX), then three kernels written apart from
the project graded through the real CLI."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import corpus

from autograder.feedback import evidence
from autograder.findings import Finding
from autograder.grading.judge import reads
from autograder.pallas_surface.static import blockmap
from autograder.pallas_surface.static.facts import BlockReads, CallMap, IndexMaps, OperandMap, ReadSet


def _op(name, shape, block, arg=None, is_output=False):
    return OperandMap(name, is_output, shape, block, (), (), 0, (), 0, arg=arg)


def _reads(out_name, in_name, table):
    return ReadSet(out_name, in_name, tuple(BlockReads(o, tuple(r)) for o, r in table.items()))


def _matmul_call(k_steps: int) -> CallMap:
    """256x384 @ 384x256 in 128 blocks, grid (2, 2, k_steps): x (i, k), y (k, j)."""
    x, y = _op("input 0", (256, 384), (128, 128), 0), _op("input 1", (384, 256), (128, 128), 1)
    out = _op("output 0", (256, 256), (128, 128), is_output=True)
    xr = {(i, j): [(i, k) for k in range(k_steps)] for i in range(2) for j in range(2)}
    yr = {(i, j): [(k, j) for k in range(k_steps)] for i in range(2) for j in range(2)}
    return CallMap((2, 2, k_steps), ("parallel", "parallel", "arbitrary"), (x, y, out), (), True,
                   (_reads("output 0", "input 0", xr), _reads("output 0", "input 1", yr)))


def _evidence(call, args, fn, wrong=None):
    ref = np.asarray(fn(*args), np.float64)
    wrong = np.ones(ref.shape, bool) if wrong is None else wrong
    return reads.evidence(IndexMaps((call,)), wrong, args, list(range(len(args))), fn, ref)


def test_a_reduction_one_step_short_is_the_grids_fault():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((256, 384)), rng.standard_normal((384, 256))
    got = _evidence(_matmul_call(2), [x, y], lambda a, b: a @ b)
    assert got["kind"] == "grid-short" and got["input_block"] == [0, 2] and got["output_block"] == [0, 0]
    assert (got["reached"], got["blocks_along"], got["dim"], got["wrong_blocks"]) == (2, 3, 1, 4)
    assert got["also_args"] == [1]
    # The full loop reads everything each output block needs: nothing to say.
    assert _evidence(_matmul_call(3), [x, y], lambda a, b: a @ b) is None


def test_only_wrong_blocks_are_judged_and_a_shared_argument_is_not_guessed_at():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((256, 384)), rng.standard_normal((384, 256))
    right = np.zeros((256, 256), bool)
    assert _evidence(_matmul_call(2), [x, y], lambda a, b: a @ b, right) is None
    # Two operands that are one argument: what one misses, the other may read.
    call = _matmul_call(2)
    twice = CallMap(call.grid, call.dimension_semantics,
                    (call.operands[0], _op("input 1", (384, 256), (128, 128), 0), call.operands[2]), (), True,
                    call.reads)
    assert _evidence(twice, [x, y], lambda a, b: a @ b) is None


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_a_block_narrower_than_a_row_and_a_map_that_follows_the_wrong_axis():
    x = np.random.default_rng(2).standard_normal((24, 256))
    # Blocks of 8 x 128, grid (3,), map (i, 0): column block 1 is never read nor written.
    xin, out = _op("input 0", (24, 256), (8, 128), 0), _op("output 0", (24, 256), (8, 128), is_output=True)
    narrow = CallMap((3,), ("parallel",), (xin, out), (), True,
                     (_reads("output 0", "input 0", {(i, 0): [(i, 0)] for i in range(3)}),))
    got = _evidence(narrow, [x], _softmax)
    assert (got["kind"], got["output_block"], got["input_block"], got["dim"], got["size"]) == \
        ("block-narrow", [0, 0], [0, 1], 1, 256)
    # Rows in 8 x 256 blocks, but the map reads row block 0 for every step: other steps
    # read the blocks each output block needs, not the ones writing it.
    xin, out = _op("input 0", (24, 256), (8, 256), 0), _op("output 0", (24, 256), (8, 256), is_output=True)
    stuck = CallMap((3,), ("parallel",), (xin, out), (), True,
                    (_reads("output 0", "input 0", {(0, 0): [(0, 0)], (1, 0): [(2, 0)], (2, 0): [(1, 0)]}),))
    got = _evidence(stuck, [x], _softmax)
    assert (got["kind"], got["output_block"], got["input_block"], got["read"]) == \
        ("map-misses", [1, 0], [1, 0], [[2, 0]])


def test_a_map_stuck_at_block_0_where_the_grid_walks_the_output_should_follow_the_output():
    # add, 8 x 128 blocks on a grid (3, 2): y's map (i, 0) never moves along dimension 1,
    # which the grid walks the output's blocks along: not a block to widen, a map to fix.
    x, y = (np.random.default_rng(s).standard_normal((24, 256)) for s in (3, 4))
    xin, yin = _op("input 0", (24, 256), (8, 128), 0), _op("input 1", (24, 256), (8, 128), 1)
    out = _op("output 0", (24, 256), (8, 128), is_output=True)
    grid = [(i, j) for i in range(3) for j in range(2)]
    call = CallMap((3, 2), ("parallel", "parallel"), (xin, yin, out), (), True,
                   (_reads("output 0", "input 0", {b: [b] for b in grid}),
                    _reads("output 0", "input 1", {(i, j): [(i, 0)] for i, j in grid})))
    wrong = np.zeros((24, 256), bool)
    wrong[:, 128:] = True
    got = _evidence(call, [x, y], np.add, wrong)
    assert (got["kind"], got["input"], got["output_block"], got["input_block"], got["dim"]) == \
        ("map-fixed", "input 1", [0, 1], [0, 1], 1)
    got["name"], got["also"] = "y", []
    f = Finding.make("wrong-result", "generic", "wrong", case="small", unread_needed=got)
    assert evidence.reads_fix(f) == (
        "output block (0, 1) depends on block (0, 1) of y, which no step reads: y's index map never moves along "
        "dimension 1, while the grid walks the output's blocks along it: make y's index map follow the output's "
        "there (the same grid axis in the same place as in the output's index map)")


def test_too_many_blocks_or_no_returned_call_say_nothing():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((256, 384)), rng.standard_normal((384, 256))
    call = _matmul_call(2)
    assert _evidence(CallMap(call.grid, call.dimension_semantics, call.operands, (), False, call.reads),
                     [x, y], lambda a, b: a @ b) is None
    small = [_op("input 0", (256, 384), (8, 8), 0)] + list(call.operands[1:])
    assert _evidence(CallMap(call.grid, call.dimension_semantics, tuple(small), (), True, call.reads),
                     [x, y], lambda a, b: a @ b) is None      # 1,536 blocks: over MAX_CALLS
    # An input computed outside the kernel (no argument of the function) may carry what x misses.
    derived = list(call.operands[:1]) + [_op("input 1", (384, 256), (128, 128), None)] + list(call.operands[2:])
    assert _evidence(CallMap(call.grid, call.dimension_semantics, tuple(derived), (), True, call.reads),
                     [x, y], lambda a, b: a @ b) is None
    # Facts are the student's program's claim: a block of size 0 says nothing (and raises nothing).
    zero = [_op("input 0", (256, 384), (128, 0), 0)] + list(call.operands[1:])
    assert _evidence(CallMap(call.grid, call.dimension_semantics, tuple(zero), (), True, call.reads),
                     [x, y], lambda a, b: a @ b) is None


def test_the_fix_says_it_in_the_students_numbers():
    u = {"kind": "grid-short", "input": "input 0", "name": "x", "output_block": [0, 0], "input_block": [0, 2],
         "read": [[0, 0], [0, 1]], "read_count": 2, "also": ["y"], "block_shape": [128, 128], "dim": 1,
         "reached": 2, "blocks_along": 3, "size": 384, "block": 128}
    f = Finding.make("wrong-result", "generic", "wrong", case="c", unread_needed=u)
    assert evidence.reads_fix(f) == (
        "output block (0, 0) depends on block (0, 2) of x, which no step reads: x has 3 blocks along dimension 1 "
        "(384 / 128) and the grid reaches only the first 2 (the same holds for y). Give the grid "
        "pl.cdiv(384, 128) = 3 steps along the axis that walks them")
    # Blocks the grid never visits take a too-narrow block's fix from the wrong result beside them.
    narrow = Finding.make("wrong-result", "generic", "wrong", case="c", unread_needed={**u, "kind": "block-narrow"})
    unvisited = Finding.make("uninitialized-memory", "static", "never visited", unwritten_count=3,
                             problem="unwritten-blocks")
    assert evidence.reads_fix(unvisited, [narrow]).startswith("output block (0, 0) depends on block (0, 2) of x")
    assert evidence.reads_fix(unvisited, [f]) is None      # a short grid is the grid's own fix there


def test_the_blockmap_lists_what_each_output_blocks_steps_read():
    points = blockmap.grid_points((2, 3))
    out = blockmap.Operand("output 0", True, (16, 8), (8, 8), np.stack([points[:, 0], 0 * points[:, 0]], 1))
    inp = blockmap.Operand("input 0", False, (16, 24), (8, 8), points.copy())
    got = blockmap.reads(out, inp, (2, 3))
    assert got == [{"block": [0, 0], "reads": [[0, 0], [0, 1], [0, 2]]},
                   {"block": [1, 0], "reads": [[1, 0], [1, 1], [1, 2]]}]


CASES = [
    ("matmul", "k_loop_one_short.py", "wrong-result", 8.0, "At k_loop_one_short.py:",
     "    grid=(m // BM, n // BN, nk),",
     "Fix: output block (0, 0) depends on block (0, 2) of x, which no step reads"),
    ("flash_attention", "kv_map_follows_query.py", "wrong-result", None, "At kv_map_follows_query.py:",
     "    kv_spec = pl.BlockSpec((1, BK, d), lambda bi, qi, ki: (bi, qi, 0))",
     "Fix: output block (0, 0, 0) depends on block (0, 1, 0) of k, but the steps that"),
    ("softmax", "lane_blocks.py", "uninitialized-memory", None, "At lane_blocks.py:",
     "    spec = pl.BlockSpec((BM, LANES), lambda i: (i, 0))",
     "Fix: output block (0, 0) depends on block (0, 1) of x, which no step reads:"),
    # A formula error: every wrong row is the right row scaled (the running sum not rescaled).
    ("flash_attention", "sum_not_rescaled.py", "wrong-result", None, "At sum_not_rescaled.py:37:",
     "    o_ref[0] = (acc_ref[...] / l_ref[...]).astype(o_ref.dtype)",
     "what each row is made of is right, only its scale is wrong: the store divides by l_ref[...], so check "
     "how l_ref is computed (lines 22, 30)"),
]


@pytest.mark.jax
@pytest.mark.grading
@pytest.mark.releases
@pytest.mark.parametrize("slug,name,fid,score,at,line,fix", CASES, ids=[c[1] for c in CASES])
def test_kernels_written_apart_get_the_line_and_fix_their_evidence_calls_for(
        grade_cli, slug, name, fid, score, at, line, fix):
    doc, out = grade_cli(corpus(slug) / name, slug, "--run-key", "5")
    first = next(t for t in doc["tests"] if t.get("status") == "failed")
    assert f"[{fid}], problem 1" in first["output"]
    assert "Problems found: 1" in out                        # one bug, one problem
    assert at in out and line in out
    assert " ".join(fix.split()) in " ".join(out.split())
    if score is not None:
        assert doc["score"] == score
