"""The speed estimate of kernels whose steps are an inner pipeline's (issue 45, item 7): a
`pltpu.emit_pipeline` (or a loop of the kernel's own DMAs) inside a grid of one or two steps
once read "blocks of  give 2 grid steps" with milliseconds of "per-step overhead" for two
steps. The pipeline's steps are counted (from the traced loop's trip count), their blocks named
(from the slices its DMAs copy), and each is charged what it was before (its DMAs, issued and
waited: the cost fitted to a real v5e's emit_pipeline points). The model's words on synthetic
schedules (no JAX), then the traced program on both releases, then the real CLI."""
import json
import re

import pytest
from conftest import REPO, run_cli, speed_output

from autograder.pallas_surface.static.facts import decode
from autograder.speed import model as speed

FIXTURE = REPO / "tests" / "speed_fixtures" / "emit_pipeline_dma_scale.py"
V5E = {"chip": "v5e", "hbm_bytes_per_s": 820_000_000_000, "bf16_flops_per_s": 197_000_000_000_000,
       "vmem_bytes": 128 << 20, "lanes": 128, "sublanes": 8, "mxus": 4, "mxu_columns": 128,
       "int8_ops_per_s": 394_000_000_000_000, "fp8_ops_per_s": 0, "int4_ops_per_s": 788_000_000_000_000,
       "tensor_cores": 1, "megacore": False}
HBM = {"is_output": False, "array_bytes": 1 << 22, "shape": [1024, 1024], "pipelined": False}


def _schedule(classes: list[dict], inner: list[dict], grid: int = 2, outer_block: bool = False):
    """One call over a grid of ``grid`` steps whose input and output stay in HBM (an inner
    pipeline copies them), or whose output is a pipelined (128, 128) block (``outer_block``)."""
    out = {**HBM, "operand": "output 0", "is_output": True}
    if outer_block:
        out = {**out, "pipelined": True, "block": [128, 128], "block_bytes": 1 << 16, "moves": grid}
    steps = [{"mxu_flops": {}, "vector": 0.0, "transcendental": 0.0, "block_bytes": 0.0, **c} for c in classes]
    return decode("speed", {"chip": V5E, "pallas_calls": 1, "calls": [
        {"grid": [grid], "steps": grid, "operands": [{**HBM, "operand": "input 0"}, out], "dtype": "float32",
         "step_classes": steps, "dimension_semantics": ["arbitrary"], "data_dependent": False,
         "copy_bytes": 0, "inner_blocks": inner}]})


def _pipeline(each: int, steps: int = 2) -> dict:
    """A grid step that runs an inner pipeline of ``each`` steps, two DMAs of 32 KiB a step."""
    return {"steps": steps, "pipeline_steps": float(each), "dma_starts": 2.0 * each + 1, "loop_trips": float(each),
            "dma_bytes": 2.0 * each * 32768, "dma_exposed": 1.0}


BLOCKS = [{"operand": 0, "block": [8, 1024]}, {"operand": 1, "block": [8, 1024]}]


def test_an_inner_pipelines_steps_are_counted_and_its_blocks_named():
    e = speed.estimate(_schedule([_pipeline(64)], BLOCKS))
    assert e.bound == "per-step overhead" and (e.grid_steps, e.pipeline_steps, e.pipeline_steps_each) == (2, 128, 64)
    assert e.advice.startswith("blocks of input 0 (8, 1024), output 0 (8, 1024) in the kernel's inner pipeline "
                               "give 2 grid steps x 64 pipeline steps; the per-step overhead (about 0.23 us a "
                               "pipeline step on a v5e: its DMAs, issued and waited)")
    lines = speed.text(e).splitlines()
    assert lines[2].startswith("Grid steps: 2, each running 64 steps of an inner pipeline (128 in all); ")
    # Each pipeline step is charged its DMAs (Fitted.dma_cycles, fitted to a v5e's emit_pipeline points),
    # as before the steps were counted: the overhead is the grid steps' and the DMAs' own cost.
    f = speed.FITTED
    assert e.overhead_seconds == pytest.approx(2 * (f.step_cycles + 129 * f.dma_cycles) / 1.5e9)


def test_pipelines_of_different_lengths_are_counted_in_all():
    e = speed.estimate(_schedule([_pipeline(60, 1), _pipeline(70, 1)], BLOCKS))
    assert (e.pipeline_steps, e.pipeline_steps_each) == (130, 0)
    assert "give 2 grid steps and 130 pipeline steps in all;" in e.advice
    assert "Grid steps: 2, running 130 steps of inner pipelines in all;" in speed.text(e)


def test_grid_blocks_and_an_inner_pipelines_blocks_are_both_named():
    e = speed.estimate(_schedule([_pipeline(64, 4096)], BLOCKS[:1], grid=4096, outer_block=True))
    assert e.bound == "per-step overhead"
    assert e.advice.startswith("blocks of output 0 (128, 128) (the grid's) and input 0 (8, 1024) (the kernel's "
                               "inner pipeline's) give 4,096 grid steps x 64 pipeline steps; the per-step "
                               "overhead (about 0.19 us a grid step and 0.23 us a pipeline step on a v5e)")


