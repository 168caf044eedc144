"""Canaries: fail loudly when the pinned JAX changes what the grader relies on.

These run JAX in the test process (the grader's parent never does) and touch
the same internals as autograder/pallas_surface/ (the facts of this release
are in autograder/pallas_surface/release/__init__.py).
"""
import functools

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402
from jax.experimental.pallas import tpu as pltpu  # noqa: E402

from autograder.grading.judge import diagnosis  # noqa: E402
from autograder.pallas_surface import release  # noqa: E402
from autograder.pallas_surface.rungs import hooks, rewrites, rung  # noqa: E402
from autograder.pallas_surface.static import analysis  # noqa: E402

pytestmark = [pytest.mark.jax, pytest.mark.releases]
hooks.install()     # as the child does, before anything is traced
# What TPU interpret mode's errors arrive as (raised in a host callback, wrapped by XLA).
WRAPPED = jax.errors.JaxRuntimeError


def _add(x, y, extra_steps=0, interpret=False):
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))

    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(x.shape[0] // 8, x.shape[1] // 128 + extra_steps),
                          in_specs=[spec, spec], out_specs=spec, interpret=interpret)(x, y)


def _racy(a):
    """Both cores write output block 0 (on two cores, a race)."""
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), a.dtype), grid=(2,),
                          in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((8, 128), lambda i: (0, 0)),
                          compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)))(a)


def _xy():
    rng = np.random.default_rng(0)
    return (jnp.asarray(rng.standard_normal((16, 256)), jnp.float32),
            jnp.asarray(rng.standard_normal((16, 256)), jnp.float32))


def _lower(f, args):
    return analysis.lower_for_tpu(rung.trace(f, args), args)


def test_jax_is_a_supported_release_and_its_facts_are_loaded():
    assert jax.__version__ == release.INSTALLED == release.PINNED and release.INSTALLED in release.SUPPORTED
    assert release.facts(jax.__version__).PINNED == jax.__version__


def test_pallas_call_equation_has_the_params_the_rewrite_replaces():
    x, y = _xy()
    eqn = jax.make_jaxpr(_add)(x, y).jaxpr.eqns[0]
    assert eqn.primitive.name == release.PALLAS_CALL
    assert {"interpret", "grid_mapping", "jaxpr", "compiler_params"} <= set(eqn.params)
    assert eqn.params["grid_mapping"].grid == (2, 2)


def test_each_rung_runs_its_own_interpreter_in_one_process():
    """Grid one step too long: generic clamps silently, TPU interpret raises.
    Alternating rungs in one process proves no jit cache serves one rung to another."""
    x, y = _xy()
    expected = np.asarray(x) + np.asarray(y)
    traced = rung.trace(lambda a, b: _add(a, b, extra_steps=1), [x, y])
    for _ in range(2):
        out = rung.run(traced, [x, y], "generic")
        np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6)
        with pytest.raises(WRAPPED) as info:
            rung.run(traced, [x, y], "tpu-interpret")
        rung.reset_state()
        etype, msg = rung.unwrap_error(info.value)
        assert etype == "IndexError" and "Out-of-bounds block index" in msg
        assert "CpuCallback error" in str(info.value)   # still arrives wrapped
        rule = diagnosis.classify_error(etype, msg)
        assert rule is not None and rule.finding == "out-of-bounds"
        # The block map reads where the access went from this text (release.OOB_*).
        window = diagnosis.oob_window(msg)
        assert window is not None and window["array_shape"] == list(x.shape) and window["access"] == "read"
        assert window["block_index"][-1] == window["grid_point"][-1] == x.shape[1] // 128
        assert window["read_instead"][-1] == [x.shape[1] - 128, x.shape[1]]


@pytest.mark.parametrize("start, n, expected", [(16, 8, {"start": 16, "dim": 16}),
                                                 (8, 16, {"start": 8, "size": 16, "stride": 1, "dim": 16})])
def test_a_ref_slice_past_the_end_is_refused_while_tracing_as_out_of_bounds(start, n, expected):
    """A DMA from x_hbm.at[pl.ds(start, n)] past the array's end (a chunk count taken
    from the wrong axis): refused while tracing, before either rung runs, by JAX's
    indexer; the error table reads it as out-of-bounds with its start and dimension."""
    x = jnp.zeros((16, 128), jnp.float32)

    def dma(a):
        def kernel(x_hbm, o_ref, buf, sem):
            copy = pltpu.make_async_copy(x_hbm.at[pl.ds(start, n)], buf, sem.at[0])
            copy.start()
            copy.wait()
            o_ref[...] = buf[...]
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((n, 128), a.dtype),
                              in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                              out_specs=pl.BlockSpec((n, 128), lambda: (0, 0)),
                              scratch_shapes=[pltpu.VMEM((n, 128), jnp.float32), pltpu.SemaphoreType.DMA((1,))],
                              interpret=True)(a)

    with pytest.raises(ValueError) as info:
        rung.trace(dma, [x])
    msg = str(info.value)
    rule = diagnosis.classify_error("ValueError", msg)
    assert rule is not None and rule.finding == "out-of-bounds", msg
    assert diagnosis.oob_slice(msg) == expected


def test_rewrite_overrides_the_students_own_interpret_flag():
    x, y = _xy()
    traced = rung.trace(lambda a, b: _add(a, b, extra_steps=1, interpret=True), [x, y])
    with pytest.raises(WRAPPED):
        rung.run(traced, [x, y], "tpu-interpret")
    rung.reset_state()


def test_rewrite_reaches_pallas_calls_nested_in_jit_cond_loops_and_scan():
    x, y = _xy()

    @jax.jit
    def nested(a, b):
        def body(i, acc):
            return jax.lax.cond(i == 0, lambda v: v + _add(a, b, 1), lambda v: v, acc)
        acc = jax.lax.fori_loop(0, 2, body, jnp.zeros_like(a))
        acc = jax.lax.while_loop(lambda c: c[0] < 1, lambda c: (c[0] + 1, c[1] + _add(a, b, 1)),
                                 (0, acc))[1]
        acc, _ = jax.lax.scan(lambda c, _: (c + _add(a, b, 1), None), acc, None, length=1)
        return acc

    traced = rung.trace(nested, [x, y])
    assert traced.pallas_calls == 3   # cond (in fori_loop), while, scan
    out = rung.run(traced, [x, y], "generic")
    np.testing.assert_allclose(np.asarray(out), 3 * (np.asarray(x) + np.asarray(y)), rtol=1e-5)
    with pytest.raises(WRAPPED) as info:   # every nested call really ran TPU interpret mode
        rung.run(traced, [x, y], "tpu-interpret")
    rung.reset_state()
    assert rung.unwrap_error(info.value)[0] == "IndexError"


def test_non_consecutive_output_revisit_raises_runtime_error_on_tpu_rung_only():
    x = jnp.asarray(np.random.default_rng(1).standard_normal((16, 128)), jnp.float32)

    def revisit(a):
        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...]
        # Grid (2, 2): output block i // ... alternates 0, 1, 0, 1 -> non-consecutive.
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype),
                              grid=(2, 2), in_specs=[pl.BlockSpec((8, 128), lambda i, j: (j, 0))],
                              out_specs=pl.BlockSpec((8, 128), lambda i, j: (j, 0)))(a)

    traced = rung.trace(revisit, [x])
    rung.run(traced, [x], "generic")     # silently fine
    with pytest.raises(WRAPPED) as info:
        rung.run(traced, [x], "tpu-interpret")
    rung.reset_state()
    etype, msg = rung.unwrap_error(info.value)
    assert etype == "RuntimeError" and "Revisited block" in msg
    assert diagnosis.classify_error(etype, msg).finding == "output-block-revisit"


