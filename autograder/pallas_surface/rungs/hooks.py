"""The interpreters' switches the probes turn: memory fills, the grid-point
recorder, the race detector and DMA mode, the race flag, and what the
interpreter prints.

Fills are read at run time: ``install_runtime_fills`` (called once, before
anything is traced) makes both interpreters take their "uninitialized" floats
(outputs, scratch, and the padding of partial blocks) from a host callback
that reads the current fill, so every fill of a program shares its
executable. A fill (``Fill``) is drawn element by element from seed words
(the grading's secret run key): each buffer the interpreter fills gets values
of its own, of random sign and magnitude, some NaN or infinite, so neither a
value, a range, a pattern nor a comparison of two buffers tells a kernel that
memory is unwritten. With no fill set the callback returns exactly what the
interpreter would (NaN). Integers keep the interpreters' own values.

With more than one simulated core, each core's thread compiles its part of the
grid at run time (see ``release.THREAD_RUNNER``); ``install_thread_programs``
makes the threads share one executable per program, compiled with the
grader's options, so a two-core run compiles once, and a second run of the
same executable not at all. And the host callbacks get XLA's numpy arrays as
they are (``install_host_callbacks``), not copies made jax.Arrays first.

The grid order is read at run time too (``install_runtime_grid_order``): TPU
interpret mode takes the seed that shuffles its parallel axes from its static
parameters, so each seed was a program of its own; the hook draws the same
permutations from a seed a host callback reads (``grid_order``), and the
grid-point recorder is one shared function that appends to the current run's
list. So are the race detector and the DMA execution mode
(``install_runtime_params``): TPU interpret mode reads them only from the
simulated memory it builds when a kernel starts, so the hook builds it with
the current run's. A run of TPU interpret mode on one core, whatever it
probes, then shares one executable; on two cores, another (``switches``).
"""
from __future__ import annotations

import importlib
import io
import logging
import os
import re
import sys
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from .. import release

DECADES = (-12.0, 30.0)      # the magnitudes' span of every fill the tests and probes see, as powers of ten


@dataclass(frozen=True)
class Fill:
    """What unwritten float memory holds in one run: every buffer the
    interpreter fills (outputs, scratch, padding) draws its own values from
    ``default_rng([*seed, k])``, k counting the buffers of the run in the
    order the program fills them (one program fills in one order, so two
    runs with one seed hold the same values). Each value has a random sign and
    a magnitude spread over ``decades`` (clipped to the dtype's range), times
    ``scale``; unless ``finite``, about one in eight is NaN and one in sixteen
    infinite. ``scale`` a power of two keeps a value exact: a rerun with the
    same seed and another scale shows which elements hold the fill itself."""
    seed: tuple[int, ...]
    scale: float = 1.0
    finite: bool = False
    positive: bool = False          # every value positive before the scale (no random sign)
    decades: tuple[float, float] = DECADES

    @classmethod
    def of(cls, spec: dict) -> "Fill":
        seed = tuple(int(w) for w in spec["seed"])
        if not seed or any(w < 0 or w >= 2 ** 32 for w in seed):
            raise ValueError(f"fill seed: must be 32-bit words; got {spec['seed']!r}")
        lo, hi = (float(d) for d in spec.get("decades", DECADES))
        if not lo <= hi:
            raise ValueError(f"fill decades: must be (low, high) with low <= high; got {spec['decades']!r}")
        return cls(seed, float(spec.get("scale", 1.0)), bool(spec.get("finite", False)),
                   bool(spec.get("positive", False)), (lo, hi))


NAN_SHARE, INF_SHARE = 1 / 8, 1 / 16

_FILL: list = [None]            # the current fill: None (the interpreter's own), a float, or a Fill
# The padding's own fill (None: the fill's): the padding of partial blocks filled apart
# from the memory a kernel writes, so a run can tell which of the two an output read.
_PAD_FILL: list = [None]
_BUFFERS = [0]                  # buffers the current run has filled (the k of Fill)
_FILL_LOCK = threading.Lock()   # two simulated cores fill from two threads
_ORIGINAL: dict = {}


def _target(path: tuple[str, str]):
    return importlib.import_module(path[0]), path[1]


