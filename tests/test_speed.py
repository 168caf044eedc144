"""The TPU time estimate: the model on synthetic schedules (no JAX); its
accuracy against a real TPU v5e's device times (docs/chip-data: the held-out
and blind points the constants were never fitted to) and the published Pallas
TPU timings; the analysis of traced kernels (pl.when over the grid,
scalar-prefetch data, dtypes and precision, what it cannot say, what the
compiler would refuse); and the `estimate` verb through the tracer and the
grader's child."""
import functools
import json

import numpy as np
import pytest
from conftest import REPO, corpus, run_cli, trimmed_add

from autograder.pallas_surface.static.facts import decode
from autograder.speed import grade as speed_grade, model as speed

CHIPS = {
    "v5e": {"chip": "v5e", "hbm_bytes_per_s": 820_000_000_000, "bf16_flops_per_s": 197_000_000_000_000,
            "vmem_bytes": 128 << 20, "lanes": 128, "sublanes": 8, "mxus": 4, "mxu_columns": 128,
            "int8_ops_per_s": 394_000_000_000_000, "fp8_ops_per_s": 0, "int4_ops_per_s": 788_000_000_000_000,
            "tensor_cores": 1, "megacore": False},
    "v5p": {"chip": "v5p", "hbm_bytes_per_s": 1_230_000_000_000, "bf16_flops_per_s": 229_500_000_000_000,
            "vmem_bytes": 64 << 20, "lanes": 128, "sublanes": 8, "mxus": 4, "mxu_columns": 128,
            "int8_ops_per_s": 459_000_000_000_000, "fp8_ops_per_s": 0, "int4_ops_per_s": 920_000_000_000_000,
            "tensor_cores": 2, "megacore": True},
    "v6e": {"chip": "v6e", "hbm_bytes_per_s": 1_640_000_000_000, "bf16_flops_per_s": 920_000_000_000_000,
            "vmem_bytes": 128 << 20, "lanes": 128, "sublanes": 8, "mxus": 2, "mxu_columns": 256,
            "int8_ops_per_s": 1_840_000_000_000_000, "fp8_ops_per_s": 920_000_000_000_000,
            "int4_ops_per_s": 3_680_000_000_000_000, "tensor_cores": 1, "megacore": False},
}