def test_interpret_params_fields_the_grader_uses_exist():
    p = rung.interpret_value("tpu-interpret", {"uninitialized_memory": "zero", "random_seed": 3,
                                              "detect_races": True, "num_cores_or_threads": 2,
                                              "dma_execution_mode": "eager"})
    assert isinstance(p, pltpu.InterpretParams) and p.random_seed == 3
    assert rung.interpret_value("generic") is True


def _block_max_kernel(x):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] - jnp.max(x_ref[...])   # max over padding rows too
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(pl.cdiv(x.shape[0], 8),),
                          in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)))(x)


@pytest.mark.parametrize("which", ["generic", "tpu-interpret"])
def test_fills_are_read_at_run_time_by_one_executable_on_both_interpreters(which):
    x = jnp.asarray(np.random.default_rng(0).standard_normal((20, 128)), jnp.float32)
    traced = rung.trace(_block_max_kernel, [x])
    executables = rung.Executables()
    outs = {}
    for fill in (None, 1e30, -1e30, None):
        with hooks.fill(fill):
            outs[fill] = np.asarray(executables.run(traced, [x], which))[16:]
        rung.reset_state()
    assert executables.compiled == 1                  # one compile served every fill
    assert np.isnan(outs[None]).all()                 # default: NaN padding, as upstream
    assert np.allclose(outs[1e30], -1e30)             # +large padding is seen
    assert np.isfinite(outs[-1e30]).all() and np.abs(outs[-1e30]).max() < 10
    # Another rung or other parameters never share an executable.
    executables.run(traced, [x], "generic" if which == "tpu-interpret" else "tpu-interpret")
    rung.reset_state()
    assert executables.compiled == 2


def _half_written(x):
    """Each (8, 128) block: rows 0-4 copied (plus rows 4-8 times 0: in the partial
    last block those are padding, which shows through), rows 4-6 from scratch never
    written, rows 6-8 never written; the row count is no multiple of 8."""
    def kernel(x_ref, o_ref, s_ref):
        o_ref[0:4, :] = x_ref[0:4, :] + x_ref[4:8, :] * 0.0
        o_ref[4:6, :] = s_ref[0:2, :]
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(pl.cdiv(x.shape[0], 8),),
                          in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
                          scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32)])(x)


@pytest.mark.parametrize("which", ["generic", "tpu-interpret"])
def test_fills_vary_element_by_element_and_buffer_by_buffer_from_their_seed(which):
    x = jnp.asarray(np.random.default_rng(0).standard_normal((20, 128)), jnp.float32)
    traced = rung.trace(_half_written, [x])
    executables = rung.Executables()

    def run(fill):
        with hooks.switches(which, {}, fill, None) as static:
            out = np.asarray(executables.run(traced, [x], which, static))
        rung.reset_state()
        return out
    one, again, other = run({"seed": [7, 1]}), run({"seed": [7, 1]}), run({"seed": [7, 2]})
    scaled = run({"seed": [7, 1], "scale": -0.25, "finite": True})
    finite = run({"seed": [7, 1], "finite": True})
    assert executables.compiled == 1                          # every fill, one executable
    np.testing.assert_array_equal(one[0:4], np.asarray(x)[0:4])
    output, scratch = one[6:8], one[4:6]
    # No value repeats (no one value marks a fill), some are NaN or infinite, magnitudes
    # spread over decades; the same seed gives the same values, another seed others.
    assert len(np.unique(output[np.isfinite(output)])) == np.isfinite(output).sum() > 128
    assert 0 < (~np.isfinite(output)).mean() < 0.4
    magnitudes = np.log10(np.abs(output[np.isfinite(output)]))
    assert magnitudes.min() < -5 and magnitudes.max() > 15
    np.testing.assert_array_equal(one, again)
    assert not np.array_equal(output, other[6:8], equal_nan=True)
    # Two buffers (the output, the scratch) hold different values: comparing them says nothing.
    assert not set(output[np.isfinite(output)].tolist()) & set(scratch[np.isfinite(scratch)].tolist())
    # The padding of the partial last block (rows 20-24, times 0): non-finite padding
    # shows there as NaN with the default mix, nowhere with a finite fill.
    assert not np.isfinite(one[16:20]).all() and np.isfinite(finite[16:20]).all()
    # The same seed at another power-of-two scale: the values scaled exactly.
    held = np.isfinite(finite[6:8]) & (finite[6:8] != 0)
    np.testing.assert_array_equal(scaled[6:8][held], finite[6:8][held] * np.float32(-0.25))


def _missing_wait(a):
    """A DMA started and waited on in the wrong order of use: the buffer is read
    before its copy is waited on (right when DMAs complete at their start)."""
    def kernel(x_hbm, o_ref, buf, sem):
        copy = pltpu.make_async_copy(x_hbm, buf, sem)
        copy.start()
        o_ref[...] = buf[...] * 2.0
        copy.wait()
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype),
                          in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                          scratch_shapes=[pltpu.VMEM(a.shape, a.dtype), pltpu.SemaphoreType.DMA])(a)


def test_the_race_detector_and_the_dma_mode_are_read_at_run_time():
    """TPU interpret mode reads detect_races and dma_execution_mode only from the
    simulated memory it builds when a kernel starts (release.SHARED_MEMORY_INIT):
    the hook builds it with each run's, so one executable per core count serves
    the plain run, the race detector and the eager DMAs."""
    x = jnp.ones((16, 128), jnp.float32)

    traced = rung.trace(_racy, [x])
    executables = rung.Executables()
    found = {}
    for label, params, races in (("plain", {"num_cores_or_threads": 2}, False),
                                 ("races", {"detect_races": True, "num_cores_or_threads": 2}, True),
                                 ("again", {"num_cores_or_threads": 2}, False)):
        with hooks.capture(), hooks.switches("tpu-interpret", params, None, None, races) as static:
            try:
                executables.run(traced, [x], "tpu-interpret", static)
            except WRAPPED:
                pass
            found[label] = hooks.races_found()
        rung.reset_state()
    assert found == {"plain": False, "races": True, "again": False}
    assert executables.compiled == 1
    y = jnp.asarray(np.random.default_rng(1).standard_normal((8, 128)), jnp.float32)
    traced = rung.trace(_missing_wait, [y])
    outs = {}
    for mode in ("on_wait", "eager", "on_wait"):
        with hooks.switches("tpu-interpret", {"dma_execution_mode": mode}, {"seed": [1], "finite": True},
                            None) as static:
            outs[mode] = np.asarray(executables.run(traced, [y], "tpu-interpret", static))
        rung.reset_state()
    assert executables.compiled == 2
    np.testing.assert_array_equal(outs["eager"], 2.0 * np.asarray(y))
    assert not np.allclose(outs["on_wait"], 2.0 * np.asarray(y))


