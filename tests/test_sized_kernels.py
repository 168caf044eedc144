"""Honest kernels whose numbers depend on the size, graded through the real CLI
(issue 44, sections 2 and 3): a size no test runs is checked there on its own
merits, never charged for numbers no rule of the graded sizes gives; one wrong
formula is one finding on every run key. The kernels (tests/sized/) were
written apart from the grader, as a student would.

Before issue 44: matmul_tile_steps.py 17/18 (inconsistent-kernel on the VMEM
budget at the production size), softmax_mask_by_8.py 8/19 (inconsistent-kernel
on the numerics stress beside its real wrong-result), softmax_exp2_no_log2e.py
7/19 with numerics beside wrong-result on 15 of run keys 1-20."""
from pathlib import Path

import pytest
from conftest import speed_output, tags

pytestmark = [pytest.mark.jax, pytest.mark.grading]

SIZED = Path(__file__).resolve().parent / "sized"


def _ids(doc) -> set[str]:
    return {tag for t in doc["tests"] for tag in t["tags"]}


@pytest.mark.parametrize("name,key", [("matmul_tile_steps.py", 1), ("matmul_rows_by_256.py", 2)])
def test_tiles_chosen_by_the_size_keep_every_point(grade_cli, name, key):
    """128 tiles below 2048 and 512 from 2048 on (4 MiB of VMEM at 8192^3), or
    256-row tiles when M allows: the VMEM budget and the scan at the production
    size read that size's own blocks, and the estimate there is the kernel's."""
    doc, _out = grade_cli(SIZED / name, "matmul", "--run-key", str(key))
    assert doc["score"] == 18.0 and _ids(doc) == set(), [(t["number"], t["tags"]) for t in doc["tests"]]
    speed = speed_output(doc)
    assert "No estimate" not in speed and "Estimated time" in speed


def test_a_mask_bound_rounded_to_eight_is_charged_its_real_bug_only(grade_cli):
    """(m // 8) * 8 drops the rows of a partial last block: wrong-result on the cases
    with one, and nothing else (no inconsistent-kernel at the stress input)."""
    doc, _out = grade_cli(SIZED / "softmax_mask_by_8.py", "softmax", "--run-key", "3")
    assert doc["score"] == 9.0 and _ids(doc) == {"wrong-result"}
    assert [t for t in tags(doc) if t] == [["wrong-result"]] * 10
    stress = next(t for t in doc["tests"] if t["name"].startswith("Numerics"))
    assert stress["score"] == stress["max_score"]


def test_exp2_without_log2e_is_one_wrong_result_on_every_case_it_breaks(grade_cli):
    doc, _out = grade_cli(SIZED / "softmax_exp2_no_log2e.py", "softmax", "--run-key", "1")
    assert doc["score"] == 7.0 and _ids(doc) == {"wrong-result"}
    assert [t for t in tags(doc) if t] == [["wrong-result"]] * 12


def test_exp2_without_log2e_gets_one_finding_on_every_run_key():
    """The same wrong formula over run keys 1-10 (``grading.sweep``): its error is
    small on a large-scale case on some keys (6e-4, a few elements), far off
    elsewhere; the kind is the bug's, so one finding, wrong-result, on every key."""
    from autograder.grading import assignments, sweep
    result = sweep.sweep(assignments.find("softmax"), SIZED / "softmax_exp2_no_log2e.py", list(range(1, 11)))
    assert not result.problem and len(result.results) == 10
    for r in result.results:
        assert {fid for _n, fid, _m in r.lost} == {"wrong-result"}, (r.run_key, r.lost)
