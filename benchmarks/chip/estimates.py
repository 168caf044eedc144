"""The speed estimate of every chip point, computed on CPU as a grading computes it:
the point's kernel traced under the TPU target, its schedule counted by the grader's
own analysis (``pallas_surface.cost``), then timed by the model (``speed.model``).

The schedule facts are cached per point (``facts``: slow, needs JAX); the model runs
on them in milliseconds, so the constants can be fitted over and over.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from . import points as chip_points

REPO = Path(__file__).resolve().parent.parent.parent


def _source_hash(p: dict) -> str:
    src = REPO / (p.get("file") or "benchmarks/chip/kernels.py")
    cost = REPO / "autograder" / "pallas_surface" / "static"
    h = hashlib.sha256(src.read_bytes())
    if not p.get("file"):
        h.update((REPO / "benchmarks" / "chip" / "styles.py").read_bytes())
    for name in ("cost.py", "stepwork.py", "primcost.py", "analysis.py", "facts.py"):
        h.update((cost / name).read_bytes())
    h.update(json.dumps(p, sort_keys=True).encode())
    return h.hexdigest()[:16]


def facts(p: dict) -> dict:
    """The raw schedule facts of one point (needs JAX)."""
    import jax
    import jax.numpy as jnp

    from autograder.pallas_surface.rungs import rung
    from autograder.pallas_surface.static import cost

    from . import jobs
    fn, inputs = jobs._point_function(p)
    args, static = [], []
    for i, item in enumerate(inputs):
        if isinstance(item, dict):
            args.append(float(item["float"]))
            static.append(i)
        else:
            args.append(jax.ShapeDtypeStruct(tuple(item[0]), jnp.dtype(item[1])))
    from autograder.pallas_surface.program import rebuild, schema, serial
    traced = rung.trace(fn, args, static)          # as the tracer traces a submission
    # As a grading does: the checked program, rebuilt (pl.kernel's mpmd_map becomes the pallas_call it lowers to).
    arrays = [a for i, a in enumerate(args) if i not in static]
    doc = schema.loads(json.dumps(serial.encode(traced, set())).encode())
    rebuilt = rung.trace(rebuild.load(doc).function(), arrays)
    return cost.speed_facts(rebuilt, "v5e", arrays)


def all_facts(pts: list[dict], cache: Path) -> dict[str, dict]:
    """Every point's facts, from ``cache`` where the point and the analysis are unchanged."""
    known = json.loads(cache.read_text()) if cache.is_file() else {}
    out = {}
    for p in pts:
        key = _source_hash(p)
        if key not in known:
            try:
                known[key] = {"facts": facts(p)}
            except Exception as e:  # noqa: BLE001 - a point the analysis cannot take: said in the table
                known[key] = {"error": f"{type(e).__name__}: {e}"[:500]}
            tmp = cache.with_suffix(".tmp")       # a run stopped mid-write keeps the last whole cache
            tmp.write_text(json.dumps(known))
            tmp.replace(cache)
        out[p["id"]] = known[key]
    return out


_DECODED: dict[int, tuple[dict, object]] = {}


def _schedule(raw: dict):
    """The point's facts decoded once (a fit estimates every point thousands of times)."""
    from autograder.pallas_surface.static.facts import decode
    hit = _DECODED.get(id(raw))
    if hit is None or hit[0] is not raw:
        hit = _DECODED[id(raw)] = (raw, decode("speed", raw["facts"]))
    return hit[1]


def estimate(raw: dict, fitted=None):
    """(seconds, bound) or (None, why) for one point's facts."""
    from autograder.speed import model
    if "error" in raw:
        return None, raw["error"]
    try:
        e = model.estimate(_schedule(raw), fitted or model.FITTED)
    except model.NoEstimate as e:
        return None, str(e)
    return e.seconds, e.bound


def measured(rows: list[dict]) -> dict[str, float]:
    """Point id -> median device seconds, from a points.json of the chip check."""
    import statistics
    out = {}
    for r in rows:
        times = (r.get("result") or {}).get("device_s") or []
        if times:
            out[r["point"]["id"]] = statistics.median(times)
    return out


def pool() -> list[dict]:
    return (chip_points.all_points() + chip_points.fit2_points() + chip_points.blind_points()
            + chip_points.style_points_47())