def _k_past_the_end(x, y):
    """A matmul with K blocks of 256 over K = 384 (the last K block half padding) and an
    accumulator it never zeroes: the padding and the scratch both reach every output."""
    def kernel(x_ref, y_ref, o_ref, acc_ref):
        acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)
        o_ref[...] = acc_ref[...]
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), jnp.float32),
                          grid=(pl.cdiv(x.shape[1], 256),),
                          in_specs=[pl.BlockSpec((128, 256), lambda k: (0, k)),
                                    pl.BlockSpec((256, 128), lambda k: (k, 0))],
                          out_specs=pl.BlockSpec((128, 128), lambda k: (0, 0)),
                          scratch_shapes=[pltpu.VMEM((128, 128), jnp.float32)])(x, y)


@pytest.mark.parametrize("which", ["generic", "tpu-interpret"])
def test_the_padding_of_partial_blocks_is_filled_apart_from_outputs_and_scratch(which):
    # Both interpreters pad a partial block with one scalar they ask for with shape (),
    # and start outputs and scratch from arrays of their whole shape: hooks.fill's
    # padding fill reaches the padding only (grading/probes/unwritten.py tells them apart).
    x, y = jnp.ones((128, 384), jnp.float32), jnp.ones((384, 128), jnp.float32)
    traced = rung.trace(_k_past_the_end, [x, y])
    executables = rung.Executables()
    outs = {}
    for fill, padding in ((1.0, None), (1.0, 2.0), (3.0, 2.0)):
        with hooks.fill(fill, padding):
            outs[fill, padding] = float(np.asarray(executables.run(traced, [x, y], which))[0, 0])
        rung.reset_state()
    assert executables.compiled == 1
    # 384 real products of ones, 128 padded ones (padding x padding), and the scratch's start.
    assert outs[1.0, None] == 1.0 + 384 + 128 * 1.0
    assert outs[1.0, 2.0] == 1.0 + 384 + 128 * 4.0          # only the padding changed
    assert outs[3.0, 2.0] == 3.0 + 384 + 128 * 4.0          # only the scratch changed


def _copy_on_a_parallel_axis(a):
    """Eight (8, 128) blocks copied over a grid axis marked "parallel"."""
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype), grid=(8,),
                          in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
                          compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)))(a)


def test_grid_point_recorder_signature_and_parallel_shuffle():
    x = jnp.zeros((64, 128), jnp.float32)

    traced = rung.trace(_copy_on_a_parallel_axis, [x])
    order = []
    with hooks.grid_order({"random_seed": 1, "num_cores_or_threads": 2}, order) as params:
        rung.run(traced, [x], "tpu-interpret", params)
    rung.reset_state()
    points = [p[0][0] for p in order]
    assert sorted(points) == list(range(8)) and points != list(range(8))
    assert {p[1] for p in order} == {0, 1}


def test_parallel_axes_are_shuffled_without_a_seed_and_in_order_undoes_it():
    # jax 0.10.2 permutes 'parallel' axes with jax.random.key(random_seed or 0): the
    # grader's plain TPU interpret run is shuffled too, and its in-order rerun is not.
    x = jnp.zeros((64, 128), jnp.float32)

    traced = rung.trace(_copy_on_a_parallel_axis, [x])
    assert analysis.shuffled_axes(traced) == 1
    orders = []
    for in_order in (False, True):
        order = []
        with hooks.grid_order({}, order) as params:
            jax.block_until_ready(rung.forced(traced, "tpu-interpret", params, in_order)(x))
        rung.reset_state()
        orders.append([p[0][0] for p in order])
    shuffled, ordered = orders
    assert sorted(shuffled) == list(range(8)) and shuffled != list(range(8))
    assert ordered == list(range(8))


def test_the_grid_seed_read_at_run_time_draws_the_interpreters_own_order():
    """hooks.install_runtime_grid_order draws TPU interpret mode's permutations
    from a seed read at run time: the same coordinates as the seed fixed in the
    program (release.GRID_COORDINATES), for each seed and each mix of parallel
    and arbitrary axes."""
    mod, name = hooks._target(release.GRID_COORDINATES)
    ours, theirs = getattr(mod, name), hooks._ORIGINAL[(mod, name)]
    assert ours is not theirs
    for grid, semantics in (((8,), ("parallel",)), ((5, 7, 3), ("parallel", "parallel", "arbitrary")),
                            ((4, 9), None)):
        cp = pltpu.CompilerParams(dimension_semantics=semantics)
        for seed in (None, 2, 12345):
            with hooks.grid_order({"random_seed": seed}, None):
                got = jax.jit(lambda g=grid, c=cp: ours(g, c, None))()
            want = jax.jit(lambda g=grid, c=cp, s=seed: theirs(g, c, s))()
            assert len(got) == len(want) == len(grid)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(np.asarray(g), np.asarray(w), err_msg=f"{grid} {semantics} {seed}")


def test_grid_order_runs_share_one_program_per_core_count():
    """Seeds and the recorder are read at run time: four grid-order runs (two
    seeds, one and two cores) compile two programs, and each seed still gives
    its own order."""
    x = jnp.zeros((64, 128), jnp.float32)
    traced = rung.trace(_copy_on_a_parallel_axis, [x])
    executables, orders = rung.Executables(), {}
    for cores in (1, 2):
        for seed in (1, 2):
            order = []
            with hooks.grid_order({"random_seed": seed, "num_cores_or_threads": cores}, order) as params:
                executables.run(traced, [x], "tpu-interpret", params)
            rung.reset_state()
            orders[cores, seed] = [p[0][0] for p in order if p[1] == 0]
    assert executables.compiled == 2
    assert orders[1, 1] != orders[1, 2]
    assert sorted(orders[1, 1]) == sorted(orders[1, 2]) == list(range(8))


def test_a_seed_read_at_run_time_records_the_order_a_fixed_seed_does():
    """End to end on a parallel axis: the order recorded with the seed read at run
    time equals the order with the seed fixed in the program; a seed beyond int32
    (the spec allows any non-negative seed) stays fixed in the program."""
    x = jnp.zeros((64, 128), jnp.float32)
    traced = rung.trace(_copy_on_a_parallel_axis, [x])
    for seed in (5, 2 ** 31 + 5):
        runtime, fixed = [], []
        with hooks.grid_order({"random_seed": seed}, runtime) as params:
            assert ("random_seed" in params) == (seed >= 2 ** 31)
            rung.run(traced, [x], "tpu-interpret", params)
        rung.reset_state()

        def record(token, grid_point, core_id, into=fixed):
            into.append(int(grid_point[0]))
            return token
        rung.run(traced, [x], "tpu-interpret", {"random_seed": seed, "grid_point_recorder": record})
        rung.reset_state()
        assert [p[0][0] for p in runtime] == fixed and sorted(fixed) == list(range(8))


def test_a_raising_callback_is_logged_by_the_logger_the_capture_leaves_out():
    # TPU interpret mode raises an out-of-bounds block in a host callback, which JAX logs
    # ("jax.io_callback failed") before the error reaches the caller: the capture drops
    # that logger's records (release.CALLBACK_ERROR_LOGGER), so the student's output holds none.
    import logging
    x, y = _xy()
    traced = rung.trace(lambda a, b: _add(a, b, extra_steps=1), [x, y])
    seen: list[str] = []

    class Names(logging.Handler):
        def emit(self, record):
            seen.append(record.name)
    names = Names(logging.ERROR)
    logging.getLogger().addHandler(names)
    try:
        with hooks.capture() as got:
            with pytest.raises(WRAPPED):
                rung.run(traced, [x, y], "tpu-interpret")
    finally:
        logging.getLogger().removeHandler(names)
        rung.reset_state()
    assert release.CALLBACK_ERROR_LOGGER in seen
    assert "io_callback failed" not in got.text