def fill_values(fill: Fill, k: int, shape: tuple[int, ...], dtype) -> np.ndarray:
    """The values of the k-th buffer a run with ``fill`` fills."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng([*fill.seed, k])
    n = int(np.prod(shape, dtype=np.int64))
    info = jnp.finfo(dtype)
    # Well inside the dtype's normal range, so that a power-of-two scale stays exact.
    lo = max(fill.decades[0], float(np.log10(info.tiny)) + 3)
    hi = min(fill.decades[1], float(np.log10(info.max)) - 3)
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0) if not fill.positive else np.ones(n)
    values = sign * 10.0 ** rng.uniform(lo, hi, n)
    if not fill.finite:
        kind = rng.random(n)
        values[kind < NAN_SHARE] = np.nan
        odd = (kind >= NAN_SHARE) & (kind < NAN_SHARE + INF_SHARE)
        values[odd] = sign[odd] * np.inf
    return (values * fill.scale).astype(dtype).reshape(shape)


def _current(shape: tuple[int, ...], dtype, default: float, padding: bool = False) -> np.ndarray:
    """What the current fill (``padding``: the padding's) puts in a new buffer
    of this shape (run time). Both count buffers together, so a run whose
    padding has another fill of the same seed holds the same values elsewhere."""
    fill = _PAD_FILL[0] if padding and _PAD_FILL[0] is not None else _FILL[0]
    if isinstance(fill, Fill):
        with _FILL_LOCK:
            k = _BUFFERS[0]
            _BUFFERS[0] += 1
        return fill_values(fill, k, shape, dtype)
    return np.full(shape, default if fill is None else fill, dtype)


def _host_array(shape, dtype, default: float, padding: bool = False):
    """An array of the current fill (or the padding's), produced when the program runs."""
    shape = tuple(int(d) for d in shape)
    return jax.pure_callback(lambda: _current(shape, dtype, default, padding), jax.ShapeDtypeStruct(shape, dtype))


def _padded(value, block_shape, default: float):
    """``value`` padded to whole blocks with the padding's fill, element by
    element (the interpreters pad with one scalar, the same everywhere)."""
    if block_shape is None or not jnp.issubdtype(value.dtype, jnp.floating):
        return None
    padded = tuple(((v - 1) // b + 1) * b for v, b in zip(value.shape, block_shape))
    if padded == tuple(value.shape):
        return value
    return jax.lax.dynamic_update_slice(_host_array(padded, value.dtype, default, padding=True), value,
                                        (0,) * len(padded))


def install_runtime_fills() -> None:
    """Patch the interpreters' sources of uninitialized values (idempotent)."""
    generic_mod, generic_name = _target(release.GENERIC_FILL)
    array_mod, array_name = _target(release.TPU_FILL_ARRAY)
    value_mod, value_name = _target(release.TPU_FILL_VALUE)
    if (generic_mod, generic_name) in _ORIGINAL:
        return
    orig_generic = getattr(generic_mod, generic_name)
    orig_array = getattr(array_mod, array_name)
    orig_value = getattr(value_mod, value_name)

    def generic(shape, dtype):
        if jnp.issubdtype(dtype, jnp.floating):
            return _host_array(shape, dtype, np.nan)
        return orig_generic(shape, dtype)

    def tpu_array(shape, dtype, uninitialized_memory):
        if jnp.issubdtype(dtype, jnp.floating):
            return _host_array(shape, dtype, orig_value(dtype, uninitialized_memory))
        return orig_array(shape, dtype, uninitialized_memory)

    def tpu_value(dtype, uninitialized_memory):
        # A scalar read at run time (out-of-bounds reads as "uninitialized"):
        # one value of the current fill.
        if _FILL[0] is not None and jnp.issubdtype(dtype, jnp.floating):
            return _current((), dtype, np.nan)[()]
        return orig_value(dtype, uninitialized_memory)

    generic_pad_mod, generic_pad_name = _target(release.GENERIC_PAD)
    tpu_pad_mod, tpu_pad_name = _target(release.TPU_PAD)
    orig_generic_pad = getattr(generic_pad_mod, generic_pad_name)
    orig_tpu_pad = getattr(tpu_pad_mod, tpu_pad_name)

    def generic_pad(value, block_shape):
        out = _padded(value, block_shape, np.nan)
        return orig_generic_pad(value, block_shape) if out is None else out

    def tpu_pad(value, block_shape, uninitialized_memory):
        out = _padded(value, block_shape, orig_value(value.dtype, uninitialized_memory))
        return orig_tpu_pad(value, block_shape, uninitialized_memory) if out is None else out

    for (mod, name), new, orig in (((generic_mod, generic_name), generic, orig_generic),
                                   ((array_mod, array_name), tpu_array, orig_array),
                                   ((value_mod, value_name), tpu_value, orig_value),
                                   ((generic_pad_mod, generic_pad_name), generic_pad, orig_generic_pad),
                                   ((tpu_pad_mod, tpu_pad_name), tpu_pad, orig_tpu_pad)):
        _ORIGINAL[(mod, name)] = orig
        setattr(mod, name, new)


_THREAD_PROGRAMS: dict = {}     # (id(jaxpr), argument types) -> (jaxpr, executable)
_THREAD_LOCK = threading.Lock()


def _thread_program(jaxpr, consts, args):
    """The executable for one core's part of the grid, compiled by the first
    thread that needs it; the others wait for it (they must not hold the lock
    while running: the cores meet at barriers)."""
    key = (id(jaxpr), tuple(jax.typeof(x) for x in jax.tree.leaves((consts, args))))
    with _THREAD_LOCK:
        held = _THREAD_PROGRAMS.get(key)
        if held is None:
            def run(jaxpr, consts, *args):
                jax.core.eval_jaxpr(jaxpr, consts, *args)
            lowered = jax.jit(run, static_argnums=(0,)).trace(jaxpr, consts, *args).lower()
            # The jaxpr is kept with its executable so that its id is never reused.
            held = _THREAD_PROGRAMS[key] = (jaxpr, lowered.compile(release.COMPILER_OPTIONS["tpu-interpret"]))
    return held[1]


def install_thread_programs() -> None:
    """Replace TPU interpret mode's per-thread compile (idempotent)."""
    mod, name = _target(release.THREAD_RUNNER)
    if (mod, name) in _ORIGINAL:
        return

    def run_jaxpr(jaxpr, consts, *args):
        _thread_program(jaxpr, consts, args)(consts, *args)
    _ORIGINAL[(mod, name)] = getattr(mod, name)
    setattr(mod, name, run_jaxpr)


def install_host_callbacks() -> None:
    """Call the interpreters' host callbacks with the numpy arrays XLA hands
    over, not copies of them as jax.Arrays (``release.IO_CALLBACK``; idempotent).
    The callbacks only read their arguments (they are read-only either way) and
    index, compare or convert them, which numpy does alike; what they return is
    converted as before. A failing callback is logged as JAX logs it."""
    mod, name = _target(release.IO_CALLBACK)
    if (mod, name) in _ORIGINAL:
        return
    log = logging.getLogger(mod.__name__)

    def host_callback(*args, result_avals, callback, sharding, ordered, **params):
        del result_avals, sharding, ordered, params
        # Whatever a callback builds with jnp stays on the host, as JAX's own impl says.
        with jax.default_device(jax.local_devices(backend="cpu")[0]):
            try:
                return jax.tree.map(np.asarray, callback(*args))
            except BaseException:
                log.exception("jax.io_callback failed")
                raise
    _ORIGINAL[(mod, name)] = getattr(mod, name)
    setattr(mod, name, host_callback)


_SEED: list[int | None] = [None]       # the current run's grid seed (None: the interpreter's 0)
_ORDER: list[list | None] = [None]     # where the current run's grid points go


def _runtime_seed_coordinates(parallel_dims, orig: Callable) -> Callable:
    """TPU interpret mode's grid coordinates (one permutation per parallel
    axis, split from one key), with the key made from the seed when the
    program runs. A canary checks them equal to the interpreter's own."""
    def coordinates(grid, mosaic_params, random_seed):
        parallel_axes = parallel_dims(mosaic_params, len(grid))
        if random_seed is not None or not any(parallel_axes):
            # A seed fixed in the program keeps its meaning; with nothing to shuffle, no seed.
            return orig(grid, mosaic_params, random_seed)
        seed = jax.pure_callback(lambda: np.int32(_SEED[0] or 0), jax.ShapeDtypeStruct((), jnp.int32))
        key, axes = jax.random.key(seed), []
        for size, parallel in zip(grid, parallel_axes):
            if parallel:
                key, sub = jax.random.split(key)
                axes.append(jax.random.permutation(sub, jnp.arange(int(size), dtype=jnp.int32)))
            else:
                axes.append(jnp.array((), dtype=jnp.int32))
        return tuple(axes)
    return coordinates


def install_runtime_grid_order() -> None:
    """Patch where TPU interpret mode draws its grid order (idempotent)."""
    mod, name = _target(release.GRID_COORDINATES)
    if (mod, name) in _ORIGINAL:
        return
    _ORIGINAL[(mod, name)] = orig = getattr(mod, name)
    setattr(mod, name, _runtime_seed_coordinates(getattr(mod, release.PARALLEL_DIMS), orig))


def record_grid_point(token, grid_point, core_id):
    """The grid_point_recorder of every recording run: TPU interpret mode calls
    it (in a host callback) at each grid point; it must return the token."""
    if _ORDER[0] is not None:
        _ORDER[0].append([[int(g) for g in grid_point], int(core_id)])
    return token


_RUNTIME: dict = {}        # interpreter parameters the current run sets at run time


def install_runtime_params() -> None:
    """Build TPU interpret mode's simulated memory with the current run's race
    detector and DMA mode (``release.RUNTIME_PARAMS``), not the compiled ones
    (idempotent)."""
    mod, name = _target(release.SHARED_MEMORY_INIT)
    if (mod, name) in _ORIGINAL:
        return
    _ORIGINAL[(mod, name)] = orig = getattr(mod, name)

    def initialize(*args, interpret_params, **kwargs):
        wanted = {k: v for k, v in _RUNTIME.items() if hasattr(interpret_params, k)}
        if wanted:
            interpret_params = replace(interpret_params, **wanted)
        return orig(*args, interpret_params=interpret_params, **kwargs)
    setattr(mod, name, initialize)


@contextmanager
def grid_order(params: dict, order: list | None):
    """Within: TPU interpret mode shuffles with ``params``' random_seed, read at
    run time, and (with ``order``) records each grid point into it. Yields the
    parameters to compile with: no seed, and the shared recorder when recording."""
    seed = params.get("random_seed")
    # The run-time seed is an int32; a larger one stays in the program (JAX's own path).
    runtime = seed is None or 0 <= seed < 2 ** 31
    static = {k: v for k, v in params.items() if k != "random_seed" or not runtime}
    if order is not None:
        static["grid_point_recorder"] = record_grid_point
    saved = _SEED[0], _ORDER[0]
    _SEED[0], _ORDER[0] = (seed if runtime else None), order
    try:
        yield static
    finally:
        _SEED[0], _ORDER[0] = saved


@contextmanager
def switches(rung: str, params: dict, fill_spec, order: list | None, races: bool = False, pad_fill=None):
    """Within: one run's every run-time switch (its fill, grid seed and order,
    race detector and DMA mode). Yields the parameters to compile with, the
    same for every run of TPU interpret mode on one core count: the shared
    recorder (recording or not) and nothing that is read at run time."""
    wanted = {**params, **({"detect_races": True, **race_params()} if races else {})}
    runtime = {k: v for k, v in wanted.items() if k in release.RUNTIME_PARAMS}
    # (One core is the default: a run that says so compiles what the plain run does.)
    compiled = {k: v for k, v in wanted.items()
                if k not in release.RUNTIME_PARAMS and (k, v) != ("num_cores_or_threads", 1)}
    if rung != "tpu-interpret":
        runtime, compiled = {}, {}
    with fill(fill_spec, pad_fill), grid_order(compiled, order) as static:
        if rung == "tpu-interpret":
            static.setdefault("grid_point_recorder", record_grid_point)
        saved = dict(_RUNTIME)
        _RUNTIME.clear()
        _RUNTIME.update(runtime)
        try:
            yield static
        finally:
            _RUNTIME.clear()
            _RUNTIME.update(saved)


def install_runtime_checks() -> None:
    """A student's pl.debug_check runs on the interpreters (``rung.checked`` makes
    each a plain check): XLA:CPU lowers a plain check to a host callback that raises
    with its message only with this config on (else lowering refuses it)."""
    jax.config.update(release.CHECKS_AT_RUN_TIME, True)


def install() -> None:
    """Every run-time hook, once, before anything is traced."""
    install_runtime_checks()
    install_runtime_fills()
    install_thread_programs()
    install_runtime_grid_order()
    install_runtime_params()
    install_host_callbacks()


@contextmanager
def fill(value, padding=None):
    """Within: uninitialized floats (outputs, scratch, padding) read ``value``:
    None (the interpreter's own NaN), one float everywhere, a ``Fill`` or its
    child form (a dict: seed, scale, finite), drawn element by element; with
    ``padding`` (the same forms), the padding of partial blocks reads that."""
    if (value is not None or padding is not None) and _target(release.GENERIC_FILL) not in _ORIGINAL:
        raise RuntimeError("hooks.install() must run before anything is traced")
    saved = _FILL[0], _PAD_FILL[0], _BUFFERS[0]
    _FILL[0], _PAD_FILL[0], _BUFFERS[0] = _fill_of(value), _fill_of(padding), 0
    try:
        yield
    finally:
        _FILL[0], _PAD_FILL[0], _BUFFERS[0] = saved


def _fill_of(value):
    if isinstance(value, dict):
        return Fill.of(value)
    return value if value is None or isinstance(value, Fill) else float(value)


def races_found() -> bool:
    """TPU interpret mode's race flag (set when detect_races finds a race)."""
    state = importlib.import_module(release.RACE_FLAG_MODULE)
    for name in release.RACE_FLAG_PATH[:-1]:
        state = getattr(state, name, None)
        if state is None:
            return False
    return bool(getattr(state, release.RACE_FLAG_PATH[-1], False))


def race_params() -> dict:
    """Interpreter parameters that make this release report races the way
    ``races_found`` and RACE_MARK read them."""
    return dict(release.RACE_PARAMS)


class Captured:
    text: str = ""


class _Reports(logging.Handler):
    """Warnings logged during the block: where 0.12's race reports go
    (``release.RACE_REPORTED_TO``; read races to the race-detection module's
    logger, write races to the root logger)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == release.CALLBACK_ERROR_LOGGER:
            return
        try:
            self.lines.append(record.getMessage())
        except (TypeError, ValueError):   # a malformed log call is not the grader's error
            pass


@contextmanager
def capture():
    """What the interpreter reports during the block (race reports, semaphores
    left non-zero), from file descriptor 1, ``sys.stdout`` and logged warnings.
    Afterwards only what the kernel itself printed (``jax.debug.print``) goes on
    to the student's output: the interpreter's reports are the checks' evidence,
    explained under their check, never the student's own output."""
    got = Captured()
    reports = _Reports()
    root = logging.getLogger()
    root.addHandler(reports)
    sys.stdout.flush()
    saved_fd = os.dup(1)
    tmp = tempfile.TemporaryFile()
    os.dup2(tmp.fileno(), 1)
    # Python-level prints go through sys.stdout, which need not be descriptor 1.
    saved_stdout, sys.stdout = sys.stdout, io.StringIO()
    try:
        yield got
    finally:
        printed = sys.stdout.getvalue()
        sys.stdout = saved_stdout
        os.dup2(saved_fd, 1)
        os.close(saved_fd)
        root.removeHandler(reports)
        tmp.seek(0)
        logged = "".join(line if line.endswith("\n") else line + "\n" for line in reports.lines)
        direct = tmp.read().decode("utf-8", "replace") + printed
        got.text = direct + logged
        tmp.close()
        sys.stdout.write(printed_by_kernel(direct))


# What TPU interpret mode prints itself (0.10.2 prints its race reports; both
# releases print a semaphore left non-zero at a kernel's exit).
_SEMAPHORE_LEFT = re.compile(r"^Semaphore \S+ has non-zero count for .* at kernel exit:")


def printed_by_kernel(text: str) -> str:
    """``text`` without the interpreter's own reports: a race report (its
    RACE_MARK line and the indented lines under it) and a semaphore left non-zero."""
    kept, in_report = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith(release.RACE_MARK):
            in_report = True
            continue
        if in_report and line[:1] in (" ", "\t"):
            continue
        in_report = False
        if not _SEMAPHORE_LEFT.match(line):
            kept.append(line)
    return "".join(kept)
