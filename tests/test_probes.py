"""Probes through the real CLI: each corpus bug gets its exact primary ID, on the
tests where it should, and is charged once."""
import json

import pytest
from conftest import REPO, corpus, probe_tags, tags

from autograder.grading import assignments

pytestmark = [pytest.mark.jax, pytest.mark.grading]   # grades through real JAX in a child process
# CI's second JAX release (`-m releases`) runs one test per probe mechanism that goes
# through what differs by release: grid-order shuffles and two cores, the compile check's
# cross-lowering (// and % under the TPU target), the VMEM analysis, fills and the races
# read from the interpreter (logging on 0.12), the unwritten-row rerun, numerics stress.
# The rest charge the same mechanisms on other kernels; benchmarks/release_outcomes.py
# grades every corpus kernel on both releases (docs/release-outcomes.md: identical).
releases = pytest.mark.releases

MATMUL = corpus("matmul")
CLEAN_PROBES = {"Static: index maps over the whole grid": [], "Static: TPU compile readiness": [],
                "Static: VMEM budget at the real problem size": [],
                "Static: the work is done in a kernel": [],
                "Memory poisoning: NaN and random fills": [],
                "Grid order: shuffled parallel axes, two cores": [], "Races and DMA protocol": [],
                "Numerics: stress inputs (large values, long reductions, bfloat16)": []}
# dma_scale enables neither the VMEM budget nor numerics stress.
DMA_CLEAN = {k: v for k, v in CLEAN_PROBES.items() if not k.startswith(("Static: VMEM", "Numerics"))}


def _probe(doc, prefix):
    return next(t for t in doc["tests"] if t["name"].startswith(prefix))


@releases
def test_k_axis_marked_parallel(grade_cli):
    doc, out = grade_cli(MATMUL / "k_axis_parallel.py", "matmul")
    # Generic interpreter passes (it ignores dimension semantics); TPU interpret mode fails.
    assert tags(doc) == [[], ["output-block-revisit"]] * 4
    tpu = doc["tests"][1]
    assert "differ along axis 2, marked parallel" in tpu["output"]
    # Its map: the output's blocks, each written from grid points along the parallel axis
    # (the grid order's own explanation and map are not repeated: one note, below).
    assert "written from grid points along parallel axis 2" in tpu["output"]
    assert "each grid point numbered by the step it ran at" not in tpu["output"]
    order = _probe(doc, "Grid order")
    assert order["tags"] == ["grid-order-dependence"] and order["score"] == order["max_score"]
    # The same bug seen by another check: one line, not charged again.
    assert order["output"] == (
        "Same bug, not charged again: this check saw Depends on grid order [grid-order-dependence], another view "
        "of problem 1, Output block revisited [output-block-revisit], which already cost points in test 1.2.\n")
    # At the line that holds the fault (the semantics, not the call), quoted as written; the fix
    # in the kernel's own terms: K is already the last axis, only its semantics are wrong.
    assert ('At k_axis_parallel.py:36:\n\n```\ncompiler_params=pltpu.CompilerParams(dimension_semantics=('
            '"parallel", "parallel", "parallel")),\n```') in tpu["output"]
    fix = ('grid axis 2 is already last: mark it "arbitrary", dimension_semantics=("parallel", "parallel", '
           '"arbitrary")')
    assert f"Fix: {fix}." in " ".join(tpu["output"].split()) and "put the axis that revisits an output block" not in out
    # One bug, one problem: what the poisoning and grid-order checks saw of it is one note
    # line each under it (no ladder or fix of their own; issue 45 had three, and a problem 2).
    notes = [ln for ln in tpu["output"].splitlines() if ln.startswith("note: ")]
    assert notes == ["note: check P5 (poisoning) sees this bug too, as depends on uninitialized memory "
                     "[uninitialized-memory].",
                     "note: check P6 (grid order) sees this bug too, as depends on grid order [grid-order-dependence]: "
                     "the result is wrong when grid points run in another order (random_seed=1, 1 core) though it "
                     "is right in row-major order."]
    assert tpu["output"].count("Which rung catches it") == 1 and "Also on this test" not in tpu["output"]
    last = " ".join(out.splitlines()[-24:])
    assert "Tiled matrix multiplication with a K reduction axis: 13 / 18" in " ".join(last.split())
    assert ("Problems found: 1 ----------------- 1. Output block revisited [output-block-revisit]: cost 5 points in "
            f"tests 1.2, 2.2, 3.2, 4.2. Fix: {fix} (at k_axis_parallel.py:36). Explained under test 1.2.") in \
        " ".join(last.split())


