"""The float64 references of a run's timed calls, shared by its kernels: call i at
a size gets the same secret inputs in every kernel of one run, so its reference
is computed once a run (at matmul's 8192^3, 6-8 s each on a v5e host), not once
a kernel. A worker keeps them in memory; with a folder (``--fresh-process``:
every kernel in a process of its own) they are kept there too, for the run's
next processes."""
from __future__ import annotations

import hashlib
import os
import shutil
from collections import OrderedDict
from pathlib import Path
from typing import Callable

import numpy as np


class References:
    """The float64 references of the timed calls' inputs, by (size, call,
    rounded), kept for every kernel of one run (same secret): call i's inputs
    are the same in every kernel. Least recently used first out beyond
    ``max_bytes`` (a 8192x8192 float64 reference is 512 MiB). With ``folder``
    (the run's own, made private by the parent) each is also written there, and
    read back by a later process of the same run, while the disk has room."""

    def __init__(self, max_bytes: int = 4 << 30, folder: Path | None = None) -> None:
        self.max_bytes, self.folder = max_bytes, folder
        self.hits = self.misses = self.disk_hits = 0
        self._kept: OrderedDict[tuple, np.ndarray] = OrderedDict()

    def _file(self, key: tuple) -> Path | None:
        if self.folder is None:
            return None
        return self.folder / (hashlib.sha256(repr(key).encode()).hexdigest()[:32] + ".npy")

    def _read(self, key: tuple) -> np.ndarray | None:
        path = self._file(key)
        if path is None or not path.is_file():
            return None
        try:
            return np.load(path, allow_pickle=False)
        except (OSError, ValueError):       # half written by a process killed meanwhile: made again
            return None

    def _write(self, key: tuple, value: np.ndarray) -> None:
        path = self._file(key)
        if path is None or not path.parent.is_dir() or shutil.disk_usage(path.parent).free < 4 * value.nbytes:
            return
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as f:
                np.save(f, value, allow_pickle=False)
            tmp.replace(path)
        except OSError:
            tmp.unlink(missing_ok=True)

    def get(self, key: tuple, make: Callable[[], np.ndarray]) -> np.ndarray:
        if key in self._kept:
            self.hits += 1
            self._kept.move_to_end(key)
            return self._kept[key]
        value = self._read(key)
        if value is not None:
            self.disk_hits += 1
        else:
            self.misses += 1
            value = np.asarray(make(), np.float64)
            self._write(key, value)
        self._kept[key] = value
        while len(self._kept) > 1 and sum(v.nbytes for v in self._kept.values()) > self.max_bytes:
            self._kept.popitem(last=False)
        return value