def test_race_flag_and_report():
    x = jnp.ones((16, 128), jnp.float32)


    traced = rung.trace(_racy, [x])
    with hooks.capture() as got:
        try:
            rung.run(traced, [x], "tpu-interpret", {"detect_races": True, "num_cores_or_threads": 2,
                                                   **hooks.race_params()})
        except WRAPPED:   # a revisit error is possible; the race is what we test
            pass
        found = hooks.races_found()
    rung.reset_state()
    assert found and release.RACE_MARK in got.text
    # The report is the check's evidence, never the student's output.
    own = hooks.printed_by_kernel(got.text)
    assert release.RACE_MARK not in own and "clock:" not in own
    assert not hooks.races_found()   # reset clears it
    # The block map reads the two accesses from the report (release.RACE_ACCESS).
    accesses = [m.groupdict() for m in release.RACE_ACCESS.finditer(got.text)]
    assert len(accesses) >= 2 and {a["access"] for a in accesses} <= {"read", "write"}
    assert all(release.SLICE.findall(a["slices"]) for a in accesses)
    # The pipeline's own write-back of the shared output block names no source line, only
    # the call (races.writes_agree tells it from a DMA the kernel starts by that).
    assert any(a["access"] == "write" and a["where"].strip() == "pallas_call" for a in accesses)


def test_cross_lowering_rejects_misaligned_blocks_even_with_interpret_true():
    x = jnp.ones((14, 256), jnp.float32)

    def f(a):
        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...]
        spec = pl.BlockSpec((7, 128), lambda i, j: (i, j))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype), grid=(2, 2),
                              in_specs=[spec], out_specs=spec, interpret=True)(a)

    res = _lower(f, [x])
    assert not res["ok"] and "divisible by 8 and 128" in res["message"]
    assert _lower(lambda a: _add(a, a), [jnp.ones((16, 256), jnp.float32)])["ok"]


def _flat_add(a, b):
    """A 1-D grid over every (8, 128) block, mapped back with // and % (a flattened grid)."""
    cols = a.shape[1] // 128
    spec = pl.BlockSpec((8, 128), lambda g: (g // cols, g % cols))

    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype),
                          grid=((a.shape[0] // 8) * cols,), in_specs=[spec, spec], out_specs=spec,
                          interpret=True)(a, b)


def test_a_flattened_grid_lowers_when_traced_under_the_tpu_target():
    # Integer division in an index map lowers through jit equations that carry the mesh
    # they were traced under; Pallas's TPU lowering reads the chip from it. Traced on
    # the CPU, the lowering asks the CPU and refuses: not a compiler rule.
    x, y = _xy()
    on_cpu = rung.trace(_flat_add, [x, y])
    res = analysis.lower_for_tpu(on_cpu, [x, y])
    if release.TPU_INFO_REGISTRY is None:     # 0.10.2: the chip comes from the trace's mesh only
        assert not res["ok"] and release.NO_TPU_DEVICE in res["message"]
    else:                                     # 0.12: from jax's tpu_info, which the lowering scopes
        assert res == {"ok": True}
    # What the compile check lowers (the grader's child traces the program again so).
    assert analysis.lower_for_tpu(rung.trace_for_tpu(_flat_add, [x, y]), [x, y]) == {"ok": True}
    # And the tracing changes nothing the interpreters run.
    out = rung.run(rung.trace_for_tpu(_flat_add, [x, y]), [x, y], "generic")
    np.testing.assert_array_equal(np.asarray(out), np.asarray(x) + np.asarray(y))


def test_a_print_outside_the_kernel_is_no_compile_reject():
    # jax.debug.print outside a kernel is a debug_print equation (as pl.debug_print is
    # inside one), lowered as a host callback for the backend running the program: cross-
    # lowered for a TPU on a CPU, that backend refuses the TPU platform. The compile check
    # leaves such prints out (rung.without_host_prints); the kernel's own print stays.
    x, y = _xy()

    def printing_add(a, b):
        jax.debug.print("ROWS {r}", r=a.shape[0])

        def kernel(x_ref, y_ref, o_ref):
            pl.debug_print("BLOCK {}", pl.program_id(0))
            o_ref[...] = x_ref[...] + y_ref[...]
        spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype), grid=(2, 2),
                              in_specs=[spec, spec], out_specs=spec)(a, b)

    traced = rung.trace_for_tpu(printing_add, [x, y])
    prints = [e for e in traced.closed.jaxpr.eqns if e.primitive.name == release.HOST_PRINT]
    assert len(prints) == 1
    staged = jax.jit(lambda *a: rung.evaluate(traced.closed.jaxpr, traced.closed.consts, a, False))
    with pytest.raises(Exception, match="different from the lowering platform tpu"):
        with rung.tpu_target(), rung.target_chip_info():
            staged.trace(x, y).lower(lowering_platforms=("tpu",))
    assert analysis.lower_for_tpu(traced, [x, y]) == {"ok": True}
    # Left out of the lowering only: the interpreters still print it.
    assert jax.make_jaxpr(lambda a, b: rung.evaluate(traced.closed.jaxpr, traced.closed.consts, (a, b), True))(
        x, y).eqns[0].primitive.name == release.HOST_PRINT


def test_grid_mapping_fields_the_index_map_scan_reads():
    x, y = _xy()
    traced = rung.trace(lambda a, b: _add(a, b, extra_steps=1), [x, y])
    site = analysis.call_sites(traced, [x, y])[0]
    gm = site.eqn.params["grid_mapping"]
    assert gm.num_inputs == 2 and gm.num_outputs == 1 and gm.num_index_operands == 0
    bm = gm.block_mappings[0]
    assert type(bm.block_shape[0]).__name__ == "Blocked" and tuple(bm.array_aval.shape) == (16, 256)
    facts = analysis.scan_index_maps(site)
    assert facts["operands"][0]["out_of_bounds_count"] == 2


def _scale_1d(block: int, interpret: bool = True):
    def f(a):
        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...] * 2
        spec = pl.BlockSpec((block,), lambda i: (i,))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype),
                              grid=(a.shape[0] // block,), in_specs=[spec], out_specs=spec,
                              interpret=interpret)(a)
    return f


def test_cross_lowering_enforces_the_1d_block_rule_with_a_tpu_device_kind():
    # 384 of 1536: neither the whole array, nor a multiple of 8 x 128, nor a power of two.
    res = _lower(_scale_1d(384), [jnp.ones((1536,), jnp.float32)])
    assert not res["ok"] and "rank 1 block shapes" in res["message"]
    assert "multiple of 1024" in res["message"], "the tiling of the target device kind"
    from autograder.pallas_surface.release import COMPILE_RULES
    assert any(rid == "1d-block" and p.search(res["message"]) for p, rid, _ in COMPILE_RULES)
    # A power of two >= 128, and the whole array: accepted.
    assert _lower(_scale_1d(512), [jnp.ones((4096,), jnp.float32)])["ok"]
    assert _lower(_scale_1d(1536), [jnp.ones((1536,), jnp.float32)])["ok"]
    # Without a TPU device kind the lowering asks the CPU and refuses any 1-D block:
    # what lower_for_tpu's abstract mesh is there for.
    with pytest.raises(ValueError, match="Unsupported TPU device kind: cpu"):
        jax.jit(_scale_1d(512, interpret=False)).trace(jnp.ones((4096,), jnp.float32)).lower(
            lowering_platforms=("tpu",))