def test_an_overflow_without_the_running_max_is_one_numerics_problem_with_the_hint(grade_cli):
    # exp of the raw logits overflows float32 on the case that scales q by 40: NaN beside
    # finite outputs gone to 0 (a sum that reached Inf). The unscaled case of the same dtype
    # is right, so it is an overflow: numerics, charged once (the stress check keeps its point).
    doc, out = grade_cli(corpus("flash_attention") / "no_running_max.py", "flash_attention")
    assert tags(doc) == [[], [], [], [], ["numerics"], ["numerics"], [], [], [], []]
    assert doc["score"] == 19 and probe_tags(doc)["Numerics: stress inputs (large values, long reductions, "
                                                  "bfloat16)"] == ["numerics"]
    explained = next(t for t in doc["tests"] if t["number"] == "3.1")
    text = " ".join(explained["output"].split())
    hint = assignments.find("flash_attention").numerics_hint.rstrip(".")
    assert "overflows at this case's input scale (q scaled by 40)" in text
    assert "**Inputs**: q: float32[2, 384, 64] scaled by 40, k: float32[2, 384, 64]" in text
    # The one exp of the kernel is where the inf comes from: the line shown, the hint its fix.
    assert "At no_running_max.py:24: ``` p = jnp.exp(s) # no running max: exp overflows for large logits ```" in text
    assert f"Fix: {hint}." in text
    assert "Where to look: the index maps" not in text and "smallest case" not in out
    stress = _probe(doc, "Numerics: stress")
    assert stress["score"] == stress["max_score"] and stress["output"].startswith("Same bug, not charged again")
    last = " ".join(" ".join(out.splitlines()[-24:]).split())
    assert "Problems found: 1" in last and "1. Numerical problem [numerics]: cost 2 points in tests 3.1, 3.2. " \
        f"Fix: {hint} (at no_running_max.py:24). Explained under test 3.1." in last


def test_unzeroed_accumulator_is_uninitialized_memory_not_numerics(grade_cli):
    doc, out = grade_cli(MATMUL / "unzeroed_accumulator.py", "matmul")
    assert tags(doc) == [["uninitialized-memory"]] * 8
    poison = _probe(doc, "Memory poisoning")
    assert poison["tags"] == ["uninitialized-memory"] and poison["score"] == poison["max_score"]
    assert "zero" in doc["tests"][0]["output"]


@releases
@pytest.mark.parametrize("name,probe,fid,needles", [
    # The compile check names the rule in plain words and quotes the compiler.
    ("k_block_64.py", "Static: TPU compile readiness", "compile-reject",
     ("multiples of 8 and 128", "divisible by 8 and 128")),
    # The VMEM check gives the byte counts at the production size.
    ("whole_array_blocks.py", "Static: VMEM budget at the real problem size", "vmem-overflow",
     ("16777216 bytes", "8192x8192 bfloat16")),
])
def test_bugs_only_a_probe_can_see(grade_cli, name, probe, fid, needles):
    doc, out = grade_cli(MATMUL / name, "matmul")
    assert tags(doc) == [[]] * 8, "both interpreters run it correctly"
    assert probe_tags(doc) == {**CLEAN_PROBES, probe: [fid]}
    t = _probe(doc, probe)
    assert t["score"] == 0 and t["status"] == "failed"
    assert all(n in t["output"] for n in needles)


def test_k_axis_outermost_is_a_non_consecutive_revisit(grade_cli):
    doc, out = grade_cli(MATMUL / "k_axis_outermost.py", "matmul")
    assert tags(doc) == [[], ["output-block-revisit"]] * 4
    t = _probe(doc, "Static: index maps")
    assert t["tags"] == ["output-block-revisit"] and t["output"].startswith("Same bug, not charged again")
    # The fix names the axis the output block does not depend on, and where it must go.
    assert ('Fix: make grid axis 0 (the output block stays the same along it) the last grid axis (it is '
            '"arbitrary" already) with the grid\'s order (1, 2, 0) of the axes') in " ".join(out.split())


SOFTMAX = corpus("softmax")
DMA = corpus("dma_scale")


ADD = corpus("add")


@pytest.mark.parametrize("path,slug", [
    # Flattened and swizzled grids: // and % in index maps lower for a TPU (traced
    # under the TPU target), so the compile check passes.
    pytest.param(ADD / "flat_grid.py", "add", marks=releases),
    (ADD / "swizzled_grid.py", "add"),
    (MATMUL / "flat_output_grid.py", "matmul"),
    # A fori_loop over lane chunks inside the kernel.
    (ADD / "fori_loop_rows.py", "add"),
    (SOFTMAX / "rows16_jit.py", "softmax"),
    (DMA / "fori_loop_chunks.py", "dma_scale"),
    # A cross-step prefetch on an axis marked "arbitrary": in order, so correct.
    (DMA / "dma_prefetch_arbitrary.py", "dma_scale"),
    # jax.debug.print outside the kernel, pl.debug_print inside: a TPU runs both, so the
    # compile check (cross-lowered on a CPU, where the outer print is a CPU callback)
    # leaves the outer one out.
    (ADD / "debug_prints.py", "add"),
    # input_output_aliases with partial blocks: TPU interpret mode cannot run the
    # alias (upstream), so the grader drops it on that rung only.
    pytest.param(SOFTMAX / "aliased_in_place.py", "softmax", marks=releases),
])
def test_correct_styles_are_clean_on_every_check(grade_cli, path, slug):
    doc, _ = grade_cli(path, slug)
    assert all(t["status"] == "passed" and not t["tags"] for t in doc["tests"])
    assert doc["score"] == sum(t["max_score"] for t in doc["tests"])


