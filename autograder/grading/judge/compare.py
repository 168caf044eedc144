"""Comparison of a kernel's output with the float64 reference (numpy only).

NaN never matches anything. The absolute tolerance grows with the square root
of the reduction length, as the rounding error of a sum of that many terms does.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...spec import Tolerance

MAX_INDICES = 5


@dataclass(frozen=True)
class Comparison:
    ok: bool
    verdict: str              # "ok", "numerics" or "wrong-result"
    max_abs_error: float
    max_rel_error: float
    relative_to_output: float  # max abs error / max |reference|: how big the error is
    mismatches: int
    total: int
    first_mismatches: tuple[tuple[int, ...], ...]
    nonfinite: int            # NaN/Inf in the output where the reference is finite
    atol: float
    rtol: float
    finite_relative: float = 0.0   # largest error among finite outputs / max |reference|

    def evidence(self) -> dict:
        return {
            "max_abs_error": _num(self.max_abs_error), "max_rel_error": _num(self.max_rel_error),
            "relative_to_output": _num(self.relative_to_output), "mismatches": self.mismatches,
            "total": self.total, "first_mismatches": [list(i) for i in self.first_mismatches],
            "nonfinite": self.nonfinite, "atol": self.atol, "rtol": self.rtol,
            "finite_relative_to_output": _num(self.finite_relative),
        }


def _num(x: float) -> float | str:
    """JSON has no NaN/Inf: keep them readable as strings."""
    return x if math.isfinite(x) else str(x)


def _errors(out: np.ndarray, ref: np.ndarray, tol: Tolerance, reduction_length: int):
    out64 = out.astype(np.float64)
    ref64 = ref.astype(np.float64)
    atol = tol.atol * math.sqrt(max(reduction_length, 1))
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(out64 - ref64)
        allowed = atol + tol.rtol * np.abs(ref64)
        good = err <= allowed               # False wherever err is NaN
    return out64, ref64, atol, err, ~good


def mismatches(out: np.ndarray, ref: np.ndarray, tol: Tolerance, reduction_length: int) -> np.ndarray:
    """The elements ``compare`` counts as wrong (a mask of the output's shape)."""
    return _errors(out, ref, tol, reduction_length)[4]


def compare(out: np.ndarray, ref: np.ndarray, tol: Tolerance, reduction_length: int,
            numerics_bound: float) -> Comparison:
    out64, ref64, atol, err, bad = _errors(out, ref, tol, reduction_length)
    mismatches = int(bad.sum())
    finite_ref = np.isfinite(ref64)
    nonfinite = int((~np.isfinite(out64) & finite_ref).sum())
    finite_err = np.where(np.isfinite(err), err, np.inf)
    max_abs = float(finite_err.max()) if err.size else 0.0
    scale = np.maximum(np.abs(ref64), atol)
    max_rel = float((finite_err / scale).max()) if err.size else 0.0
    ref_mag = float(np.abs(ref64[finite_ref]).max()) if finite_ref.any() else 0.0
    relative = max_abs / ref_mag if ref_mag > 0 else (0.0 if max_abs == 0 else math.inf)
    first = tuple(tuple(int(i) for i in idx) for idx in np.argwhere(bad)[:MAX_INDICES])
    finite = np.isfinite(err)
    finite_max = float(err[finite].max()) if finite.any() else 0.0
    finite_relative = finite_max / ref_mag if ref_mag > 0 else (0.0 if finite_max == 0 else math.inf)
    if mismatches == 0:
        verdict = "ok"
    elif nonfinite and finite_relative >= numerics_bound:
        # NaN beside finite outputs that are far off: the finite part shows a logic
        # error, and the NaN is incidental (e.g. padding rows pulled into a wrong-axis
        # reduction), so the NaN does not make it a precision problem.
        verdict = "wrong-result"
    elif nonfinite or relative < numerics_bound:
        # Overflow/NaN with the finite outputs right, or an error small next to the
        # output's magnitude: floating point, not logic. (Probes reclassify NaN that
        # comes from unwritten memory.)
        verdict = "numerics"
    else:
        verdict = "wrong-result"
    return Comparison(mismatches == 0, verdict, max_abs, max_rel, relative, mismatches,
                      int(err.size), first, nonfinite, atol, tol.rtol, finite_relative)


def scaled_rows(out: np.ndarray, ref: np.ndarray, tol: Tolerance, reduction_length: int,
                min_width: int = 4) -> dict | None:
    """Every wrong output row (along the last axis) is the right row times one number:
    {rows, of, low, high} (how many rows, of how many, and the range of the numbers),
    else None. What such a row is made of is right and only its scale is not: a
    normalising sum (a softmax's, an online softmax's running sum) or a scale factor.
    Each scaled row must match its output within the comparison's own tolerance, so
    a row that is wrong in any other way rules it out; rows narrower than
    ``min_width`` say nothing (any short row is some multiple of another)."""
    if out.shape != ref.shape or out.ndim < 2 or out.shape[-1] < min_width:
        return None
    out64, ref64, atol, _err, bad = _errors(out, ref, tol, reduction_length)
    width = out.shape[-1]
    wrong = bad.reshape(-1, width).any(axis=1)
    o, r = out64.reshape(-1, width)[wrong], ref64.reshape(-1, width)[wrong]
    if not wrong.any() or not (np.isfinite(o).all() and np.isfinite(r).all()):
        return None
    norms = (r * r).sum(axis=1)
    if (norms == 0).any():
        return None
    factor = (o * r).sum(axis=1) / norms
    with np.errstate(invalid="ignore", over="ignore"):
        fits = np.abs(o - factor[:, None] * r) <= atol + tol.rtol * np.abs(o)
    if not fits.all():
        return None
    return {"rows": int(wrong.sum()), "of": int(wrong.size), "low": float(factor.min()),
            "high": float(factor.max())}


def mixed_axes(out: np.ndarray, nudged_out: np.ndarray, ref: np.ndarray, nudged_ref: np.ndarray) -> dict | None:
    """The output axes along which the kernel's outputs moved when one input element
    changed (``draws.nudge``) where the reference's stayed put: {axes, moved, span,
    ref_moved, ref_axes, shape}, else None. An output that moves with an element the
    reference keeps it apart from is computed from it: a reduction along the wrong
    axis mixes rows the reference keeps apart. Equal NaNs (memory never written, the
    same fill both times) have not moved. Evidence for a fix, never a charge."""
    shapes = {out.shape, nudged_out.shape, ref.shape, nudged_ref.shape}
    if len(shapes) != 1 or out.ndim < 1:
        return None
    moved = _moved(np.asarray(out, dtype=np.float64), np.asarray(nudged_out, dtype=np.float64))
    ref_moved = _moved(ref, nudged_ref)
    extra = moved & ~ref_moved
    if not extra.any() or not ref_moved.any():
        return None
    ref_at = [np.flatnonzero(ref_moved.any(axis=tuple(a for a in range(out.ndim) if a != d)))
              for d in range(out.ndim)]
    extra_at = [np.flatnonzero(extra.any(axis=tuple(a for a in range(out.ndim) if a != d)))
                for d in range(out.ndim)]
    axes = [d for d in range(out.ndim) if np.setdiff1d(extra_at[d], ref_at[d]).size]
    if not axes:
        return None
    found = {"axes": axes, "moved": int(extra.sum()), "shape": list(out.shape),
             "span": [[int(extra_at[d].min()), int(extra_at[d].max())] for d in axes],
             "ref_moved": int(ref_moved.sum()), "ref_axes": [d for d in range(out.ndim) if ref_at[d].size > 1],
             "ref_span": [[int(a.min()), int(a.max())] for a in ref_at]}
    if extra.sum() == 1 == ref_moved.sum():
        # One output moved where the reference moves one other: the value landed elsewhere
        # (a copy or an index offset; "also": besides where it belongs), not mixed in.
        found["moved_to"] = [int(i) for i in np.argwhere(extra)[0]]
        found["ref_to"] = [int(i) for i in np.argwhere(ref_moved)[0]]
        found["also"] = bool(moved[tuple(found["ref_to"])])
    return found


def _moved(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return ~((a == b) | (np.isnan(a) & np.isnan(b)))


# How a kernel's number may be made from a size of the case: (written as, from the size).
FORMS = (("1/√{}", lambda n: n ** -0.5), ("√{}", lambda n: n ** 0.5), ("1/{}", lambda n: 1.0 / n))


def constant_fit(out: np.ndarray, reference_fn, args: list, arrays: list[int], tol: Tolerance,
                 reduction_length: int, constants, dims: dict[str, int], names: list[str]) -> dict | None:
    """A number the kernel computes with that is made from one size of the case (0.051 =
    1/√S, S = 384) where the reference makes it from another: the reference, given one
    input scaled by the ratio of the two, reproduces the kernel's output within the
    comparison's tolerance ({value, form, dim, size, meant, meant_value, meant_dim, input});
    else one applied once more than the formula does (0.125 = 1/√D twice: the reference,
    given one input scaled by the number itself, reproduces it; {value, form, dim, size,
    twice, input}); else None. Evidence for a fix, never a charge."""
    if out is None or not np.isfinite(np.asarray(out, dtype=np.float64)).all():
        return None

    def scaled_fits(ratio: float) -> str | None:     # the input whose scaling by ratio gives the kernel's output
        for k, i in enumerate(arrays):
            scaled = list(args)
            scaled[i] = np.asarray(args[i], dtype=np.float64) * ratio
            ref = np.asarray(reference_fn(*scaled), dtype=np.float64)
            if ref.shape == out.shape and not mismatches(out, ref, tol, reduction_length).any():
                return names[k]
        return None

    for value in constants:
        for form, fn in FORMS:
            made = [d for d, n in dims.items() if n > 0 and abs(fn(n) - value) <= 1e-6 * abs(value)]
            for dim, other in ((d, o) for d in made for o, n in dims.items() if o != d and n > 0
                               and abs(fn(n) - value) > 1e-3 * abs(value)):
                if (found := scaled_fits(value / fn(dims[other]))) is not None:
                    return {"value": value, "form": form.format(dim), "dim": dim, "size": dims[dim],
                            "meant": form.format(other), "meant_value": fn(dims[other]),
                            "meant_dim": other, "input": found}
            if made and (found := scaled_fits(value)) is not None:
                return {"value": value, "form": form.format(made[0]), "dim": made[0], "size": dims[made[0]],
                        "twice": True, "input": found}
    return None


def mistake_fit(out: np.ndarray, mistakes, args: list, blocks: dict, tol: Tolerance,
                reduction_length: int, ref: np.ndarray) -> dict | None:
    """The first of the instructor's declared mistakes (``spec.mistakes``) whose result the
    kernel's output is, within the comparison's tolerance: {name, fix, at}, else None. A
    mistake that computes the reference itself on these inputs says nothing (it would name
    any wrong kernel), nor does one that raises (a tiled one, say, given no block shapes).
    Evidence for a fix, never a charge."""
    if out is None or not np.isfinite(np.asarray(out, dtype=np.float64)).all():
        return None
    for m in mistakes:
        try:
            got = np.asarray(m([np.asarray(a, dtype=np.float64) if isinstance(a, np.ndarray) else a for a in args],
                               blocks), dtype=np.float64)
        except Exception:   # noqa: BLE001 (the instructor's mistake does not apply here)
            continue
        if got.shape != out.shape or not np.isfinite(got).all() \
                or not mismatches(got, ref, tol, reduction_length).any():
            continue        # (not this case's mistake, or no mistake on these inputs: it is the reference)
        if not mismatches(out, got, tol, reduction_length).any():
            return {"name": m.name, "fix": m.fix, "at": m.at or ""}
    return None