def test_cross_lowering_refuses_a_matmul_with_a_16_bit_result():
    # Mosaic's verifier wants a 32-bit accumulator: a bf16 x bf16 jnp.dot without
    # preferred_element_type is refused (as on a v5e), one with it is accepted.
    from autograder.pallas_surface.release import COMPILE_RULES

    def mm(preferred):
        def f(a, b):
            def kernel(x_ref, y_ref, o_ref):
                o_ref[...] = jnp.dot(x_ref[...], y_ref[...], preferred_element_type=preferred).astype(o_ref.dtype)
            spec = pl.BlockSpec((128, 128), lambda i: (i, 0))
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((256, 128), jnp.float32), grid=(2,),
                                  in_specs=[spec, pl.BlockSpec((128, 128), lambda i: (0, 0))], out_specs=spec,
                                  interpret=True)(a, b)
        return f

    args = [jnp.ones((256, 128), jnp.bfloat16), jnp.ones((128, 128), jnp.bfloat16)]
    res = _lower(mm(None), args)
    assert not res["ok"] and "Expected matmul acc to be 32-bit" in res["message"]
    assert [rid for p, rid, _ in COMPILE_RULES if p.search(res["message"])] == ["matmul-accumulator"]
    assert _lower(mm(jnp.float32), args)["ok"]
    # JAX asks for a bug report in front of the verifier's words; the feedback shows the
    # compiler's own words (the op line is the evidence), without that request.
    from jax._src.pallas.mosaic import error_handling
    assert release.MOSAIC_VERIFY_PREFIX.fullmatch(error_handling.MLIR_ERR_PREFIX)
    assert res["message"].startswith(error_handling.MLIR_ERR_PREFIX)
    words = release.compiler_words(res["message"])
    assert words.startswith("'tpu.matmul' op Expected matmul acc to be 32-bit") and "file a bug" not in words


def test_vmem_budget_counts_buffered_n_times():
    def f(a):
        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...]
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype), grid=(4,),
            in_specs=[pl.BlockSpec((256, 512), lambda i: (i, 0), pipeline_mode=pl.Buffered(3))],
            out_specs=pl.BlockSpec((256, 512), lambda i: (i, 0)))(a)

    budget = analysis.vmem_budget(rung.trace(f, [jax.ShapeDtypeStruct((1024, 512), jnp.float32)]))
    block = 256 * 512 * 4
    (call,) = budget["calls"]
    assert [(b["buffers"], b["buffering"]) for b in call["blocks"]] == \
        [(3, "pl.Buffered(3)"), (2, "double buffering")]
    assert budget["bytes"] == 5 * block


def test_vmem_budget_counts_run_scoped_at_its_peak():
    def f(a):
        def kernel(x_ref, o_ref):
            def first(t64):
                def nested(t96):
                    t96[...] = jnp.zeros_like(t96)
                pl.run_scoped(nested, pltpu.VMEM((192, 128), jnp.float32))
                t64[...] = x_ref[...]
                o_ref[...] = t64[...]

            def second(t128, sem):
                t128[...] = jnp.zeros_like(t128)
            pl.run_scoped(first, pltpu.VMEM((128, 128), jnp.float32))
            pl.run_scoped(second, pltpu.VMEM((256, 128), jnp.float32), pltpu.SemaphoreType.DMA(()))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype), grid=(2,),
                              in_specs=[pl.BlockSpec((128, 128), lambda i: (i, 0))],
                              out_specs=pl.BlockSpec((128, 128), lambda i: (i, 0)))(a)

    budget = analysis.vmem_budget(rung.trace(f, [jax.ShapeDtypeStruct((256, 128), jnp.float32)]))
    (call,) = budget["calls"]
    kib = 1024
    # Nested scopes are live together (64 + 96 KiB) and outlast the second scope (128 KiB);
    # the semaphore takes no VMEM.
    assert sorted(s["bytes"] for s in call["scoped"]) == [64 * kib, 96 * kib]
    assert budget["bytes"] == 4 * 64 * kib + 160 * kib


def test_index_map_scan_reads_scalar_prefetch_values():
    """jax 0.10.2's discharge_state takes one ClosedJaxpr: the scan discharges a
    prefetch-reading index map and evaluates it with the captured values."""
    x = jnp.asarray(np.random.default_rng(2).standard_normal((32, 128)), jnp.float32)
    order = jnp.asarray([3, 2, 1, 0], jnp.int32)

    def gather(idx, a):
        def kernel(idx_ref, x_ref, o_ref):
            o_ref[...] = x_ref[...]
        spec = pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1, grid=(4,),
            in_specs=[pl.BlockSpec((8, 128), lambda i, idx_ref: (idx_ref[i], 0))],
            out_specs=pl.BlockSpec((8, 128), lambda i, idx_ref: (i, 0)))
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype),
                              grid_spec=spec)(idx, a)

    traced = rung.trace(lambda a: gather(order, a), [x])
    (site,) = analysis.call_sites(traced, [x])
    facts = analysis.scan_index_maps(site)
    assert facts["skipped"] == []
    inp = facts["operands"][0]
    assert inp["out_of_bounds_count"] == 0 and inp["operand"] == "input 0"   # prefetch not counted
    out = np.asarray(rung.run(traced, [x], "generic"))
    np.testing.assert_array_equal(out, np.asarray(x).reshape(4, 8, 128)[::-1].reshape(32, 128))
    # The values really drive the scan: block 4 of 4 is outside the array.
    bad = jnp.asarray([3, 2, 1, 4], jnp.int32)
    traced = rung.trace(lambda a: gather(bad, a), [x])
    (site,) = analysis.call_sites(traced, [x])
    inp = analysis.scan_index_maps(site)["operands"][0]
    assert inp["out_of_bounds_count"] == 1 and inp["out_of_bounds"][0]["grid_point"] == [3]


def _solution(slug):
    import importlib.util
    from pathlib import Path

    from autograder.grading import assignments
    from autograder.grading.run import inputs
    repo = Path(__file__).resolve().parent.parent
    a = assignments.find(slug)
    s = importlib.util.spec_from_file_location(f"sol_{slug}", repo / "solutions" / f"{slug}.py")
    m = importlib.util.module_from_spec(s)
    s.loader.exec_module(m)
    args = [jnp.asarray(v.array, jnp.dtype(v.dtype)) for v in inputs.make(a, a.cases[1])]
    return rung.trace(getattr(m, a.entry_function), args), args


@pytest.mark.parametrize("slug", ["matmul", "softmax", "flash_attention"])
def test_the_compiler_options_change_no_output_bit(slug, monkeypatch):
    """Both interpreters compile with the grader's options (release.COMPILER_OPTIONS;
    two-core threads through hooks.install_thread_programs): every output must be
    bit for bit what XLA's defaults give (softmax and flash attention: exp)."""
    import functools
    assert release.COMPILER_OPTIONS is release.facts(release.INSTALLED).COMPILER_OPTIONS
    traced, args = _solution(slug)
    closed = traced.closed
    for which, params in (("generic", None), ("tpu-interpret", None),
                          ("tpu-interpret", {"num_cores_or_threads": 2, "random_seed": 1})):
        fast = [np.asarray(x) for x in jax.tree.leaves(rung.run(traced, args, which, params))]
        rung.reset_state()
        with monkeypatch.context() as m:      # XLA's defaults: no options, each thread compiling
            mod, name = hooks._target(release.THREAD_RUNNER)
            m.setattr(mod, name, hooks._ORIGINAL[(mod, name)])
            interpret = rung.interpret_value(which, params)
            plain = jax.jit(functools.partial(rung.evaluate, closed.jaxpr, closed.consts, interpret=interpret))
            default = [np.asarray(x) for x in jax.block_until_ready(plain(args))]
        rung.reset_state()
        assert len(fast) == len(default) > 0
        for f, d in zip(fast, default):
            np.testing.assert_array_equal(f, d, err_msg=f"{slug} on {which} {params}")