def test_unmasked_block_max_is_padding_dependence(grade_cli):
    doc, out = grade_cli(SOFTMAX / "softmax_global_block_max.py", "softmax", "--run-key", "1")
    # The 64-row case has no partial block and passes; every other case fails through padding:
    # each test's own reruns fill the padding once all positive and once all negative, and
    # the elements the padding reaches are right with the second.
    expected = [["padding-dependence"]] * 4 + [[], []] + [["padding-dependence"]] * 6
    assert tags(doc) == expected
    assert "partial edge blocks" in doc["tests"][0]["output"]
    # The poisoning check's fills (random sign, like the tests') are both wrong there: no
    # fill of its is benign, so it leaves the bug to the tests, which charge it.
    assert _probe(doc, "Memory poisoning")["tags"] == []


def _charged_once(doc, fid):
    """Every probe keeps its points: the one root cause was charged in a correctness test
    (a check may see it under another ID, one its catalogue entry names as the same bug)."""
    from autograder.findings import CATALOGUE
    checks = [t for t in doc["tests"] if t["number"].startswith("P")]
    assert all(t["score"] == t["max_score"] and t["status"] == "passed" for t in checks), \
        [(t["name"], t["score"], t["tags"]) for t in checks]
    assert {tag for t in checks for tag in t["tags"]} <= {fid, *CATALOGUE[fid].same_bug}
    for t in checks:
        if t["tags"] and t["tags"] != [fid]:
            assert t["output"].startswith("Same bug, not charged again: this check saw ") and \
                f"another view of problem 1, {CATALOGUE[fid].title} [{fid}]" in t["output"], t["output"][:300]


@releases
@pytest.mark.parametrize("name", ["dma_missing_wait.py", "dma_shared_semaphore.py"])
def test_one_dma_bug_is_charged_once(grade_cli, name):
    # A missing wait reads NaN scratch in TPU interpret mode, and a semaphore shared by
    # both slots lets a wait return before its own copy landed: the fills change the
    # result (poisoning sees it) and the races probe sees the DMA misuse. One bug.
    doc, out = grade_cli(DMA / name, "dma_scale")
    assert tags(doc) == [[], ["dma-protocol"]] * 4
    _charged_once(doc, "dma-protocol")
    assert probe_tags(doc) == {**DMA_CLEAN, "Memory poisoning: NaN and random fills": ["uninitialized-memory"],
                               "Races and DMA protocol": ["dma-protocol"]}
    assert "Problems found: 1" in out


def test_cross_step_prefetch_on_a_parallel_axis_is_grid_order_not_dma(grade_cli):
    # TPU interpret mode shuffles a 'parallel' axis on every run (seed 0 without a
    # random_seed): step i waits on a copy step i-1 started, so it hangs. The grader
    # reruns the case in order ('arbitrary'), which is right: the cause is the axis's
    # semantics, and the fix says so. (With "arbitrary" the same kernel is clean: the
    # corpus's dma_prefetch_arbitrary.py, graded in test_cli.)
    doc, out = grade_cli(DMA / "dma_prefetch_parallel_axis.py", "dma_scale", "--case-timeout", "5")
    # The 3-chunk case's shuffle happens to keep the one dependency in order.
    assert tags(doc) == [[], [], [], ["grid-order-dependence"], [], ["grid-order-dependence"],
                         [], ["grid-order-dependence"]]
    _charged_once(doc, "grid-order-dependence")
    # The poisoning check ran on the case whose test passed and vouches for it (a note
    # says the others' tests fail, charged there).
    assert probe_tags(doc) == {**DMA_CLEAN, **{k: ["grid-order-dependence"] for k in (
        "Grid order: shuffled parallel axes, two cores", "Races and DMA protocol")}}
    assert "Every axis 'arbitrary' (in order, one core): finishes, and is right" in out
    assert 'mark it "arbitrary" in pltpu.CompilerParams(dimension_semantics=...)' in " ".join(out.split())
    assert "a DMA wait that nothing satisfies" not in out


def test_a_dma_chunk_past_the_end_is_out_of_bounds(grade_cli):
    # a chunk past the end: generic clamps, TPU interpret mode raises.
    doc, _ = grade_cli(DMA / "dma_oob_chunk.py", "dma_scale")
    assert tags(doc) == [[], ["out-of-bounds"]] * 4


