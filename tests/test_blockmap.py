"""Block-index facts over a whole grid (numpy only, no JAX)."""
import numpy as np

from autograder.pallas_surface.static.blockmap import Operand, analyse, grid_points


def _op(fn, grid, block, shape, is_output):
    pts = grid_points(grid)
    idx = np.array([fn(*p) for p in pts])
    return Operand("output 0" if is_output else "input 0", is_output, shape, block, idx)


def test_grid_points_are_row_major_last_axis_fastest():
    assert grid_points((2, 2)).tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert grid_points(()).shape == (1, 0)


def test_grid_one_step_too_long_is_out_of_bounds_with_grid_point_and_range():
    op = _op(lambda i, j: (i, j), (2, 3), (8, 128), (16, 256), False)
    f = analyse(op, (2, 3), ())
    assert f["out_of_bounds_count"] == 2
    assert f["out_of_bounds"][0] == {"grid_point": [0, 2], "block_index": [0, 2],
                                     "element_range": [[0, 8], [256, 384]], "array_shape": [16, 256]}


def test_negative_block_index_is_out_of_bounds():
    op = _op(lambda i: (i - 1, 0), (2,), (8, 128), (16, 128), False)
    assert analyse(op, (2,), ())["out_of_bounds"][0]["block_index"] == [-1, 0]


def test_partial_edge_blocks_are_recorded_not_flagged():
    op = _op(lambda i: (i, 0), (3,), (8, 128), (20, 128), False)
    f = analyse(op, (3,), ())
    assert f["out_of_bounds_count"] == 0 and f["partial_count"] == 1
    assert f["partial_blocks"][0]["element_range"] == [[16, 24], [0, 128]]


def test_output_never_written_blocks():
    op = _op(lambda i: (0, i), (1,), (8, 128), (16, 128), True)
    f = analyse(op, (1,), ())
    assert f["unwritten_count"] == 1 and f["unwritten_blocks"] == [[1, 0]]


def test_k_outermost_revisits_output_blocks_non_consecutively():
    op = _op(lambda k, i: (i, 0), (3, 2), (128, 128), (256, 128), True)
    f = analyse(op, (3, 2), ())
    assert f["revisits"][0] == {"block_index": [0, 0], "grid_point": [1, 0], "previous_grid_point": [0, 0],
                                "writers": [[0, 0], [1, 0], [2, 0]]}
    assert f["revisited_blocks"] == [[0, 0], [1, 0]]


def test_k_innermost_is_consecutive_but_shared_across_a_parallel_k_axis():
    op = _op(lambda i, k: (i, 0), (2, 3), (128, 128), (256, 128), True)
    assert analyse(op, (2, 3), (0,))["revisits"] == []
    assert analyse(op, (2, 3), (0,))["parallel_shared"] == []
    shared = analyse(op, (2, 3), (0, 1))["parallel_shared"]
    assert shared[0]["axis"] == 1 and shared[0]["grid_points"] == [[0, 0], [0, 1]]


def test_a_reduction_axis_is_one_the_output_block_does_not_move_along():
    # A matmul's (i, j, k) grid: the output block (i, j) stays put along k.
    op = _op(lambda i, j, k: (i, j), (2, 3, 4), (128, 128), (256, 384), True)
    assert analyse(op, (2, 3, 4), (0, 1))["reduction_axes"] == [2]
    # An element-wise grid has none, whatever its dimension semantics.
    op = _op(lambda i, j: (i, j), (2, 2), (8, 128), (16, 256), True)
    assert analyse(op, (2, 2), ())["reduction_axes"] == []


def test_every_block_outside_is_listed_once_with_the_first_grid_point_asking_for_it():
    op = _op(lambda i, j: (i, j), (2, 3), (8, 128), (16, 256), False)
    assert analyse(op, (2, 3), ())["outside_blocks"] == [
        {"block_index": [0, 2], "grid_point": [0, 2]}, {"block_index": [1, 2], "grid_point": [1, 2]}]


def test_a_never_written_row_lists_every_block_of_it():
    op = _op(lambda i, j: (i, j), (1, 4), (8, 128), (16, 512), True)
    f = analyse(op, (1, 4), ())
    assert f["unwritten_count"] == 4 and f["unwritten_blocks"] == [[1, 0], [1, 1], [1, 2], [1, 3]]


def test_every_block_shared_across_a_parallel_axis_and_its_writers_in_order():
    op = _op(lambda i, k: (i, 0), (2, 3), (128, 128), (256, 128), True)
    f = analyse(op, (2, 3), (0, 1))
    assert f["shared_blocks"] == [[0, 0], [1, 0]]
    assert f["parallel_shared"][1]["writers"] == [[1, 0], [1, 1], [1, 2]]


def test_block_indices_spread_past_any_grid_are_still_told_apart():
    # A map may return any int64: blocks far apart are keyed by sorting rows, not by
    # a mixed radix that would overflow; the facts are the same either way.
    far = 2 ** 40
    op = _op(lambda i: ((0, far), (far, 0), (0, far), (1, 0))[i], (4,), (8, 128), (16, 256), True)
    f = analyse(op, (4,), ())
    assert f["out_of_bounds_count"] == 3 and [b["block_index"] for b in f["outside_blocks"]] == [[0, far], [far, 0]]
    assert f["revisited_blocks"] == [[0, far]] and f["unwritten_count"] == 3


def test_input_blocks_no_grid_point_reads_are_counted():
    """A reduction cut short: a K axis of one step reads one of four K blocks of x."""
    op = _op(lambda i, k: (i, k), (2, 1), (8, 128), (16, 512), False)
    assert analyse(op, (2, 1), ())["unread_count"] == 6
    op = _op(lambda i, k: (i, k), (2, 4), (8, 128), (16, 512), False)
    assert analyse(op, (2, 4), ())["unread_count"] == 0
    assert "unread_count" not in analyse(_op(lambda i: (i, 0), (2,), (8, 128), (16, 128), True), (2,), ())
