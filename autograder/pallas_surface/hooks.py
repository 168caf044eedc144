"""The interpreters' switches the probes turn: memory fills, the grid-point
recorder, the race flag, and what the interpreter prints.

Fills are read at run time: ``install_runtime_fills`` (called once, before
anything is traced) makes both interpreters take their "uninitialized" floats
from a host callback that reads the current fill, so the poisoning probe's runs
reuse the executable of the plain run instead of compiling one per fill. With
no fill set the callback returns exactly what the interpreter would (NaN).
Integers keep the interpreters' own values.

With more than one simulated core, each core's thread compiles its part of the
grid at run time (see ``release.THREAD_RUNNER``); ``install_thread_programs``
makes the threads share one executable per program, compiled with the
grader's options, so a two-core run compiles once, and a second run of the
same executable not at all.

The grid order is read at run time too (``install_runtime_grid_order``): TPU
interpret mode takes the seed that shuffles its parallel axes from its static
parameters, so each seed was a program of its own; the hook draws the same
permutations from a seed a host callback reads (``grid_order``), and the
grid-point recorder is one shared function that appends to the current run's
list. The grid-order probe's runs then share one executable per core count.
"""
from __future__ import annotations

import importlib
import io
import logging
import os
import sys
import tempfile
import threading
from contextlib import contextmanager
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from . import release

_FILL: list[float | None] = [None]     # the fill for floats, None: the interpreter's own
# The padding's own fill (None: the fill): both interpreters pad a partial block with
# one scalar they ask for with shape (), and start outputs and scratch from arrays of
# their whole shape, so a run can fill the padding and the memory a kernel writes apart.
_PAD_FILL: list[float | None] = [None]
_ORIGINAL: dict = {}


def _target(path: tuple[str, str]):
    return importlib.import_module(path[0]), path[1]


def _host_array(shape, dtype, default: float):
    """An array of the current fill, produced when the program runs (a scalar,
    what the interpreters pad partial blocks with, of the padding's fill)."""
    shape = tuple(int(d) for d in shape)

    def current():
        fill = _PAD_FILL[0] if not shape and _PAD_FILL[0] is not None else _FILL[0]
        return np.full(shape, default if fill is None else fill, dtype)
    return jax.pure_callback(current, jax.ShapeDtypeStruct(shape, dtype))


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
        if _FILL[0] is not None and jnp.issubdtype(dtype, jnp.floating):
            return _FILL[0]
        return orig_value(dtype, uninitialized_memory)

    for (mod, name), new, orig in (((generic_mod, generic_name), generic, orig_generic),
                                   ((array_mod, array_name), tpu_array, orig_array),
                                   ((value_mod, value_name), tpu_value, orig_value)):
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


def install() -> None:
    """Every run-time hook, once, before anything is traced."""
    install_runtime_fills()
    install_thread_programs()
    install_runtime_grid_order()


@contextmanager
def fill(value: float | None, padding: float | None = None):
    """Within: uninitialized floats (outputs, scratch, padding) read ``value``;
    with ``padding``, the padding of partial blocks reads that instead."""
    if (value is not None or padding is not None) and _target(release.GENERIC_FILL) not in _ORIGINAL:
        raise RuntimeError("hooks.install() must run before anything is traced")
    saved = _FILL[0], _PAD_FILL[0]
    _FILL[0] = None if value is None else float(value)
    _PAD_FILL[0] = None if padding is None else float(padding)
    try:
        yield
    finally:
        _FILL[0], _PAD_FILL[0] = saved


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
        try:
            self.lines.append(record.getMessage())
        except (TypeError, ValueError):   # a malformed log call is not the grader's error
            pass


@contextmanager
def capture():
    """What the interpreter reports during the block (race reports, semaphores
    left non-zero), from file descriptor 1, ``sys.stdout`` and logged warnings;
    it is still printed afterwards, as the student's output."""
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
        got.text = tmp.read().decode("utf-8", "replace") + printed + logged
        tmp.close()
        sys.stdout.write(got.text)