def test_a_buffer_refilled_while_in_use_is_said_so_at_the_copys_start(grade_cli):
    # Wrong on generic (eager-like), right with on_wait: the evidence (wrong only when copies
    # complete early) is a buffer refilled too soon, not "start every copy before waiting";
    # the race detector names the copy's line.
    doc, out = grade_cli(DMA / "dma_refill_before_use.py", "dma_scale")
    assert tags(doc) == [["dma-protocol"], []] * 4 and doc["score"] == 11
    first = doc["tests"][0]["output"]
    assert ("At dma_refill_before_use.py:34:\n\n```\ncopy(c + 1).start()       # overwrites buf[0] while chunk c "
            "is still to be read\n```") in first
    fix = ("a copy lands in a buffer while its data is still to be read (right only when the copy completes late): "
           "start the next copy into another buffer slot, and refill a slot only after its data has been read")
    assert f"Fix: {fix}." in " ".join(first.split())
    assert f"Fix: {fix} (at dma_refill_before_use.py:34)." in " ".join(out.split())
    assert "start every copy before waiting on it" not in out and "What your code printed" not in out


def test_two_mesh_cores_writing_one_range_is_a_race_at_its_line_with_a_mesh_fix(grade_cli):
    # pl.kernel over a two-core mesh: both cores write rows 64:128. Right values (the same
    # written twice); the race detector's report is the check's evidence, never the
    # student's output, and the fix speaks of the mesh's cores, not a parallel grid axis.
    doc, out = grade_cli(DMA / "kernel_core_race.py", "dma_scale")
    assert tags(doc) == [[]] * 8 and probe_tags(doc)["Races and DMA protocol"] == ["data-race"]
    assert doc["score"] == 15 and "What your code printed" not in out and "NpVectorClock" not in out
    race = _probe(doc, "Races and DMA protocol")
    assert "At kernel_core_race.py:32:\n\n```\npltpu.sync_copy(buf, o_hbm.at[pl.ds(c * CHUNK, CHUNK)])\n```" in \
        race["output"]
    fix = ("both cores of the pl.kernel mesh write output 0 [64:128, 0:256]: give each core a part of its own "
           "(split the work by jax.lax.axis_index so the two ranges do not overlap)")
    assert f"Fix: {fix}." in " ".join(race["output"].split()) and "parallel axis" not in race["output"]
    # TPU interpret mode runs the mesh on its own two cores, whatever the run asked for.
    flat = " ".join(race["output"].split())
    assert "The race detector (2 cores simulated)" in flat and "1 core simulated" not in flat


@pytest.mark.parametrize("path,slug,needle", [
    (DMA / "dma_uses_jnp.py", "dma_scale", "no pallas_call"),
    (MATMUL / "jnp_dot_outside.py", "matmul", "dot_general"),
])
def test_work_outside_a_kernel_earns_no_correctness_points(grade_cli, path, slug, needle):
    # The right numbers, from jax.numpy: the bundled specs gate correctness on the
    # structure check, so every correctness test fails on that one root cause.
    doc, out = grade_cli(path, slug)
    t = _probe(doc, "Static: the work is done in a kernel")
    assert t["tags"] == ["not-a-kernel"] and t["score"] == 0 and needle in t["output"]
    assert tags(doc) == [["not-a-kernel"]] * 8
    assert all(x["score"] == 0 and x["status"] == "failed" for x in doc["tests"] if x["number"][0].isdigit())
    assert "Work done outside the kernel [not-a-kernel]: cost" in out and "the rubric makes this test depend" in out
    # Replaying a test gated by the check reproduces nothing (its output is right): no grader
    # command or snippet under any of them (issue 45: 12 copies, 10.6 KB).
    assert "autograder grade" not in json.dumps(doc) and "default_rng" not in out
    if slug == "matmul":
        assert "At jnp_dot_outside.py:13:\n\n    product = jnp.dot(x, y, preferred_element_type=jnp.float32)" in out
        assert sum(len(t["output"]) for t in doc["tests"]) + len(doc["output"]) < 7000


@releases
def test_dma_race_between_cores_is_data_race(grade_cli):
    # Both cores DMA the middle chunk's rows to HBM: right values everywhere, a race on a chip.
    doc, out = grade_cli(DMA / "dma_core_ranges_overlap.py", "dma_scale")
    assert tags(doc) == [[]] * 8
    # The kernel prints nothing: the race detector's log is no output of the student's.
    assert "What your code printed" not in out and "NpVectorClock" not in out + json.dumps(doc)
    # The detector's report is quoted once, under its check (0.10.2's switch note also names it).
    reports = [ln for ln in out.splitlines() if ln.strip() == "RACE DETECTED"]
    assert len(reports) == 1 and doc["output"].count("RACE DETECTED") == 0
    assert probe_tags(doc) == {**DMA_CLEAN, "Races and DMA protocol": ["data-race"]}
    t = _probe(doc, "Races and DMA protocol")
    assert t["score"] == 0 and "2 cores simulated" in t["output"]
    assert "RACE DETECTED" in t["output"] and "slice(64, 128, 1)" in t["output"]
    # The racing line, by file name only; no vector clocks.
    assert " dma_core_ranges_overlap.py:" in t["output"] and "clock:" not in t["output"]
    assert "/corpus/dma_core_ranges_overlap.py:" not in t["output"]