def test_host_callbacks_get_numpy_and_jax_still_copies_them():
    """release.IO_CALLBACK: JAX's own impl copies every argument into a jax.Array
    before calling back (the cost the hook takes away); with the hook a callback
    gets XLA's numpy arrays, and what it returns comes back as before."""
    import inspect

    from jax.experimental import io_callback
    mod, name = hooks._target(release.IO_CALLBACK)
    original = hooks._ORIGINAL[(mod, name)]
    assert getattr(mod, name) is not original
    keywords = [p for p, v in inspect.signature(original).parameters.items() if v.kind is v.KEYWORD_ONLY]
    assert keywords == ["result_avals", "callback", "sharding", "ordered"]
    assert "device_put(args" in inspect.getsource(original)
    got = []

    def callback(v):
        got.append((type(v), v.flags.writeable))
        return v + 1
    out = jax.jit(lambda v: io_callback(callback, jax.ShapeDtypeStruct(v.shape, v.dtype), v))(jnp.arange(3.0))
    assert got == [(np.ndarray, False)] and np.asarray(out).tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("slug", ["add", "matmul", "softmax", "flash_attention", None])
def test_host_callbacks_change_no_output_bit_and_no_race(slug, monkeypatch):
    """The hook (numpy arrays to the callbacks, release.IO_CALLBACK) against JAX's own
    impl: every output bit and the race flag the same, on one core and on two with the
    race detector, and with eager DMAs (``None``: a kernel whose cores race)."""
    races = {"detect_races": True, **hooks.race_params()}
    if slug is None:
        x = jnp.asarray(np.random.default_rng(2).standard_normal((16, 128)), jnp.float32)
        traced, args = rung.trace(_racy, [x]), [x]
    else:
        traced, args = _solution(slug)
    mod, name = hooks._target(release.IO_CALLBACK)
    for params in (races, {"num_cores_or_threads": 2, "random_seed": 1, **races}, {"dma_execution_mode": "eager"}):
        seen = []
        for impl in (getattr(mod, name), hooks._ORIGINAL[(mod, name)]):
            with monkeypatch.context() as m:
                m.setattr(mod, name, impl)
                with hooks.capture():
                    try:
                        out = [np.asarray(x) for x in jax.tree.leaves(rung.run(traced, args, "tpu-interpret", params))]
                    except WRAPPED as e:
                        out = [rung.unwrap_error(e)]
                seen.append((out, hooks.races_found()))
            rung.reset_state()
        (fast, fast_race), (plain, plain_race) = seen
        assert fast_race == plain_race, params
        racing = slug is None and params.get("num_cores_or_threads") == 2
        assert fast_race == racing, params
        if racing:
            continue        # which core writes the shared block last is the threads' timing
        assert len(fast) == len(plain) > 0
        for f, p in zip(fast, plain):
            if isinstance(f, tuple):
                assert f == p
            else:
                np.testing.assert_array_equal(f, p, err_msg=f"{slug} on {params}")


def test_two_core_threads_share_one_program():
    """TPU interpret mode compiles each core's thread at run time (release.THREAD_RUNNER);
    with the hook the two threads compile once, and a second run not at all."""
    mod, name = hooks._target(release.THREAD_RUNNER)
    assert getattr(mod, name) is not hooks._ORIGINAL[(mod, name)]
    x, y = _xy()
    traced = rung.trace(_add, [x, y])
    executables = rung.Executables()
    before = len(hooks._THREAD_PROGRAMS)
    params = {"num_cores_or_threads": 2, "random_seed": 3}
    out = executables.run(traced, [x, y], "tpu-interpret", params)
    assert len(hooks._THREAD_PROGRAMS) == before + 1
    executables.run(traced, [x, y], "tpu-interpret", params)
    assert len(hooks._THREAD_PROGRAMS) == before + 1
    rung.reset_state()
    np.testing.assert_array_equal(np.asarray(out), np.asarray(x + y))


def test_an_unknown_compiler_option_raises():
    """What an upgrade that drops one of release.COMPILER_OPTIONS looks like: compiling
    raises (XLA_FLAGS would abort the process instead)."""
    with pytest.raises(jax.errors.JaxRuntimeError, match="No such compile option"):
        jax.jit(lambda v: v + 1, compiler_options={"xla_no_such_option": 1})(jnp.ones(3))
    for options in release.COMPILER_OPTIONS.values():
        assert float(jax.jit(lambda v: v + 1, compiler_options=options)(jnp.ones(())) ) == 2.0


def test_platform_dependent_keeps_its_platforms_through_the_rewrite():
    """lax.platform_dependent: a CPU-only branch (blocks the TPU refuses) must not
    be lowered for the TPU; the rewrite keeps cond's branches_platforms."""
    def kernel_add(x, y, block):
        spec = pl.BlockSpec(block, lambda i, j: (i, j))

        def kernel(x_ref, y_ref, o_ref):
            o_ref[...] = x_ref[...] + y_ref[...]
        grid = (x.shape[0] // block[0], x.shape[1] // block[1])
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=grid,
                              in_specs=[spec, spec], out_specs=spec)(x, y)

    def f(x, y):
        return jax.lax.platform_dependent(x, y, cpu=lambda a, b: kernel_add(a, b, (7, 128)),
                                          default=lambda a, b: kernel_add(a, b, (8, 128)))

    x, y = jnp.ones((56, 256), jnp.float32), jnp.ones((56, 256), jnp.float32)
    traced = rung.trace(f, [x, y])
    assert _lower(f, [x, y]) == {"ok": True}
    np.testing.assert_array_equal(np.asarray(rung.run(traced, [x, y], "generic")), 2 * np.ones((56, 256)))


def test_mosaic_gets_no_precision_for_a_default_float32_dot_and_fp32_for_highest():
    """The TPU stage's chip precision (pallas_surface/rungs/precision.py): Pallas's TPU
    lowering gives tpu.matmul no precision attribute at DEFAULT (libtpu then
    rounds float32 operands to bfloat16) and contract_precision<fp32> at
    HIGHEST; HIGH it refuses, with what the stage counts as a refusal."""
    import contextlib
    import io

    def lowered(precision):
        def kernel(x_ref, y_ref, o_ref):
            o_ref[...] = jnp.dot(x_ref[...], y_ref[...], precision=precision, preferred_element_type=jnp.float32)
        x = jax.ShapeDtypeStruct((128, 128), jnp.float32)
        f = lambda a, b: pl.pallas_call(kernel, out_shape=x, debug=True)(a, b)  # noqa: E731
        out = io.StringIO()
        with contextlib.redirect_stdout(out):     # debug=True prints the Mosaic module
            rung.lowered_for_tpu(rung.trace(f, [x, x]), [x, x])
        return [line for line in out.getvalue().splitlines() if "tpu.matmul" in line]

    (default,), (highest,) = lowered(None), lowered(jax.lax.Precision.HIGHEST)
    assert "precision" not in default and "precision = #tpu.contract_precision<fp32>" in highest
    if release.DOT_HIGH_LOWERS_TO is None:
        with pytest.raises(rung.Refused, match="Unsupported dot precision"):
            lowered(jax.lax.Precision.HIGH)
    else:
        (high,) = lowered(jax.lax.Precision.HIGH)
        assert f"precision = #tpu.contract_precision<{release.DOT_HIGH_LOWERS_TO}>" in high
    assert release.DEFAULT_DOT_ROUNDS_TO == "bfloat16"