def _facts(steps: int, mxu: dict, moves: tuple[int, int, int], block: int, array: int, chip: str = "v5e",
           vector: float = 0.0, transcendental: float = 0.0, semantics=("arbitrary",), problem: str = "",
           copy_bytes: int = 0, loop_dots: float = 0.0):
    """One call over a 1-D grid: two inputs and an output of square blocks, moved as ``moves`` says."""
    side = int((array // 2) ** 0.5)
    ops = [{"operand": f"input {i}", "is_output": False, "pipelined": True, "block": [block, block],
            "block_bytes": block * block * 2, "moves": m, "array_bytes": array, "shape": [side, side]}
           for i, m in enumerate(moves[:2])]
    ops.append({"operand": "output 0", "is_output": True, "pipelined": True, "block": [block, block],
                "block_bytes": block * block * 2, "moves": moves[2], "array_bytes": array, "shape": [side, side]})
    per_step = (sum(moves) - 3) * block * block * 2 / max(steps, 1)
    work = {"steps": steps, "mxu_flops": mxu, "vector": vector, "transcendental": transcendental,
            "dma_bytes": 0.0, "block_bytes": per_step, "loop_dots": loop_dots}
    return decode("speed", {"chip": CHIPS[chip], "pallas_calls": 1, "calls": [
        {"grid": [steps], "steps": steps, "operands": ops, "dtype": "bfloat16", "step_classes": [work],
         "dimension_semantics": list(semantics), "data_dependent": False, "copy_bytes": copy_bytes,
         "problem": problem}]})


# -- the model (no JAX) ----------------------------------------------------------------------

def test_small_blocks_are_bound_by_the_per_step_overhead_and_say_so():
    e = speed.estimate(_facts(32768, {"bf16": 2 * 128 ** 3}, (32768, 32768, 1024), 128, 4096 * 4096 * 2))
    assert e.bound == "per-step overhead" and e.grid_steps == 32768
    assert "32,768 grid steps" in e.advice and "use larger blocks" in e.advice
    assert e.seconds >= e.floor_seconds and e.min_hbm_bytes == 3 * 4096 * 4096 * 2


def test_an_operand_moved_many_times_its_size_is_named_and_the_floor_holds():
    # One step's work is tiny, the blocks large: memory-bound, input 1 moved 64 times its size.
    e = speed.estimate(_facts(64, {"bf16": 1.0}, (1, 64, 1), 1024, 1024 * 1024 * 2))
    assert e.bound == "memory" and e.advice.startswith("memory-bound: input 1 is moved 64.0 times its size")
    assert e.hbm_bytes == 66 * 1024 * 1024 * 2
    flat = speed.estimate(_facts(1, {"bf16": 2.0e12}, (1, 1, 1), 1024, 1024 * 1024 * 2))
    assert flat.bound == "compute" and flat.seconds >= flat.floor_seconds >= 2.0e12 / 197e12


def test_each_rate_class_runs_at_its_own_rate_and_the_floor_uses_it():
    def compute(cls, chip="v5e"):
        e = speed.estimate(_facts(1, {cls: 4.0e12}, (1, 1, 1), 128, 128 * 128 * 2, chip))
        assert e.seconds >= e.floor_seconds and e.flops_by_rate == {cls: 4.0e12}
        return e.floor_seconds
    bf16 = compute("bf16")
    assert compute("f32") == pytest.approx(bf16)                # DEFAULT: one bf16 pass
    assert compute("bf16x3") == pytest.approx(3 * bf16) and compute("bf16x6") == pytest.approx(6 * bf16)
    assert compute("int8") == pytest.approx(bf16 / 2)           # v5e: 394 int8 TOPS against 197 bf16
    assert compute("fp8") == pytest.approx(bf16)                 # v5e has no fp8 rate: converted to bf16
    assert compute("fp8", "v6e") == pytest.approx(compute("bf16", "v6e"))
    assert compute("int4", "v6e") == pytest.approx(compute("bf16", "v6e") / 4)


def test_per_chip_step_cost_vector_rates_and_megacore():
    chips = {name: decode("speed", {"chip": c, "calls": [], "pallas_calls": 0}).chip for name, c in CHIPS.items()}
    # The fitted cycles at each chip's clock (docstring of speed.model).
    assert speed.step_seconds(chips["v5e"]) == pytest.approx(speed.FITTED.step_cycles / 1.5e9)
    assert speed.step_seconds(chips["v5p"]) < speed.step_seconds(chips["v5e"])
    f = speed.FITTED
    assert speed.vector_rate(chips["v5e"]) == pytest.approx(8 * 128 * f.valu_per_cycle * 1.5e9)
    assert speed.vector_rate(chips["v5e"], in_loop=True) < speed.vector_rate(chips["v5e"]) / 3
    assert speed.eup_rate(chips["v5e"]) == pytest.approx(8 * 128 * f.eup_per_cycle * 1.5e9)
    assert speed.hbm_rate(chips["v5e"]) == pytest.approx(0.82 * 820e9)
    # v5p: 'parallel' axes split over its two TensorCores; 'arbitrary' ones run on one. The first
    # fetches, last write-backs and the call's own cost are not split.
    work = dict(mxu={"bf16": 2 * 512 ** 3}, moves=(1, 1, 1), block=512, array=512 * 512 * 2, chip="v5p")
    one = speed.estimate(_facts(4096, semantics=("arbitrary",), **work))
    two = speed.estimate(_facts(4096, semantics=("parallel",), **work))
    fixed = 3 * 512 * 512 * 2 / speed.hbm_rate(chips["v5p"]) + f.call_s
    assert (two.seconds - fixed) == pytest.approx((one.seconds - fixed) / 2, rel=0.01)


def test_the_advice_always_addresses_the_bound_it_names():
    cases = [
        (dict(steps=4096, mxu={"bf16": 1e3}, moves=(4096, 4096, 4096), block=128, array=1 << 24),
         "per-step overhead", "use larger blocks"),
        (dict(steps=64, mxu={"bf16": 1.0}, moves=(1, 64, 1), block=1024, array=1 << 21), "memory", "moved"),
        (dict(steps=1, mxu={"bf16": 1.0}, moves=(1, 1, 1), block=2048, array=2048 * 2048 * 2), "memory",
         "minimum traffic"),
        (dict(steps=64, mxu={"bf16x6": 2 * 1024 ** 3}, moves=(1, 1, 1), block=1024, array=1 << 21), "compute",
         "bfloat16 inputs with float32 accumulation"),
        (dict(steps=64, mxu={"f32": 2 * 1024 ** 3}, moves=(1, 1, 1), block=1024, array=1 << 21), "compute",
         "bfloat16 inputs with float32 accumulation"),
        (dict(steps=64, mxu={"bf16": 1e6}, moves=(1, 1, 1), block=256, array=1 << 17, vector=1e8), "compute",
         "vector unit"),
        (dict(steps=64, mxu={"bf16": 1e6}, moves=(1, 1, 1), block=256, array=1 << 17, transcendental=1e8),
         "compute", "EUP"),
        (dict(steps=64, mxu={"bf16": 2 * 1024 ** 3}, moves=(1, 1, 1), block=1024, array=1 << 21), "compute",
         "matrix unit (bf16)"),
        (dict(steps=8, mxu={"bf16": 1.0}, moves=(1, 1, 1), block=128, array=1 << 15, copy_bytes=1 << 31),
         "memory", "donate"),
        # A loop of small products inside the kernel: the waits between them, not the matrix unit
        # (the sixth read: "compute-bound at the matrix unit (wait)").
        (dict(steps=8, mxu={"bf16": 1e6}, moves=(1, 1, 1), block=256, array=1 << 17, loop_dots=4096),
         "compute", "waits for its matrix product's result"),
    ]
    for kw, bound, words in cases:
        e = speed.estimate(_facts(**kw))
        assert (e.bound, words in e.advice) == (bound, True), (kw, e.bound, e.advice)
        assert e.advice.startswith({"memory": "memory-bound", "compute": "compute-bound",
                                    "per-step overhead": "blocks of"}[bound])


def test_no_estimate_is_said_never_guessed_in_the_feedback_leaderboard_and_json():
    bad = _facts(8, {"bf16": 1.0}, (1, 1, 1), 128, 1 << 15, problem="the kernel body uses 'cumsum', which ...")
    with pytest.raises(speed.NoEstimate, match="cumsum"):
        speed.estimate(bad)
    from autograder.isolation.outcome import Outcome
    from autograder.spec import Speed
    outcome = Outcome(status="ok", facts=bad)
    spec = Speed(chip="v5e", points=1.0, leaderboard=True)
    g = speed_grade.grade(spec, (speed_grade.SizeRun("s", (("M", 128),), "bfloat16", outcome),), {}, True)
    assert g.sizes[0].estimate is None and "cumsum" in g.sizes[0].problem and g.score == 0
    assert speed_grade.leaderboard(g) == [{"name": "Estimated TPU v5e time (ms)", "value": "no estimate",
                                           "order": "asc"}]
    assert speed_grade.extra_data(g)["sizes"]["s"]["status"] == "no estimate"
    assert speed_grade.view(g)["sizes"][0]["status"] == "no estimate"
    good = _facts(8, {"bf16": 1.0}, (1, 1, 1), 128, 1 << 15)
    assert speed.estimate(good).to_json()["status"] == "estimated"


def test_a_speed_draw_carries_the_small_integer_tables_and_only_them(tmp_path):
    """A [speed] size is traced on shapes; its small int32 inputs (index or mask tables a
    data-dependent grid is computed from) come with their values, drawn from the run's seed."""
    from autograder.grading import assignments
    from autograder.grading.run import draws, inputs, plan
    folder = trimmed_add(tmp_path, '[[cases]]\nname = "c"\ndims = { M = 64, N = 256 }\ndtype = "float32"\n'
                         'seed = 1\npoints = 1\n')
    text = (folder / "spec.toml").read_text()
    table = '[[inputs]]\nname = "table"\nshape = ["M"]\ndtype = "int32"\n\n[output]'
    (folder / "spec.toml").write_text(text.replace("[output]", table, 1))
    a = assignments.load(folder)
    case = a.cases[0]
    b = plan._Builder(a, 7, lambda run: 1.0)
    draw = b.draw(case, inputs.PROBE_STREAM, abstract=True)
    files = draws.DrawStore(a, lambda *x: None, tmp_path).files(draw)
    assert [f["kind"] for f in files] == ["abstract", "abstract", "array"]
    got = np.load(files[2]["file"])
    assert got.shape == (64,) and got.dtype == np.int32
    assert np.array_equal(got, inputs.index_tables(a, case, draw.seed)[2].array)
    assert not np.array_equal(got, inputs.index_tables(a, case, [*draw.seed[:-1], draw.seed[-1] + 1])[2].array)


# -- a real TPU v5e, and the published timings ----------------------------------------------

CHIP_MAX = 0.30          # the goal (issue 47): no held-out point further from the chip than this
CHIP_MEDIAN = 0.10


@pytest.fixture(scope="module")
def published():
    from speed_fixtures import validation
    return validation.rows()


# A sample of the chip points the constants were never fitted to, one or more per assignment and
# style (the whole set is docs/speed-validation.md, made by benchmarks/speed_validation.py).
CHIP_SAMPLE = ("add/solution@speed", "dma_scale/solution@speed", "flash_attention/solution@speed",
               "matmul/solution@speed", "softmax/online_two_pass@speed", "matmul/emit_pipeline_k@speed",
               "blind/attention-b4-s1024-d64/128-256", "blind/k-loop-4096x1024/512-128",
               "blind/matvec-8192/512x1024", "blind/dma-rows-8192x512/256-32", "blind/chain-2048x1024/32",
               # issue 47's styles (chip call K): flash attention looping over its key blocks in the kernel,
               # manual DMAs with nothing else in flight, single buffers, an NT dot_general over a swapped grid
               "s47/flash-loop-b8-s2048-d128/512-512", "s47/dma-loop-1024/128-single-static",
               "s47/add-col-512x512-single", "s47/matmul-nt-swapped-4096/512", "s47/dma-grid-4096/256-32-single")


@pytest.mark.jax
def test_the_estimate_agrees_with_a_real_v5e_on_points_it_was_not_fitted_to():
    """Device times a real TPU v5e measured (docs/chip-data), against the estimate of the same
    kernel traced here as a grading traces it."""
    from benchmarks.chip import estimates, validation
    times = validation.measured()
    pool = {p["id"]: p for p in estimates.pool()}
    errors = {}
    for pid in CHIP_SAMPLE:
        assert pool[pid]["role"] in ("heldout", "blind", "styles"), pid
        seconds, bound = estimates.estimate({"facts": estimates.facts(pool[pid])})
        errors[pid] = seconds / times[pid] - 1
    print("\n".join(f"  {k:45s} {v:+.1%}" for k, v in errors.items()))
    assert max(abs(e) for e in errors.values()) <= CHIP_MAX, errors
    assert float(np.median([abs(e) for e in errors.values()])) <= CHIP_MEDIAN, errors


@pytest.mark.jax
def test_a_kernel_the_chip_refused_for_its_vmem_has_no_estimate_and_one_that_fits_has_one():
    """dma_scale's solution keeps its whole output block in VMEM: at 4096x4096 a real v5e refused to
    compile it (CompileTimeScopedVmemOom); at the spec's speed size, 1024x1024, it ran in 13.1 us."""
    from benchmarks.chip import estimates, points, validation
    refused = next(p for p in points.assignment_points() if p["id"] == "dma_scale/solution@4096")
    seconds, why = estimates.estimate({"facts": estimates.facts(refused)})
    assert seconds is None and why.startswith("the TPU compiler would refuse it at this size") and "16 MiB" in why
    fits = next(p for p in points.assignment_points() if p["id"] == "dma_scale/solution@speed")
    seconds, _bound = estimates.estimate({"facts": estimates.facts(fits)})
    assert seconds == pytest.approx(validation.measured()["dma_scale/solution@speed"], rel=CHIP_MAX)


@pytest.mark.jax
def test_the_matmul_guides_large_sizes_agree_with_the_device_time_model(published):
    """The published matmul timings are wall clock around each call (they include its dispatch, about
    0.1 ms): the large sizes, where that is noise, agree with the device-time model; the small ones
    are not compared (docs/speed-validation.md)."""
    for r in published:
        if r.point.table.startswith("matmul") and r.point.measured_s >= 5e-3:
            assert abs(r.error) <= 0.10, (r.point.table, r.point.shape, r.point.blocks, r.error)


@pytest.mark.jax
def test_every_source_ranks_its_configurations_in_the_measured_order_and_the_floor_holds(published):
    from speed_fixtures import validation
    assert validation.misranked(published) == []
    for r in published:
        e = r.estimate
        assert e.seconds >= e.floor_seconds > 0
        floor = speed.floor_seconds(r.schedule.chip, min(e.hbm_bytes, e.min_hbm_bytes), e.flops_by_rate)
        assert e.floor_seconds == pytest.approx(floor)


@pytest.mark.jax
def test_the_sparse_guides_kernels_skip_work_and_read_their_prefetch_data(published):
    by_kernel = {r.point.kernel: r for r in published if r.point.table == "sparse"}
    masked = by_kernel["dense x dense, lower-triangular output mask"]
    # 528 of the 1024 output blocks are computed, 16 K steps each: the rest of the steps skip the dot.
    assert masked.estimate.flops == pytest.approx(528 * 16 * 2 * 512 * 1024 * 512)
    assert masked.estimate.data_dependent and masked.estimate.grid_steps == 32 * 32 * 16
    # Skipped steps repeat their blocks: traffic far under a dense grid's.
    dense = 32 * 32 * 16 * 2 * (512 * 1024 * 2)
    assert masked.estimate.hbm_bytes < 0.6 * dense
    sparse = by_kernel["block-sparse x dense (10% of blocks)"]
    assert sparse.estimate.data_dependent and sparse.estimate.grid_steps == 32 * 86
    # The zeros aliased to the output are an argument: XLA copies them first.
    assert sparse.schedule.calls[0].copy_bytes == 2 * 16384 * 16384 * 2


# -- the analysis of traced kernels --------------------------------------------------------------

def _schedule(fn, args, chip="v5e"):
    from autograder.pallas_surface.rungs import rung
    from autograder.pallas_surface.static import cost
    with rung.tpu_target():
        traced = rung.trace(fn, args)
    return decode("speed", cost.speed_facts(traced, chip, args))


def _gated(n_ref, x_ref, y_ref, o_ref, *, when, loop):
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    i = pl.program_id(0)

    @pl.when(when(i, n_ref))
    def _():
        o_ref[...] = jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    if loop:
        o_ref[...] += jax.lax.fori_loop(0, n_ref[i], lambda t, c: c + jnp.exp(x_ref[...]).astype(jnp.float32),
                                        jnp.zeros(o_ref.shape, jnp.float32))


def _gated_call(n, x, y, *, when, loop=False):
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu
    steps = x.shape[0] // 128
    return pl.pallas_call(
        functools.partial(_gated, when=when, loop=loop),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1, grid=(steps,),
            in_specs=[pl.BlockSpec((128, 128), lambda i, n_ref: (i, 0)),
                      pl.BlockSpec((128, 128), lambda i, n_ref: (0, 0))],
            out_specs=pl.BlockSpec((128, 128), lambda i, n_ref: (i, 0))),
        out_shape=jax.ShapeDtypeStruct((x.shape[0], 128), jnp.float32))(n, x, y)


@pytest.mark.jax
def test_pl_when_is_evaluated_at_every_grid_point_from_program_ids_and_prefetch_data():
    import jax
    import jax.numpy as jnp
    x = jax.ShapeDtypeStruct((128 * 8, 128), jnp.bfloat16)
    y = jax.ShapeDtypeStruct((128, 128), jnp.bfloat16)
    n = np.array([1, 0, 0, 3, 0, 0, 0, 2], np.int32)
    dot = 2 * 128 ** 3
    every_other = _schedule(functools.partial(_gated_call, when=lambda i, n_ref: i % 2 == 0), [n, x, y])
    assert speed.estimate(every_other).flops == 4 * dot and not every_other.calls[0].data_dependent
    by_data = _schedule(functools.partial(_gated_call, when=lambda i, n_ref: n_ref[i] > 0), [n, x, y])
    e = speed.estimate(by_data)
    assert e.flops == 3 * dot and e.data_dependent and "scalar-prefetch data" in speed.text(e)
    # A fori_loop bound read from the prefetch data: 1 + 3 + 2 trips of a (128, 128) exp.
    looped = _schedule(functools.partial(_gated_call, when=lambda i, n_ref: n_ref[i] > 0, loop=True), [n, x, y])
    trips = sum(c.transcendental * c.steps for c in looped.calls[0].step_classes)
    assert trips == 6 * 128 * 128
    # The same kernel without the data (shapes only): no estimate, and why.
    blind = _schedule(functools.partial(_gated_call, when=lambda i, n_ref: n_ref[i] > 0, loop=True),
                      [jax.ShapeDtypeStruct((8,), jnp.int32), x, y])
    why = "fori_loop whose bound .* without the scalar-prefetch data; .*argument 0 of the graded function"
    with pytest.raises(speed.NoEstimate, match=why):
        speed.estimate(blind)


@pytest.mark.jax
def test_a_grid_of_all_different_steps_is_summarised_in_few_classes_with_its_work_kept():
    import jax
    import jax.numpy as jnp

    from autograder.pallas_surface.static import cost
    steps = cost.MAX_CLASSES + 904
    n = np.arange(steps, dtype=np.int32)          # every step loops a different number of times
    args = [n, jax.ShapeDtypeStruct((128 * steps, 128), jnp.bfloat16), jax.ShapeDtypeStruct((128, 128), jnp.bfloat16)]
    s = _schedule(functools.partial(_gated_call, when=lambda i, n_ref: n_ref[i] > 0, loop=True), args)
    classes = s.calls[0].step_classes
    assert len(classes) <= cost.MAX_CLASSES and sum(c.steps for c in classes) == steps
    exps = sum(c.transcendental * c.steps for c in classes)
    assert exps == pytest.approx(n.sum() * 128 * 128, rel=2e-3)


@pytest.mark.jax
def test_the_step_classes_sort_only_the_columns_that_vary():
    """cost._unique_rows is np.unique(axis=0) row for row and count for count, with
    constant columns, columns that vary, NaN, and no rows at all."""
    from autograder.pallas_surface.static import cost
    rng = np.random.default_rng(0)
    for _ in range(200):
        table = rng.integers(0, 3, size=(int(rng.integers(0, 40)), int(rng.integers(1, 6)))).astype(float)
        if len(table):
            table[:, int(rng.integers(0, table.shape[1]))] = 7.0
            if rng.random() < 0.3:
                table[int(rng.integers(0, len(table))), 0] = np.nan
        rows, counts = np.unique(table, axis=0, return_counts=True)
        got_rows, got_counts = cost._unique_rows(table)
        np.testing.assert_array_equal(got_rows, rows)
        np.testing.assert_array_equal(got_counts, counts)
    same = np.ones((262_144, 6))
    rows, counts = cost._unique_rows(same)
    assert rows.tolist() == [[1.0] * 6] and counts.tolist() == [262_144]


def _dot_kernel(x_ref, y_ref, o_ref, *, precision, acc):
    import jax.numpy as jnp
    o_ref[...] = jnp.dot(x_ref[...], y_ref[...], precision=precision, preferred_element_type=acc).astype(o_ref.dtype)


def _dot_call(x, y, *, precision=None, acc=None, body=_dot_kernel):
    import jax
    from jax.experimental import pallas as pl
    return pl.pallas_call(
        functools.partial(body, precision=precision, acc=acc), grid=(2,),
        in_specs=[pl.BlockSpec((128, 256), lambda i: (i, 0)), pl.BlockSpec((256, 128), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((128, 128), lambda i: (i, 0)),
        out_shape=jax.ShapeDtypeStruct((256, 128), acc or x.dtype))(x, y)


@pytest.mark.jax
@pytest.mark.parametrize("dtype,precision,acc,rate", [
    ("bfloat16", None, "float32", "bf16"), ("float32", None, None, "f32"), ("float32", "high", None, "bf16x3"),
    ("float32", "highest", None, "bf16x6"), ("int8", None, "int32", "int8"),
    ("float8_e5m2", None, "float32", "fp8")])
def test_the_matrix_unit_rate_is_read_from_the_traced_dtypes_and_precision(dtype, precision, acc, rate):
    import jax
    import jax.numpy as jnp
    args = [jax.ShapeDtypeStruct((256, 256), jnp.dtype(dtype)), jax.ShapeDtypeStruct((256, 128), jnp.dtype(dtype))]
    prec = {"high": jax.lax.Precision.HIGH, "highest": jax.lax.Precision.HIGHEST}.get(precision)
    s = _schedule(functools.partial(_dot_call, precision=prec, acc=jnp.dtype(acc) if acc else None), args)
    e = speed.estimate(s)
    assert e.flops_by_rate == {rate: 2 * 2 * 128 * 256 * 128}
    assert e.seconds >= e.floor_seconds


def _cumsum_kernel(x_ref, y_ref, o_ref, *, precision, acc):
    import jax.numpy as jnp
    o_ref[...] = jnp.cumsum(x_ref[...][:, :128], axis=0) + y_ref[:128, :]


def _unbounded_kernel(x_ref, y_ref, o_ref, *, precision, acc):
    import jax
    # A loop bound read from block data (not a grid index or scalar-prefetch value).
    n = x_ref[0, 0].astype("int32")
    o_ref[...] = jax.lax.fori_loop(0, n, lambda t, c: c + 1.0, y_ref[:128, :])


@pytest.mark.jax
@pytest.mark.parametrize("body,reason", [(_cumsum_kernel, "uses 'cumsum', which the model has no cost for"),
                                         (_unbounded_kernel, "fori_loop whose bound depends on data in its blocks")])
def test_what_the_model_cannot_analyse_gets_no_estimate_and_the_reason(body, reason):
    import jax
    import jax.numpy as jnp
    args = [jax.ShapeDtypeStruct((256, 256), jnp.float32), jax.ShapeDtypeStruct((256, 128), jnp.float32)]
    s = _schedule(functools.partial(_dot_call, body=body), args)
    assert reason in s.calls[0].problem
    with pytest.raises(speed.NoEstimate, match=reason.split(",")[0]):
        speed.estimate(s)


def _counter_kernel(form: str):
    def kernel(x_ref, o_ref):
        import jax
        import jax.numpy as jnp
        from jax.experimental import pallas as pl
        x = x_ref[...]
        if form == "while":          # a hand-written counter: 0, 2, 4, 6, 8 (5 trips)
            y = jax.lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 2, c[1] * 1.01), (0, x))[1]
        elif form == "while_le":     # 0..9 inclusive (10 trips)
            y = jax.lax.while_loop(lambda c: c[0] <= 9, lambda c: (c[0] + 1, c[1] * 1.01), (0, x))[1]
        elif form == "grid":         # up to the grid index: 1, 2, ..., 8 trips
            y = jax.lax.fori_loop(0, pl.program_id(0) + 1, lambda t, c: c * 1.01, x)
        else:                        # a condition on block data: no count
            y = jax.lax.while_loop(lambda c: jnp.sum(c[1]) < 5.0, lambda c: (c[0] + 1, c[1] * 1.01), (0, x))[1]
        o_ref[...] = y
    return kernel


@pytest.mark.jax
@pytest.mark.parametrize("form,trips", [("while", [5] * 8), ("while_le", [10] * 8), ("grid", list(range(1, 9))),
                                        ("data", None)])
def test_counter_loops_are_counted_and_a_condition_on_data_is_said(form, trips):
    """A while_loop that steps a counter by a constant up to a bound (a literal, a constant, a grid
    index) runs that many trips; one whose condition reads block data has no estimate."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def fn(x):
        spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
        return pl.pallas_call(_counter_kernel(form), out_shape=jax.ShapeDtypeStruct((64, 128), jnp.float32),
                              grid=(8,), in_specs=[spec], out_specs=spec)(x)
    s = _schedule(fn, [jax.ShapeDtypeStruct((64, 128), jnp.float32)])
    call = s.calls[0]
    if trips is None:
        assert "while_loop whose trip count the model cannot evaluate" in call.problem
        return
    # Each trip multiplies the carried (8, 128) block: 1,024 vector operations at the in-loop rate (the
    # counter's add is scalar work).
    per_trip = 1024
    got = sorted(c.loop_vector for c in call.step_classes for _ in range(c.steps))
    assert got == sorted(float(t * per_trip) for t in trips)


@pytest.mark.jax
@pytest.mark.grading
def test_estimate_through_the_tracer_and_the_graders_child():
    proc = run_cli("estimate", str(REPO / "solutions" / "matmul.py"), "-a", "matmul", "--json",
                   "--size", "M=4096,K=4096,N=4096")
    assert proc.returncode == 0, proc.stderr[-2000:]
    e = json.loads(proc.stdout)
    assert {"status", "seconds", "bound", "hbm_bytes", "min_hbm_bytes", "flops", "grid_steps", "chip"} <= set(e)
    assert e["status"] == "estimated" and e["chip"] == "v5e" and e["dtype"] == "bfloat16"
    assert e["dims"] == {"K": 4096, "M": 4096, "N": 4096} and e["flops_by_rate"] == {"bf16": 2 * 4096 ** 3}
    assert e["flops"] == 2 * 4096 ** 3 and e["seconds"] >= e["floor_seconds"] > 0
    text = run_cli("estimate", str(REPO / "solutions" / "add.py"), "-a", "add", "--chip", "v6e")
    assert text.returncode == 0 and "Estimated time on a TPU v6e" in text.stdout and "HBM traffic" in text.stdout
    none = run_cli("estimate", str(corpus("add") / "syntax_error.py"), "-a", "add", "--json")
    assert none.returncode == 1 and "no estimate: " in none.stderr and "syntax" in none.stderr.lower()
    assert json.loads(none.stdout)["status"] == "no estimate" and "syntax" in json.loads(none.stdout)["reason"].lower()
    bad = run_cli("estimate", str(REPO / "solutions" / "add.py"), "-a", "add", "--size", "M=12")
    assert bad.returncode == 1 and "M=12 breaks the spec's rule" in bad.stderr


UNESTIMABLE_ADD = '''
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def add_kernel(x_ref, y_ref, o_ref):
    # Right, and with a primitive the model has no cost for (0 * a cumulative sum).
    o_ref[...] = x_ref[...] + y_ref[...] + 0.0 * jnp.cumsum(x_ref[...], axis=0)


def add(x, y):
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(x.shape[0] // 8, x.shape[1] // 128), in_specs=[spec, spec], out_specs=spec,
                          interpret=True)(x, y)
'''


@pytest.mark.jax
@pytest.mark.grading
def test_a_correct_kernel_the_model_cannot_estimate_says_so_everywhere(tmp_path):
    speed_table = ('\n[speed]\nchip = "v5e"\npoints = 1\nleaderboard = true\n[[speed.sizes]]\nname = "s1"\n'
                   'dims = { M = 64, N = 256 }\ndtype = "float32"\n')
    folder = trimmed_add(tmp_path / "assignments", '[[cases]]\nname = "small"\ndims = { M = 16, N = 256 }\n'
                         'seed = 101\npoints = 2\n', speed_table)
    sub = tmp_path / "add.py"
    sub.write_text(UNESTIMABLE_ADD)
    results = tmp_path / "results.json"
    proc = run_cli("grade", str(sub), "-a", "add", "--assignments", str(folder.parent), "--results", str(results))
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(results.read_text())
    s1 = next(t for t in doc["tests"] if t["number"] == "S1")
    assert doc["score"] == 2 and s1["score"] == 0      # correct, but no estimate: no points from a guess
    assert "No estimate: the kernel body uses 'cumsum'" in s1["output"]
    assert "none at M=64, N=256: the kernel body uses 'cumsum'" in " ".join(proc.stdout.split())
    assert doc["leaderboard"] == [{"name": "Estimated TPU v5e time (ms)", "value": "no estimate", "order": "asc"}]
    assert doc["extra_data"]["speed_estimate"]["sizes"]["s1"]["status"] == "no estimate"


@pytest.mark.jax
def test_a_kernel_launched_from_a_loop_outside_it_gets_no_estimate_and_why():
    """On a v5e, add's kernel_per_row_block (a fori_loop launching 512 row-block calls) ran in
    1.11 ms: one call's estimate (7 us) was 99 % off, and 512 of them (3.6 ms) 225 % off. The model
    times one call, so a call inside a loop or branch outside the kernels gets no estimate."""
    import importlib.util

    import jax
    import jax.numpy as jnp
    path = corpus("add") / "kernel_per_row_block.py"
    loaded = importlib.util.spec_from_file_location("kernel_per_row_block", path)
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    x = jax.ShapeDtypeStruct((4096, 4096), jnp.float32)
    s = _schedule(module.add, [x, x])
    assert [c.problem.split(",")[0] for c in s.calls] == [
        "the pallas_call runs inside a loop (`lax.fori_loop` or `lax.scan`) outside the kernel"]
    with pytest.raises(speed.NoEstimate, match="the model times one call, not how many run"):
        speed.estimate(s)


@pytest.mark.jax
def test_a_jax_debug_print_outside_the_kernel_costs_what_a_v5e_measured():
    """add's debug_prints ran in 5.09 and 5.71 ms on a v5e (chip calls A and F), the same kernel without
    its prints in 3.39 ms: the jax.debug.print outside the kernel (a host callback), not the
    pl.debug_print inside it (fit2/print-copy: nothing measurable)."""
    import importlib.util

    import jax
    import jax.numpy as jnp
    loaded = importlib.util.spec_from_file_location("debug_prints", corpus("add") / "debug_prints.py")
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    x = jax.ShapeDtypeStruct((4096, 4096), jnp.float32)
    s = _schedule(module.add, [x, x])
    e = speed.estimate(s)
    assert s.host_prints == 1 and e.host_print_seconds == speed.FITTED.host_print_s
    assert 5.09e-3 * 0.9 <= e.seconds <= 5.71e-3 * 1.1
    assert f"jax.debug.print outside the kernel {speed.FITTED.host_print_s * 1e3:.3f} ms" in speed.text(e)


@pytest.mark.jax
def test_a_row_statistic_costs_the_vector_registers_it_fills():
    """A (256, 1) row statistic fills 32 (8, 128) vector registers, one lane used in each: its exp
    costs what a (256, 128) block's does (chip call K's attention points; primcost._slots)."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def kernel(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = x * jnp.exp(jnp.max(x, axis=-1, keepdims=True))

    def fn(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((256, 128), jnp.float32), grid=(1,),
                              in_specs=[pl.BlockSpec((256, 128), lambda i: (0, 0))],
                              out_specs=pl.BlockSpec((256, 128), lambda i: (0, 0)))(x)

    (c,) = _schedule(fn, [jax.ShapeDtypeStruct((256, 128), jnp.float32)]).calls[0].step_classes
    assert c.transcendental == 256 * 128            # not 256: one lane of each register is still a register
    assert c.vector == 2 * 256 * 128                # the row max and the product