def test_dma_hang_explains_the_timeout_and_stays_cheap(grade_cli):
    # Waits before it starts: TPU interpret mode hangs; generic runs DMAs as immediate copies.
    doc, _ = grade_cli(DMA / "dma_wait_before_start.py", "dma_scale")
    assert tags(doc) == [[], ["dma-protocol"]] * 4, "the hang, not the timeout, is the root cause"
    assert "hung with dma_execution_mode='on_wait' (no result within 10 s)" in doc["tests"][1]["output"]
    races = _probe(doc, "Races and DMA protocol")
    assert races["tags"] == ["dma-protocol"] and races["score"] == races["max_score"]
    assert doc["execution_time"] < 60, "two 10 s hangs, then no more TPU runs"


@releases
@pytest.mark.parametrize("name,expected,stress", [
    # No max subtraction: exp overflows on the large-logit cases (and the 1e4 stress), precision.
    ("softmax_unstable.py", [[], [], ["numerics"], ["numerics"]] * 3, ["numerics"]),
    # Wrong axis: NaN padding rows decorate a logic error; wrong-result on every case, and the
    # stress probe does not charge it again.
    ("softmax_wrong_axis.py", [["wrong-result"]] * 12, []),
])
def test_softmax_numerics_versus_logic(grade_cli, name, expected, stress):
    doc, _ = grade_cli(SOFTMAX / name, "softmax")
    assert tags(doc) == expected
    softmax_clean = {k: v for k, v in CLEAN_PROBES.items() if not k.startswith("Static: VMEM")}
    assert probe_tags(doc) == {**softmax_clean,
                               "Numerics: stress inputs (large values, long reductions, bfloat16)": stress}
    if stress:
        # The overflow the stress input shows is the one the large-logit cases were charged:
        # one line, pointing there.
        t = _probe(doc, "Numerics: stress")
        assert t["output"] == ("Same bug, not charged again: this check found problem 1, Numerical problem "
                               "[numerics], which already cost points in test 2.1.\n")
    else:
        # Wrong on the case the stress inputs are built on: not judged, and it says so
        # (never "found nothing": an overflow there would be masked by the first bug).
        t = _probe(doc, "Numerics: stress")
        assert t["score"] == t["max_score"] and "its stress runs were not judged" in " ".join(t["output"].split())


@releases
def test_a_row_no_fill_exposes_is_uninitialized_memory_on_every_test(grade_cli):
    # The masked store never writes the array's last row. The generic interpreter
    # shows NaN there; TPU interpret mode reuses the output block's buffer, so the row
    # holds the previous block's row whatever the fill, and the poisoning check passes.
    # Each test is charged from its own case's fill reruns, once.
    doc, out = grade_cli(ADD / "masked_store_last_row.py", "add", "--run-key", "1")
    assert tags(doc) == [["uninitialized-memory"]] * 8
    assert all(not t for t in probe_tags(doc).values()), probe_tags(doc)
    assert doc["score"] == 6.0
    # Which interpreter the grader reran with which fills, and a ladder that speaks of
    # memory never written (the evidence: the fill itself in a row), not of an accumulator.
    assert ("the grader reran this case's own inputs on the generic interpreter with fill-a and then fill-b "
            "in memory in place of its NaN:") in " ".join(doc["tests"][1]["output"].split())
    said = " ".join(doc["tests"][0]["output"].split())     # 1.1 explains it, with the ladder
    assert "an output element the kernel never writes comes out NaN; NaN is its only fill when you run it, and " \
        "the grader reran this case on it with other fills (fill-a, fill-b: " in said
    assert "accumulator" not in said and "only ever uses NaN" not in said
    assert "Problems found: 1" in out