def test_the_tpu_stages_release_facts_resolve():
    """What the TPU stage classifies compile failures by, and the CPU trace option, exist."""
    import importlib
    for module, name in release.MOSAIC_REFUSALS:
        assert isinstance(getattr(importlib.import_module(module), name), type)
    f = jax.jit(lambda a: a + 1).lower(jnp.ones(3)).compile(compiler_options=release.CPU_TRACE_OPTIONS)
    assert float(f(jnp.ones(3))[0]) == 2.0


def _two_core_kernel(overlap: bool):
    """pl.kernel over a two-core TensorCoreMesh: core k copies rows [8k, 8k + 8) (with
    ``overlap``, rows [4k, 4k + 8): both cores write rows 4..8 of the output)."""
    def f(a):
        @functools.partial(pl.kernel, out_type=jax.ShapeDtypeStruct(a.shape, a.dtype),
                           mesh=pltpu.create_tensorcore_mesh("core", num_cores=2),
                           scratch_types=[pltpu.VMEM((8, 128), jnp.float32)])
        def kernel(x_hbm, o_hbm, buf):
            start = jax.lax.axis_index("core") * (4 if overlap else 8)
            pltpu.sync_copy(x_hbm.at[pl.ds(start, 8)], buf)
            buf[...] = buf[...] * 2.0
            pltpu.sync_copy(buf, o_hbm.at[pl.ds(start, 8)])
        return kernel(a)
    return f


def test_pl_kernel_is_an_mpmd_map_over_a_tensorcore_mesh_on_every_rung():
    """pl.kernel traces to mpmd_map (0.10.2 and 0.12), which the rung forcing
    reaches; the generic interpreter runs the cores as grid points and answers
    the core index with the grid index (rewrites.cores_as_grid); TPU interpret mode
    runs the mesh's two cores; the TPU lowering takes it on a CPU."""
    x = jnp.arange(16 * 128, dtype=jnp.float32).reshape(16, 128)
    traced = rung.trace(_two_core_kernel(False), [x])
    eqn, = [e for e in traced.closed.jaxpr.eqns if e.primitive.name == release.MPMD_MAP]
    assert {"jaxprs", "meshes", "interpret", "out_avals", "input_output_aliases"} <= set(eqn.params)
    assert traced.pallas_calls == 1
    for which in ("generic", "tpu-interpret"):
        np.testing.assert_array_equal(np.asarray(rung.run(traced, [x], which)), 2 * np.asarray(x))
        rung.reset_state()
    assert _lower(_two_core_kernel(False), [x])["ok"]


def test_pl_kernel_cores_race_in_tpu_interpret_mode():
    x = jnp.ones((16, 128), jnp.float32)
    with hooks.capture() as got:
        rung.run(rung.trace(_two_core_kernel(True), [x]), [x], "tpu-interpret",
                 {"detect_races": True, **hooks.race_params()})
        found = hooks.races_found()
    rung.reset_state()
    assert found and release.RACE_MARK in got.text


def _double_aliased(x, interpret=False):
    spec = pl.BlockSpec((16, x.shape[1]), lambda i: (i, 0))

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2

    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(pl.cdiv(x.shape[0], 16),), in_specs=[spec], out_specs=spec,
                          input_output_aliases={0: 0}, interpret=interpret)(x)


def test_an_aliased_input_with_partial_blocks_runs_on_tpu_interpret_mode():
    # Upstream, TPU interpret mode hands the padded input back as the aliased output
    # (20 rows declared, 32 returned) and the program fails to lower. When this
    # stops failing, rewrites.aliases_partial_blocks can go.
    x = jnp.asarray(np.arange(20 * 256, dtype=np.float32).reshape(20, 256))
    with pytest.raises(Exception, match="doesn't match function result type"):
        jax.block_until_ready(_double_aliased(x, interpret=pltpu.InterpretParams()))
    # The grader drops the alias on that rung only, and the kernel's answer stands.
    traced = rung.trace(_double_aliased, [x])
    for which in ("generic", "tpu-interpret"):
        np.testing.assert_array_equal(np.asarray(rung.run(traced, [x], which)), np.asarray(x) * 2)
    whole = jnp.ones((32, 256), jnp.float32)
    assert not rewrites.aliases_partial_blocks(jax.make_jaxpr(_double_aliased)(whole).jaxpr.eqns[0].params)
    assert rewrites.aliases_partial_blocks(jax.make_jaxpr(_double_aliased)(x).jaxpr.eqns[0].params)


def _parallel_after_arbitrary(x, interpret=False):
    spec = pl.BlockSpec((8, 128), lambda k, i, j: (i, j))

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2

    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(1, x.shape[0] // 8, x.shape[1] // 128), in_specs=[spec], out_specs=spec,
                          compiler_params=pltpu.CompilerParams(
                              dimension_semantics=("arbitrary", "parallel", "arbitrary")),
                          interpret=interpret)(x)


def test_parallel_after_arbitrary_runs_on_tpu_interpret_mode_in_order():
    # Upstream, TPU interpret mode refuses a "parallel" axis after an "arbitrary" one
    # (the TPU compiler accepts it, and a v5e runs it right). When this stops failing,
    # rewrites.parallel_as_prefix can go.
    x = jnp.asarray(np.arange(16 * 256, dtype=np.float32).reshape(16, 256))
    with pytest.raises(ValueError, match="must form a prefix of the grid"):
        jax.block_until_ready(_parallel_after_arbitrary(x, interpret=pltpu.InterpretParams()))
    # The grader runs that axis as "arbitrary" on that rung only; the other rungs and
    # the compile check see the semantics as written.
    traced = rung.trace(_parallel_after_arbitrary, [x])
    for which in ("generic", "tpu-interpret"):
        np.testing.assert_array_equal(np.asarray(rung.run(traced, [x], which)), np.asarray(x) * 2)
        rung.reset_state()
    params = jax.make_jaxpr(_parallel_after_arbitrary)(x).jaxpr.eqns[0].params
    assert rewrites.parallel_after_arbitrary(params["compiler_params"].dimension_semantics) == (1,)
    assert tuple(rewrites.parallel_as_prefix(params)["compiler_params"].dimension_semantics) == ("arbitrary",) * 3
    assert rewrites.parallel_after_arbitrary(("parallel", "parallel", "arbitrary")) == ()
    assert _lower(_parallel_after_arbitrary, [x])["ok"]


