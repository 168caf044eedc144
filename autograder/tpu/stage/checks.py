"""Is a timed output right? The checks of the TPU stage's timed calls
(``kernel``): element by element against a reference, its error's norm against
the output's, and a row digest (a secret random projection computed on the
device) against the reference's projection, each a slice at a time where whole
arrays would cost the host seconds at matmul's 8192 x 8192."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...grading.judge.compare import mismatches
from ...spec import Tolerance
from ..chip.device import projection

# A digest's error is the output's error projected on a secret Gaussian vector:
# normal, with the error's norm as its standard deviation. Six of them: a false
# alarm once in 5e8 rows.
SIGMAS = 6.0


@dataclass(frozen=True)
class Expected:
    """An output the chip may give: a reference and the tolerance around it."""
    reference: np.ndarray
    tolerance: Tolerance
    what: str


def _rows(x: np.ndarray) -> np.ndarray:
    return x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)


def digest_bound(ref: np.ndarray, key: int, tol: Tolerance, red: int, numerics_bound: float) -> np.ndarray:
    """How far each row's digest may be from the reference's projection.

    A row's digest error is its error vector times a secret Gaussian vector:
    normal, with the error's norm as its standard deviation, so the bound is
    SIGMAS times the largest norm a right row's error may have: what the
    element tolerance allows, and no more than ``numerics_bound`` of the row's
    norm (the element tolerance alone, its atol grown with the reduction, can
    exceed a whole row: at flash attention's speed size it let an all-zeros
    output pass), plus the element atol once and float32 rounding of the
    device's projection."""
    flat = _rows(ref)
    n = flat.shape[-1]
    weights = np.abs(projection(key, n))
    step = max(1, CHUNK // max(n, 1))       # rows at a time: whole-array temporaries cost seconds at 8192^2
    parts = []
    for r0 in range(0, flat.shape[0], step):
        size = np.abs(flat[r0:r0 + step])
        element = tol.atol * math.sqrt(max(red, 1)) + tol.rtol * size
        norm = np.minimum(np.linalg.norm(element, axis=1), numerics_bound * np.linalg.norm(size, axis=1))
        parts.append(SIGMAS * (norm + tol.atol * math.sqrt(n)) + 2.0 ** -20 * math.sqrt(n) * (size @ weights))
    return np.concatenate(parts) if parts else np.zeros(0)


def digest_ok(digest: np.ndarray, e: Expected, key: int, red: int, numerics_bound: float) -> bool:
    """Is the digested output that of an output close to ``e``?"""
    flat = _rows(e.reference)
    bound = digest_bound(e.reference, key, e.tolerance, red, numerics_bound)
    return bool(np.all(np.abs(np.asarray(digest, np.float64) - flat @ projection(key, flat.shape[-1])) <= bound))


# Elements per slice of ``within`` and ``norms``: 16 MB of float64 a temporary.
CHUNK = 1 << 21


def within(out: np.ndarray, ref: np.ndarray, tol: Tolerance, red: int) -> bool:
    """``compare(...).ok`` without its statistics, a slice at a time: at
    matmul's 8192 x 8192 compare's whole-array temporaries took about 10 s of
    the v5e host per kernel (chip call G)."""
    if np.shape(out) != np.shape(ref):
        return False
    o, r = np.asarray(out).reshape(-1), np.asarray(ref).reshape(-1)
    return not any(mismatches(o[s:s + CHUNK], r[s:s + CHUNK], tol, red).any() for s in range(0, o.size, CHUNK))


def norms(out: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    """(|out - ref|, |ref|), Euclidean over every element, a slice at a time."""
    o, r = np.asarray(out).reshape(-1), np.asarray(ref).reshape(-1)
    err = total = 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        for s in range(0, o.size, CHUNK):
            r64 = r[s:s + CHUNK].astype(np.float64)
            d = o[s:s + CHUNK].astype(np.float64) - r64
            err += float(d @ d)
            total += float(r64 @ r64)
    return math.sqrt(err), math.sqrt(total)


def close(out: np.ndarray, e: Expected, red: int, numerics_bound: float) -> bool:
    """Element by element within the tolerance, and the error's norm within
    ``numerics_bound`` of the output's (the element tolerance alone can pass
    an output that is mostly error at a large reduction)."""
    if not within(out, e.reference, e.tolerance, red):
        return False
    floor = e.tolerance.atol * math.sqrt(e.reference.size)
    err, ref = norms(out, e.reference)
    return bool(err <= numerics_bound * ref + floor)   # NaN: False