def test_a_valid_row_a_masked_store_leaves_out_of_a_partial_block_is_uninitialized_memory(grade_cli):
    # The mask is off by one (row < M - 1): the array's last row, in the partial edge
    # block when M % 8 != 0, is never stored. It holds each fill rerun's own fill, so
    # it is memory never written, not padding and not a logic error: one ID on every
    # test, not numerics on one rung and wrong-result on the other.
    doc, out = grade_cli(SOFTMAX / "masked_store_partial_block.py", "softmax", "--run-key", "1")
    assert tags(doc) == [["uninitialized-memory"]] * 12
    _charged_once(doc, "uninitialized-memory")
    assert doc["score"] == 7.0 and "Problems found: 1" in out
    # At the store whose mask leaves the row out, and the fix the evidence calls for (the row
    # comes back as the fill: never stored), not "zero the accumulator" (there is none).
    first = doc["tests"][0]["output"]
    assert ("At masked_store_partial_block.py:19:\n\n```\npltpu.store(o_ref, e / jnp.sum(e, axis=-1, keepdims=True), "
            "mask=rows < m - 1)\n```") in first
    assert ("Fix: the kernel never stores 256 of the output's elements (the first at index [19, 0]): make the store "
            "write every valid element of its block (its mask or slice stops short).") in " ".join(first.split())
    assert "zero the accumulator" not in first and "Fix: initialize what you accumulate" not in first
    # The poisoning check keeps its point and says where the problem is charged, never that it
    # "found nothing" (its fill reruns saw the row change, and stood aside for the tests).
    p4 = next(t for t in doc["tests"] if t["name"].startswith("Memory poisoning"))
    assert p4["output"] == ("Passed: problem 1, Depends on uninitialized memory [uninitialized-memory], which this "
                            "check looks for, is charged by other evidence (explained under test 1.1); this check "
                            "charges nothing for it.\n")


def test_adding_into_an_output_never_set_is_read_first_not_never_stored(grade_cli):
    # o_ref[...] += x: a fill of 1e12 absorbs x and looks "never stored"; the fills that
    # move show a value computed from the fill, so the fix is to set the output first.
    doc, out = grade_cli(ADD / "accumulates_into_output.py", "add", "--run-key", "5")
    assert tags(doc) == [["uninitialized-memory"]] * 8 and doc["score"] == 6.0
    first = " ".join(doc["tests"][0]["output"].split())
    assert ("Fix: the output is computed from memory nothing wrote first: initialize what you accumulate into"
            in first) and "never stored" not in first and "hold the fill itself" not in first


def test_scratch_zeroed_at_the_first_grid_point_only_is_one_bug_charged_once(grade_cli):
    # TPU interpret mode runs the parallel axes out of row-major order: the points
    # that run before (0, 0, 0) read the scratch unwritten, on every case. The order
    # check sees the same read and keeps its point (the catalogue's same_bug).
    doc, out = grade_cli(ADD / "scratch_zeroed_at_first_point.py", "add", "--run-key", "1")
    assert tags(doc) == [[], ["uninitialized-memory"]] * 4
    _charged_once(doc, "uninitialized-memory")
    assert doc["score"] == 11.0 and "Problems found: 1" in out


def test_semantics_only_tpu_interpret_mode_refuses_cost_nothing_and_the_feedback_says_why(grade_cli):
    # "parallel" after "arbitrary": the TPU compiler accepts it and a v5e runs it right;
    # TPU interpret mode refuses it. What only an interpreter refuses costs nothing: that
    # rung runs the later axis as "arbitrary" (in order, as a one-core TPU does), its
    # tests and checks keep their points, and the feedback says so (it cost 8 of 16).
    doc, out = grade_cli(ADD / "parallel_after_arbitrary.py", "add", "--run-key", "1")
    assert tags(doc) == [[]] * 8 and not any(probe_tags(doc).values())
    assert doc["score"] == sum(t["max_score"] for t in doc["tests"]) == 16.0
    text = " ".join(out.split())
    assert "No problems found." in text
    assert ("TPU interpret mode cannot run these dimension semantics as written: it refuses a \"parallel\" grid "
            "axis after an \"arbitrary\" one (\"Dimensions with parallel semantics must form a prefix of the "
            "grid\")") in text
    assert "ran grid axis 1 as \"arbitrary\"" in text and "This costs nothing." in text


@releases
def test_a_tile_order_that_repeats_one_tile_is_one_revisit_on_both_rungs(grade_cli):
    # Tile 0 twice, the last tile never: one bug in the tile order, one ID. On the
    # generic interpreter the revisit alone looks right, and the block it never
    # reaches is what its own fill reruns find, kept beside the revisit.
    doc, out = grade_cli(MATMUL / "prefetch_order_repeats_tile.py", "matmul", "--run-key", "1")
    assert tags(doc) == [["output-block-revisit"]] * 8
    assert doc["score"] == 8.0 and "Problems found: 2" in out
    assert "costs no points now" in " ".join(out.split())
    assert "which it shows" in " ".join(doc["tests"][0]["output"].split())


@releases
def test_a_mask_with_an_infinite_literal_is_graded_as_the_logic_error_it_is(grade_cli):
    # jnp.where(..., -jnp.inf): on jax 0.12 the literal is a TypedFloat, which the
    # program document once refused ("a malformed float"), costing every point.
    doc, out = grade_cli(SOFTMAX / "column_mask_off_by_one.py", "softmax", "--run-key", "1")
    # Run key 1's secret case 4 and case 6 (both rungs share a case's draw) draw inputs
    # the missing column does not change beyond the tolerance.
    assert tags(doc) == [["wrong-result"]] * 6 + [[], []] + [["wrong-result"]] * 2 + [[], []]
    assert doc["score"] == 11.0 and "Problems found: 1" in out
    assert all(not t for t in probe_tags(doc).values()), probe_tags(doc)