def _checked_add(x, y):
    """An add kernel with a student's own check (pl.debug_check) on its data."""
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))

    def kernel(x_ref, y_ref, o_ref):
        pl.debug_check(jnp.all(x_ref[...] < 5.0), "x stays below five")
        o_ref[...] = x_ref[...] + y_ref[...]
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(x.shape[0] // 8, x.shape[1] // 128), in_specs=[spec, spec], out_specs=spec)(x, y)


@pytest.mark.parametrize("which", ["generic", "tpu-interpret"])
def test_a_debug_check_is_a_no_op_on_the_interpreters_unless_the_rewrite_runs_it(which):
    """Pallas reads its debug-check switch only when it lowers for a TPU (Mosaic's
    lowering rule of check_p): on the interpreters pl.debug_check does nothing, with
    the switch on or off, so the grader runs each one itself (rung.checked, with the
    config release.CHECKS_AT_RUN_TIME that hooks.install turned on), and reads a
    failure back by the text checkify gives it (release.CHECK_FAILED)."""
    from autograder.pallas_surface.program import rebuild, schema, serial
    x, y = _xy()
    big = x + 10.0
    assert getattr(jax.config, release.CHECKS_AT_RUN_TIME) is True       # hooks.install
    traced = rung.trace(_checked_add, [x, y])
    check = [e for e in traced.closed.jaxpr.eqns[0].params["jaxpr"].eqns if e.primitive.name == release.CHECK]
    assert len(check) == 1 and check[0].params["debug"] is True
    eqn = traced.closed.jaxpr.eqns[0]
    # Unrewritten (the student's pallas_call bound on the interpreter): no error, switch on or off.
    for on in (False, True):
        with pl.enable_debug_checks(on):
            out = jax.jit(lambda a, b: eqn.primitive.bind(a, b, **{**eqn.params,
                                                                   "interpret": rung.interpret_value(which)}))(big, y)
        np.testing.assert_array_equal(np.asarray(out[0]), np.asarray(big + y))
    rung.reset_state()
    # The rebuilt program, rewritten: fails with the student's words and line; passes silently.
    doc = schema.loads(__import__("json").dumps(serial.encode(traced, {__file__})).encode())
    rebuilt = rung.trace(rebuild.load(doc).function(), [x, y])
    np.testing.assert_array_equal(np.asarray(rung.run(rebuilt, [x, y], which)), np.asarray(x + y))
    with pytest.raises(WRAPPED) as err:
        rung.run(rebuilt, [big, y], which)
    rung.reset_state()
    kind, text = rung.unwrap_error(err.value)
    failed = release.CHECK_FAILED.match(text)
    assert kind == "JaxRuntimeError" and failed is not None and failed["message"] == "x stays below five"
    assert failed["where"].startswith("test_canaries.py:")


def test_a_debug_check_lowers_for_a_tpu_with_pallas_checks_on_and_off():
    x, y = _xy()
    for on in (False, True):
        with pl.enable_debug_checks(on):
            _lower(_checked_add, [x, y])


def _double_buffered(kernel):
    """A kernel over x in HBM (8-row chunks) with two VMEM slots and two DMA semaphores."""
    def f(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                              out_specs=pl.BlockSpec(x.shape, lambda: (0, 0)),
                              scratch_shapes=[pltpu.VMEM((2, 8, 128), jnp.float32),
                                              pltpu.SemaphoreType.DMA((2,))])(x)
    return f


def _waits_on(other_slot: bool):
    """Two chunks double-buffered; each wait on its own slot's semaphore, or the other's."""
    def kernel(x_hbm, o_ref, buf, sem):
        def copy(c, slot, s):
            return pltpu.make_async_copy(x_hbm.at[pl.ds(c * 8, 8)], buf.at[slot], sem.at[s])
        copy(0, 0, 0).start()
        copy(1, 1, 1).start()
        for c in range(2):
            copy(c, c, 1 - c if other_slot else c).wait()
            o_ref[pl.ds(c * 8, 8), :] = buf[c]
    return _double_buffered(kernel)


def test_dma_start_and_wait_carry_src_dst_and_the_semaphore_they_signal_in_their_tree():
    """pallas_surface/program/dmas.py reads a local copy's dma_start and dma_wait as the
    tree (src_ref, dst_ref, dst_sem, src_sem, device_id) of TransformedRefs with
    NDIndexers, static indices as literal operands: a wait on the other slot's
    semaphore reads as that semaphore against the start's, at the student's lines."""
    import json

    from autograder.grading.identity import sources
    from autograder.pallas_surface.program import schema, serial
    x = jnp.zeros((16, 128), jnp.float32)
    for other_slot in (False, True):
        traced = rung.trace(_waits_on(other_slot), [x])
        doc = schema.loads(json.dumps(serial.encode(traced, {__file__})).encode())
        (k,) = sources.of_program(doc, lambda f, line: f"{f.rsplit('/', 1)[-1]}:{line}").kernels
        if not other_slot:
            assert k.sem_mismatches == () and len(k.dma_starts) == 2
            continue
        (m,) = k.sem_mismatches      # both waits are at one line: the first is shown
        assert (m.waits_on, m.started_on, m.copy) == ("sem[1]", "sem[0]", "buf[0]")
        assert m.wait.where.startswith("test_canaries.py:") and m.start.where.startswith("test_canaries.py:")


def _loop_waits_on(other_slot: bool):
    """Three chunks double-buffered in a fori_loop, each index a traced value (``c % 2``,
    ``1 - slot``, a ``pl.when`` around the prefetch); each wait on its slot's semaphore or the other's."""
    def kernel(x_hbm, o_ref, buf, sem):
        def copy(c, slot, s):
            return pltpu.make_async_copy(x_hbm.at[pl.ds(c * 8, 8)], buf.at[slot], sem.at[s])
        copy(0, 0, 0).start()

        def step(c, carry):
            slot = c % 2

            @pl.when(c + 1 < 3)
            def _():
                copy(c + 1, 1 - slot, 1 - slot).start()
            copy(c, slot, 1 - slot if other_slot else slot).wait()
            o_ref[pl.ds(pl.multiple_of(c * 8, 8), 8), :] = buf[slot]
            return carry
        jax.lax.fori_loop(0, 3, step, 0)
    return _double_buffered(kernel)


def test_a_fori_loops_dmas_are_read_step_by_step_from_its_scan_jit_and_cond():
    """pallas_surface/program/unroll.py evaluates a kernel's integer arithmetic: a fori_loop's
    scan (its ``length``, the carry as the body's outputs, or 0.10.2's ``num_carry``), ``jnp``'s
    ``%`` as a jit of ``rem`` with 0-d array literals, and ``pl.when`` as a cond on a converted
    bool. Every copy of the loop is read with numbers for indices; the wait on the next slot's
    semaphore is caught at its line, and none in the right kernel."""
    import json

    from autograder.grading.identity import sources
    from autograder.pallas_surface.program import dmas, schema, serial, unroll
    x = jnp.zeros((24, 128), jnp.float32)
    for other_slot in (False, True):
        traced = rung.trace(_loop_waits_on(other_slot), [x])
        doc = schema.loads(json.dumps(serial.encode(traced, {__file__})).encode())
        call = next(e for e in sources._eqns(doc["program"]) if e["p"] == "pallas_call")
        kernel = unroll._jaxpr_of(dict(p for p in call["params"] if p[0] == "jaxpr")["jaxpr"])
        found = dmas.copies(kernel)
        assert found is not None and [c.started for c in found] == [True, True, False, True, False, False]
        (k,) = sources.of_program(doc, lambda f, line: f"{f.rsplit('/', 1)[-1]}:{line}").kernels
        if not other_slot:
            assert k.sem_mismatches == ()
            continue
        (m,) = k.sem_mismatches
        assert (m.waits_on, m.started_on, m.copy) == ("sem[1]", "sem[0]", "buf[0]")
        assert m.wait.where.startswith("test_canaries.py:")
