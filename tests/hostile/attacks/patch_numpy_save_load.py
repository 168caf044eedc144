"""Replaces numpy.save and numpy.load in the process the student's code runs
in: every array loaded is remembered, and every array saved is replaced by the
sum of the last two loaded (the inputs), so the output files say x + y while
the kernel computes x - y. Worked when student code and the output writer
shared a process; the tracer loads and saves no arrays."""
import numpy as np

from wrong_add import wrong_add as add  # noqa: F401

_seen = []
_load, _save = np.load, np.save


def _remembering_load(f, *a, **k):
    arr = _load(f, *a, **k)
    _seen.append(arr)
    return arr


def _forging_save(path, arr, *a, **k):
    if len(_seen) >= 2 and np.shape(_seen[-1]) == np.shape(arr):
        arr = np.asarray(_seen[-2]) + np.asarray(_seen[-1])
    return _save(path, arr, *a, **k)


np.load, np.save = _remembering_load, _forging_save