def test_padding_nan_a_logic_error_carries_is_wrong_result_not_numerics(grade_cli):
    # The partial block's max runs down its rows, padding included: NaN in valid rows
    # that changes with the fill while no fill is right. One ID on every failing test.
    doc, out = grade_cli(SOFTMAX / "partial_block_wrong_axis_max.py", "softmax", "--run-key", "1")
    # Case 3 (64 rows) has no partial block: it passes.
    assert tags(doc) == [["wrong-result"]] * 4 + [[], []] + [["wrong-result"]] * 6
    assert doc["score"] == 9.0 and "Problems found: 1" in out
    assert "not an overflow" in doc["tests"][0]["output"]


def test_a_row_every_block_leaves_out_is_charged_once(grade_cli):
    doc, out = grade_cli(ADD / "masked_store_skips_row.py", "add", "--run-key", "1")
    assert tags(doc) == [["uninitialized-memory"]] * 8
    _charged_once(doc, "uninitialized-memory")
    assert doc["score"] == 6.0


def test_a_grid_too_short_for_one_case_is_charged_on_that_case_only(grade_cli):
    # Only the tall secret case has more than 32 rows of blocks: its tests, and no
    # other, lose their points, to uninitialized-memory (not numerics); the index-map
    # check saw the same blocks and keeps its point.
    doc, _ = grade_cli(ADD / "grid_capped_rows.py", "add", "--run-key", "1")
    assert tags(doc) == [[]] * 6 + [["uninitialized-memory"]] * 2
    _charged_once(doc, "uninitialized-memory")
    assert doc["score"] == 13.0


@releases
def test_the_flash_solution_keeps_full_marks_on_the_draw_that_cost_it_a_point(grade_cli):
    # Run key 5 drew a q x 200 stress input on which the solution's float32 rounding
    # exceeded the float32 tolerance; the stress input now has its own, measured one.
    doc, _ = grade_cli(REPO / "solutions" / "flash_attention.py", "flash_attention", "--run-key", "5")
    assert doc["score"] == sum(t["max_score"] for t in doc["tests"])


def test_a_bf16_product_with_a_bf16_result_is_refused_with_its_own_fix(grade_cli):
    # jnp.dot of bfloat16 operands without preferred_element_type: both interpreters
    # compute it within the bfloat16 tolerance; the TPU compiler refuses it ("Expected
    # matmul acc to be 32-bit", seen on a v5e). Its own rule and fix, not the tiling one.
    doc, out = grade_cli(corpus("flash_attention") / "bf16_pv_product.py", "flash_attention", "--run-key", "1")
    assert tags(doc) == [[]] * 10
    probes = probe_tags(doc)
    assert probes.pop("Static: TPU compile readiness") == ["compile-reject"] and not any(probes.values())
    assert doc["score"] == sum(t["max_score"] for t in doc["tests"]) - 1
    check = _probe(doc, "Static: TPU compile readiness")
    text = " ".join(check["output"].split())
    assert "Expected matmul acc to be 32-bit" in text and "must have a 32-bit result" in text
    assert "preferred_element_type=jnp.float32" in text and "(8, 128)" not in text
    assert "preferred_element_type=jnp.float32" in " ".join(out.split())
    # The rule said once (the headline), and the compiler's words without JAX's "file a bug".
    assert text.count("must have a 32-bit result") == 1 and "Rule:" not in text
    assert "'tpu.matmul' op Expected matmul acc to be 32-bit" in text and "file a bug" not in text
    assert "internal verification error" not in text