def test_a_block_list_is_never_empty_and_a_claimed_operand_outside_the_call_names_none():
    # Facts from before the steps were counted (a calibration file): pipeline steps, no blocks.
    old = speed.estimate(_schedule([_pipeline(64)], []))
    assert old.advice.startswith("the pipeline's own cost is most of the time: in its 2 grid steps x 64 "
                                 "pipeline steps the kernel issues and waits on its own DMAs")
    # The grader's child is student code: an operand index it claims outside the call names no operand.
    odd = speed.estimate(_schedule([_pipeline(64)], [{"operand": 7, "block": [8, 1024]},
                                                     {"operand": -1, "block": [8, 1024]}]))
    assert odd.advice.startswith("blocks of (8, 1024) in the kernel's inner pipeline give")
    # No pipeline, no blocks: the kernel's own copies in its grid steps (the words of before).
    flat = speed.estimate(_schedule([{"steps": 2, "dma_starts": 2000.0, "dma_bytes": 1 << 22}], []))
    assert flat.pipeline_steps == 0 and "Grid steps: 2;" in speed.text(flat)
    assert flat.advice.startswith("the pipeline's own cost is most of the time: in its 2 grid steps the kernel")
    for e in (old, odd, flat):
        assert "blocks of  give" not in e.advice and not re.search(r"blocks of \W* ?give", e.advice)


def test_step_words():
    assert speed.step_words(1, 0, 0) == "1 grid step"
    assert speed.step_words(2, 128, 64) == "2 grid steps x 64 pipeline steps"
    assert speed.step_words(1, 1, 1) == "1 grid step x 1 pipeline step"
    assert speed.step_words(2, 130, 0) == "2 grid steps and 130 pipeline steps in all"


# -- the traced program (both releases: CI runs the `releases` marker on 0.10.2 too) ---------

@pytest.mark.jax
@pytest.mark.releases
def test_emit_pipeline_steps_and_blocks_come_from_the_traced_program():
    proc = run_cli("estimate", str(FIXTURE), "-a", "dma_scale", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    e = json.loads(proc.stdout)
    assert (e["grid_steps"], e["pipeline_steps"], e["pipeline_steps_each"]) == (2, 128, 64)
    assert e["bound"] == "per-step overhead"
    assert e["advice"].startswith("blocks of input 0 (8, 1024), output 0 (8, 1024) in the kernel's inner "
                                  "pipeline give 2 grid steps x 64 pipeline steps;")
    # The matmul corpus's K pipeline: 128-blocks of x and y in each of 4,096 output blocks' steps.
    k = run_cli("estimate", str(REPO / "assignments" / "matmul" / "corpus" / "emit_pipeline_k.py"), "-a", "matmul",
                "--json")
    assert k.returncode == 0, k.stderr[-2000:]
    m = json.loads(k.stdout)
    assert (m["grid_steps"], m["pipeline_steps"], m["pipeline_steps_each"]) == (4096, 4096 * 64, 64)
    assert "(128, 128) (the grid's) and input 0 (128, 128), input 1 (128, 128) (the kernel's inner" in m["advice"]
    # A kernel that copies by DMA in its grid steps but in no loop has no pipeline steps.
    flat = run_cli("estimate", str(REPO / "solutions" / "dma_scale.py"), "-a", "dma_scale", "--json")
    assert flat.returncode == 0 and json.loads(flat.stdout)["pipeline_steps"] == 0


@pytest.mark.jax
@pytest.mark.grading
def test_the_graded_speed_estimate_counts_the_pipelines_steps(tmp_path):
    results = tmp_path / "results.json"
    proc = run_cli("grade", str(FIXTURE), "-a", "dma_scale", "--run-key", "3", "--results", str(results))
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(results.read_text())
    assert doc["score"] == 16      # right on every rung: all of dma_scale's points
    said = " ".join(speed_output(doc).split())     # unscored: a section of the top-level output
    assert "Grid steps: 2, each running 64 steps of an inner pipeline (128 in all);" in said
    assert ("What would help most: blocks of input 0 (8, 1024), output 0 (8, 1024) in the kernel's inner pipeline "
            "give 2 grid steps x 64 pipeline steps; the per-step overhead (about 0.23 us a pipeline step on a "
            "v5e: its DMAs, issued and waited) is most of the time: use larger blocks in the inner pipeline.") in said
    printed = " ".join(proc.stdout.split())
    assert "blocks of give" not in printed and "blocks of  give" not in proc.stdout
    assert "Grid steps: 2, each running 64 steps of an inner pipeline (128 in all);" in printed
    sizes = doc["extra_data"]["speed_estimate"]["sizes"]["speed-1024x1024"]
    assert (sizes["grid_steps"], sizes["pipeline_steps"]) == (2, 128)
