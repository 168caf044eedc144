"""The interpreters' switches the probes turn: memory fills, the grid-point
recorder, the race flag, and what the interpreter prints.

Fills are read at run time: ``install_runtime_fills`` (called once, before
anything is traced) makes both interpreters take their "uninitialized" floats
from a host callback that reads the current fill, so the poisoning probe's runs
reuse the executable of the plain run instead of compiling one per fill. With
no fill set the callback returns exactly what the interpreter would (NaN).
Integers keep the interpreters' own values.
"""
from __future__ import annotations

import importlib
import io
import os
import sys
import tempfile
from contextlib import contextmanager
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from . import release

_FILL: list[float | None] = [None]     # the fill for floats, None: the interpreter's own
_ORIGINAL: dict = {}


def _target(path: tuple[str, str]):
    return importlib.import_module(path[0]), path[1]


def _host_array(shape, dtype, default: float):
    """An array of the current fill, produced when the program runs."""
    shape = tuple(int(d) for d in shape)

    def current():
        return np.full(shape, default if _FILL[0] is None else _FILL[0], dtype)
    return jax.pure_callback(current, jax.ShapeDtypeStruct(shape, dtype))


def install_runtime_fills() -> None:
    """Patch the interpreters' sources of uninitialized values (idempotent)."""
    if _ORIGINAL:
        return
    generic_mod, generic_name = _target(release.GENERIC_FILL)
    array_mod, array_name = _target(release.TPU_FILL_ARRAY)
    value_mod, value_name = _target(release.TPU_FILL_VALUE)
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


@contextmanager
def fill(value: float | None):
    """Within: uninitialized floats (outputs, scratch, padding) read ``value``."""
    if value is not None and not _ORIGINAL:
        raise RuntimeError("install_runtime_fills() must run before anything is traced")
    saved, _FILL[0] = _FILL[0], (None if value is None else float(value))
    try:
        yield
    finally:
        _FILL[0] = saved


def order_recorder(order: list) -> Callable:
    """A grid_point_recorder: TPU interpret mode calls it (in a host callback) as
    ``recorder(token, grid_point, core_id)`` at each grid point; it must return the token."""
    def record(token, grid_point, core_id):
        order.append([[int(g) for g in grid_point], int(core_id)])
        return token
    return record


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


@contextmanager
def capture():
    """What the interpreter prints during the block (race reports, semaphores
    left non-zero), from file descriptor 1 and ``sys.stdout``; it is still
    printed afterwards, as the student's output."""
    got = Captured()
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
        tmp.seek(0)
        got.text = tmp.read().decode("utf-8", "replace") + printed
        tmp.close()
        sys.stdout.write(got.text)