@releases
def test_a_length_from_the_wrong_dimension_is_one_problem_at_the_line_that_reads_it(grade_cli):
    # The chunk count comes from the wrong axis: on 192x256 the prefetch slices rows
    # 192..255 of a 192-row array, refused while tracing (ValueError "Out of bound slice");
    # on 256x128 half the rows are never stored. One bug seen two ways on two cases: one
    # problem, explained under the first test, at the line that reads the wrong dimension.
    doc, out = grade_cli(corpus("dma_scale") / "chunks_from_wrong_axis.py", "dma_scale", "--run-key", "5")
    oob, unwritten = ["out-of-bounds"], ["uninitialized-memory"]
    assert tags(doc) == [oob, oob, unwritten, unwritten, oob, oob, unwritten, unwritten]
    probes = probe_tags(doc)
    assert probes.pop("Memory poisoning: NaN and random fills") == unwritten and not any(probes.values())
    assert doc["score"] == 6.0
    first = " ".join(doc["tests"][0]["output"].split())
    fix = ("x_hbm.shape[1] is dimension 1 (256 on f32-192x256, 128 on f32-256x128), but what it counts runs along "
           "dimension 0 (192 on f32-192x256, 256 on f32-256x128): past the end where dimension 1 is the larger, "
           "short where it is the smaller; take it from dimension 0: x_hbm.shape[0]")
    assert "At chunks_from_wrong_axis.py:24: ``` n_chunks = x_hbm.shape[1] // CHUNK" in first
    assert f"Fix: {fix}." in first and "Also on this test" not in first and "Submission cannot" not in first
    assert "while tracing (ValueError)" in first and "print(start, ref.shape)" in first
    listed = " ".join(out.split())
    assert "Problems found: 1 " in listed and f"1. Out-of-bounds access [out-of-bounds]: cost 10 points in tests " \
        f"1.1, 1.2, 2.1, 2.2, 3.1, 3.2, 4.1, 4.2. Fix: {fix} (at chunks_from_wrong_axis.py:24). Explained under " \
        "test 1.1." in listed
    second = " ".join(doc["tests"][2]["output"].split())
    assert "Problem 1, Out-of-bounds access [out-of-bounds], explained under test 1.1; seen here as depends on " \
        "uninitialized memory [uninitialized-memory]" in second
    assert "Fix:" not in second and "accumulator" not in second
    poison = " ".join(_probe(doc, "Memory poisoning")["output"].split())
    assert "problem 1" in poison.lower() and "problem 2" not in poison.lower()


def test_a_revisit_no_rung_confirms_is_a_note_not_a_charge(grade_cli):
    # Two parallel halves both compute the only row block of the secret M = 13 case:
    # the scan sees one output block written from both sides of a parallel axis, but
    # every run on that case is right (the same values written twice). It cost a point.
    doc, out = grade_cli(SOFTMAX / "parallel_halves_share_last_block.py", "softmax", "--run-key", "1")
    assert tags(doc) == [[]] * 12 and not any(probe_tags(doc).values())
    assert doc["score"] == sum(t["max_score"] for t in doc["tests"]) and "No problems found." in out
    scan = _probe(doc, "Static: index maps")
    assert scan["status"] == "passed" and " ".join(scan["output"].split()) == (
        "Not charged: on a secret case the index maps say: an output block is written from both sides of an "
        "axis marked \"parallel\"; no run on that case shows a difference: the writes agree (the same values "
        "written twice), and a chip computes it right; on a chip with two cores the two writes race, so keep "
        "each output block to one grid point if its values could ever differ; a static finding that no rung "
        "confirms costs nothing.")


@releases
def test_padding_of_an_input_block_on_the_reduction_axis_is_padding_dependence(grade_cli):
    # K blocks of 256 over K = 384 (and 640): the last K block's padding is summed into
    # every output; the accumulator is zeroed and every output block written. It was
    # charged uninitialized-memory with the fix "zero accumulators", which it follows;
    # the reruns that fill the padding apart from the memory the kernel writes say where.
    doc, out = grade_cli(MATMUL / "k_block_past_k.py", "matmul", "--run-key", "1")
    assert tags(doc) == [["padding-dependence"]] * 4 + [[], []] + [["padding-dependence"]] * 2
    assert doc["score"] == 10.0 and "Problems found: 1" in out
    assert "uninitialized-memory" not in out and "zero accumulators" not in out
    first = " ".join(doc["tests"][0]["output"].split())
    assert "the output depends on the padding of an input's partial block" in first
    assert "through the partial blocks of input 0 (along axis 1) and input 1 (along axis 0)" in first
    # The fault is x's block spec (its last K block sticks out), the fix in the case's numbers.
    text = " ".join(out.split())
    assert "At k_block_past_k.py:33: in_specs=[pl.BlockSpec((BM, BK), lambda i, j, kk: (i, kk))," in text
    assert "At k_block_past_k.py:33: ``` in_specs=[pl.BlockSpec((BM, BK), lambda i, j, kk: (i, kk))," in first
    assert ("Fix: blocks of 256 along dimension 1 of x and dimension 0 of y (K = 384) leave a last block of 128 "
            "real elements and 128 of padding, which the reduction adds in: mask the padding of both, since 0 "
            "times NaN padding is still NaN (jnp.where(pl.program_id(2) * 256 + iota < 384, block, 0), iota a "
            "lax.broadcasted_iota along that dimension), or use a block that divides 384 (e.g. 128, which "
            "divides every K the handout allows).") in text
    assert "Where to fix it" not in text and "mask it before the reduction" not in text
    assert "iota &lt; 384, block, 0)" in first      # (results.json's Markdown escapes it)
    assert "(at k_block_past_k.py:33). Explained under test 1.1." in text
    # A secret case's test keeps the grader's words: no K, no line of numbers.
    secret = [t for t in doc["tests"] if "secret" in t["name"] and t["status"] == "failed"]
    assert secret and all("384" not in t["output"] and "640" not in t["output"] for t in secret)
    assert all(t["score"] == t["max_score"] for t in doc["tests"] if t["number"].startswith("P"))
