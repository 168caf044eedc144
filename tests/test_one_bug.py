"""One bug seen by two checks is one problem at its own line (issue 45): a bfloat16
product the compiler refuses is the precision the bfloat16 cases lost; blocks past
the end and output blocks never visited in one case's scan are one grid that does
not fit; an index map with its axes swapped under a grid that fits is one problem at
the map. Graded through the real CLI."""
from __future__ import annotations

import pytest
from conftest import corpus, tags

pytestmark = [pytest.mark.jax, pytest.mark.grading]


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_a_bf16_product_the_compiler_refuses_is_the_numerics_problem_at_the_dot(grade_cli):
    doc, out = grade_cli(corpus("matmul") / "bf16_accumulator.py", "matmul", "--run-key", "5")
    assert tags(doc)[:8] == [[], [], ["numerics"], ["numerics"], [], [], ["numerics"], ["numerics"]]
    compile_check = next(t for t in doc["tests"] if t["name"].startswith("Static: TPU compile"))
    assert compile_check["score"] == compile_check["max_score"] and compile_check["tags"] == ["compile-reject"]
    assert "Problems found: 1" in out and "[compile-reject]: cost" not in out
    assert "compile-reject, the same bug as problem 1 (charged in 2.1), not charged again" in _flat(out)
    # The fault is the product with a 16-bit result, quoted as written, for both checks' problem.
    assert "At bf16_accumulator.py:14:" in out
    assert "acc_ref[...] += jnp.dot(x_ref[...], y_ref[...]).astype(acc_ref.dtype)" in out
    assert doc["score"] == 13.0


def test_a_grid_with_its_axes_swapped_is_one_problem_at_the_grid(grade_cli):
    doc, out = grade_cli(corpus("add") / "grid_axes_swapped.py", "add", "--run-key", "5")
    assert "Problems found: 1" in out
    assert "1. Out-of-bounds access [out-of-bounds]: cost 3 points in tests 4.1, 4.2." in _flat(out)
    assert "At grid_axes_swapped.py:" in out and "grid=(n // BC, m // BR)," in out
    assert "note: the correctness check sees this bug too, as depends on uninitialized memory" in _flat(out)
    assert "Also on this test" not in out
    assert doc["score"] == 13.0


def test_an_index_map_with_its_axes_swapped_is_one_problem_at_the_map(grade_cli):
    # The grid is right, the map (j, i) is not: only the tall secret case shows it, so its
    # fix is in the grader's words; the speed size (public) names the axes.
    doc, out = grade_cli(corpus("add") / "index_map_swapped.py", "add", "--run-key", "5")
    assert "Problems found: 1" in out
    assert "1. Out-of-bounds access [out-of-bounds]: cost 3 points in tests 4.1, 4.2." in _flat(out)
    assert "At index_map_swapped.py:26:" in out and "lambda i, j: (j, i))" in out
    assert "grid=(m // BM, n // BN)," not in out and "make the grid pl.cdiv(size, block) long" not in out
    fix = ("the grid fits the array, but the index map puts a grid axis's step on another block axis than the "
           "one that grid axis counts blocks along")
    assert _flat(out).count(fix) == 2        # under test 4.1 and in the problem list
    assert "(at index_map_swapped.py:26)" in _flat(out)
    assert ("at grid point (32, 0) addresses block (0, 32), outside its array (its index map sends grid axis 0 "
            "to block axis 1)") in _flat(out)
    assert doc["score"] == 13.0


def test_a_reset_on_the_query_axis_is_placed_at_its_when_with_the_reductions_axis(grade_cli):
    doc, out = grade_cli(corpus("flash_attention") / "reset_on_query_axis.py", "flash_attention", "--run-key", "5")
    assert "Problems found: 1" in out and "[uninitialized-memory]" in out
    assert "At reset_on_query_axis.py:22:" in out and "@pl.when(qi == 0)" in out
    assert ("the reset at reset_on_query_axis.py:22 runs when pl.program_id(1) == 0, but grid axis 1 is parallel "
            "(each of its steps is another output block) and the reduction runs along axis 2") in _flat(out)
    assert "pl.when(pl.program_id(2) == 0)" in _flat(out) and "k_axis" not in out
