"""The speed estimate against a real TPU v5e's device times: every chip point's
estimate and error, with the fitted, held-out and blind points apart, the fit
of the model's constants on the fitted points alone, and the Markdown table of
docs/speed-validation.md (``benchmarks/speed_validation.py``).

Roles (``benchmarks/chip/points.py``):
- ``fit``: microbenchmarks, each stressing one part of the chip; the model's
  constants (``speed.model.Fitted``) were fitted to these alone;
- ``heldout``: the five solutions, every clean corpus kernel, the matmul
  look-alikes and whole kernels in other styles, measured in chip call A: never
  used to set a constant, but the model's structure was revised after seeing
  them (they are not blind);
- ``blind``: 25 kernels and sizes written down before the model was revised and
  measured after (chip call C), looked at once, after the model was frozen.
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, fields, replace
from pathlib import Path

from autograder.speed import model

from . import estimates

REPO = Path(__file__).resolve().parent.parent.parent
DATA = REPO / "docs" / "chip-data"
MEASUREMENTS = (DATA / "callA" / "cc" / "points.json", DATA / "callC" / "points.json",
                DATA / "callK" / "points" / "points.json")
# "styles": issue 47's kernels (benchmarks/chip/styles.py), measured in chip call K, held out (the other
# half of them, written and split before either was measured, set constants as "fit" points).
ROLES = ("fit", "heldout", "blind", "styles")
HELD_OUT = ("heldout", "blind", "styles")


@dataclass(frozen=True)
class Row:
    point: dict
    measured_s: float
    estimate_s: float | None
    bound: str                     # the estimate's bound, or why there is none

    @property
    def error(self) -> float | None:
        return self.estimate_s / self.measured_s - 1 if self.estimate_s else None


def measured() -> dict[str, float]:
    out: dict[str, float] = {}
    for path in MEASUREMENTS:
        if path.is_file():
            out.update(estimates.measured(json.loads(path.read_text())))
    return out


def refusals() -> dict[str, str]:
    """Points the chip refused to compile: id -> its message's first line."""
    out = {}
    for path in (m for m in MEASUREMENTS if m.is_file()):
        for r in json.loads(path.read_text()):
            res = r.get("result") or {}
            if res.get("status") in ("refused", "compile-failed"):
                out[r["point"]["id"]] = res.get("message", "").splitlines()[0][:200]
    return out


# Held-out points a constant was later fitted to: they count as fit points from then on.
FITTED_TO = {"add/debug_prints@speed": "host_print_s"}


def rows(facts: dict[str, dict], fitted: model.Fitted = model.FITTED) -> list[Row]:
    times = measured()
    out = []
    for p in estimates.pool():
        if p["id"] in FITTED_TO:
            p = {**p, "role": "fit"}
        if p["id"] in times and p["role"] in ROLES:
            s, bound = estimates.estimate(facts[p["id"]], fitted)
            out.append(Row(p, times[p["id"]], s, bound))
    return out


@dataclass(frozen=True)
class Summary:
    points: int
    median: float
    worst: float
    without: int                   # points with no estimate


def summary(rs: list[Row], role: str | tuple[str, ...]) -> Summary:
    roles = (role,) if isinstance(role, str) else role
    errors = [abs(r.error) for r in rs if r.point["role"] in roles and r.error is not None]
    without = sum(1 for r in rs if r.point["role"] in roles and r.error is None)
    return Summary(len(errors), statistics.median(errors) if errors else 0.0, max(errors, default=0.0), without)


SHARES = ("hbm_efficiency", "mxu_overlap")      # constants that are shares (at most 1)


def fit(facts: dict[str, dict], start: model.Fitted = model.FITTED, rounds: int = 8) -> model.Fitted:
    """The constants that minimise the mean |log(estimate / measured)| over the fit points only
    (coordinate search: each constant scaled in turn while the loss falls)."""
    def loss(f: model.Fitted) -> float:
        errs = [r.error for r in rows(facts, f) if r.point["role"] == "fit" and r.error is not None]
        return statistics.fmean(abs(math.log1p(e)) for e in errs)
    best, cur = start, loss(start)
    for _ in range(rounds):
        for name in (f.name for f in fields(model.Fitted)):
            now = getattr(best, name)
            # A constant at 0 (a cost not yet seen) is tried at a few magnitudes, then scaled.
            tries = [now * m for m in (0.5, 0.7, 0.85, 0.93, 1.07, 1.15, 1.3, 1.6, 2.0)] if now else \
                ([0.25, 0.5, 0.75] if name in SHARES else [25.0, 100.0, 400.0, 1600.0])
            for value in tries:
                cand = replace(best, **{name: value})
                if any(getattr(cand, n) > 1 for n in SHARES):
                    continue
                got = loss(cand)
                if got < cur - 1e-6:
                    best, cur = cand, got
    return best


def markdown(rs: list[Row]) -> str:
    head = ("| point | role | measured (ms) | estimated (ms) | error | bound |\n"
            "|---|---|---|---|---|---|\n")
    body = "".join(
        f"| {r.point['id']} | {r.point['role']} | {r.measured_s * 1e3:.4g} | "
        f"{(r.estimate_s or 0) * 1e3:.4g} | {f'{r.error:+.1%}' if r.error is not None else 'no estimate'} | "
        f"{r.bound if r.estimate_s else r.bound[:120]} |\n"
        for role in ROLES for r in rs if r.point["role"] == role)
    return head + body
