"""The TPU timing test ``T1`` in results.json: "not run" on a CPU grading, and
the TPU stage's timing (or why there is none) once merged; its leaderboard
row's name. Pure data; no JAX."""
from __future__ import annotations

from ..spec import Speed
from ..speed.grade import curve_score
from .render import render
from .results_format import test_entry

NUMBER = "T1"


def board_name(chip: str, kind: str = "tpu") -> str:
    """The leaderboard row of a time measured on ``chip`` (by a device of ``kind``)."""
    if kind in ("cpu", "gpu"):
        return f"{kind.upper()} stand-in time, not a TPU measurement (ms)"
    return f"TPU {chip} time (ms)"


def is_board_row(name: str) -> bool:
    """Is this leaderboard row the TPU stage's (whichever device measured it)?"""
    return (name.startswith("TPU ") and name.endswith(" time (ms)")) or "not a TPU measurement" in name


def _chip(spec: Speed, device: dict | None) -> str:
    """The chip that measured (the spec's until something has)."""
    return (device or {}).get("chip") or spec.chip


def score(spec: Speed, result: dict, solution_s: float | None) -> float:
    """The curve's points for a timed (not held) result; nothing otherwise."""
    seconds = result.get("seconds")
    if result.get("status") != "timed" or not seconds or not solution_s:
        return 0.0
    return curve_score(spec, spec.tpu_points, solution_s / seconds)


def view(spec: Speed, result: dict | None, device: dict | None, solution_s: float | None) -> dict:
    """Plain data for ``tpu.j2`` (``result`` None: the CPU grading's "not run")."""
    if result is None:
        return {"status": "not-run", "chip": spec.chip}
    seconds = result.get("seconds")
    lines = [f"{s['size']}: median {s['median_s'] * 1e3:.4f} ms over {s['calls']} calls (relative standard "
             f"error {s['rse']:.2%}, {s['stopped']}); compiled in {s['compile_s']:.2f} s"
             + (f"; wall clock: {s['clock_note']}" if s.get("clock_note") else "")
             for s in result.get("sizes", [])]
    kind = (device or {}).get("kind", "tpu")
    return {"status": result["status"], "fake": kind == "fake", "stand_in": kind in ("cpu", "gpu"),
            "label": (device or {}).get("label", ""), "chip_note": (device or {}).get("chip_note", ""),
            "chip": _chip(spec, device),
            "jax": (device or {}).get("jax", "?"), "libtpu": (device or {}).get("libtpu", "?"),
            "ms": f"{seconds * 1e3:.4f}" if seconds else "?",
            "solution_ms": f"{solution_s * 1e3:.4f}" if solution_s else "",
            "relative": f"{solution_s / seconds:.2f}" if solution_s and seconds else "",
            "size_lines": lines, "holds": list(result.get("holds", [])),
            "wall": any(s.get("source") == "wall" for s in result.get("sizes", [])),
            "message": result.get("message", ""),
            "evidence": sorted((k, str(v)) for k, v in (result.get("evidence") or {}).items())}


def entry(spec: Speed, result: dict | None, device: dict | None, solution_s: float | None,
          fmt: str = "md") -> dict:
    points = score(spec, result, solution_s) if result is not None else 0.0
    status = result["status"] if result is not None else "not-run"
    # Not run yet: said in the name too (Gradescope shows it red, 0 of the points waiting on it).
    name = f"TPU timing ({_chip(spec, device)})" + (": not run yet" if result is None else "")
    return test_entry(name=name, number=NUMBER, score=points,
                      max_score=spec.tpu_points,
                      output=render("tpu.j2", fmt, tpu=view(spec, result, device, solution_s)),
                      output_format=fmt, visibility=spec.visibility,
                      # Tags are finding IDs, as on every other test.
                      tags=[status] if status in ("chip-reject", "chip-divergence", "wrong-result") else [],
                      extra_data={"tpu_status": status})


def section(spec: Speed, result: dict, device: dict | None, solution_s: float | None,
            fmt: str = "md") -> str:
    """An unscored timing, for the top-level output: a heading and what ``T1``
    would have said (``merge`` puts it there instead of a 0/0 test)."""
    return render("timing.j2", fmt, name=f"TPU timing ({_chip(spec, device)})",
                  tpu=view(spec, result, device, solution_s))
