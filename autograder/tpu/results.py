"""TPU stage results in Gradescope's results.json: the test ``T1`` (not run on
a CPU grading; the timing, or why there is none, once merged), the
leaderboard row, and the versions in ``extra_data``. Pure data; no JAX."""
from __future__ import annotations

import copy

from ..feedback.results import test_entry
from ..spec import Speed
from ..speed.grade import curve_score

NUMBER = "T1"


def board_name(chip: str) -> str:
    return f"TPU {chip} time (ms)"


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
             for s in result.get("sizes", [])]
    fake = (device or {}).get("kind") == "fake"
    return {"status": result["status"], "fake": fake, "chip": (device or {}).get("chip", spec.chip),
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
    from ..feedback.render import render
    points = score(spec, result, solution_s) if result is not None else 0.0
    status = result["status"] if result is not None else "not-run"
    return test_entry(name=f"TPU timing ({spec.chip})", number=NUMBER, score=points, max_score=spec.tpu_points,
                      output=render("tpu.j2", fmt, tpu=view(spec, result, device, solution_s)),
                      output_format=fmt, visibility=spec.visibility,
                      # Tags are finding IDs, as on every other test.
                      tags=[status] if status in ("chip-reject", "chip-divergence", "wrong-result") else [],
                      extra_data={"tpu_status": status})


def merge(results: dict, spec: Speed, result: dict, device: dict, solution_s: float | None) -> dict:
    """A results.json with the TPU stage's outcome in place of what it said before."""
    doc = copy.deepcopy(results)
    tests = doc.get("tests", [])
    old = next((t for t in tests if t.get("number") == NUMBER), None)
    new = entry(spec, result, device, solution_s, doc.get("test_output_format") or
                (old or {}).get("output_format", "md"))
    doc["tests"] = [t for t in tests if t.get("number") != NUMBER] + [new]
    doc["score"] = round(float(doc.get("score", 0.0)) - float((old or {}).get("score", 0.0)) + new["score"], 4)
    board = [row for row in doc.get("leaderboard", []) if row.get("name") != board_name(spec.chip)]
    if result.get("status") == "timed" and result.get("seconds"):
        board.append({"name": board_name(spec.chip), "value": round(result["seconds"] * 1e3, 4), "order": "asc"})
    if board:
        doc["leaderboard"] = board
    doc.setdefault("extra_data", {})["tpu_stage"] = {
        "status": result.get("status"), "device": device, "seconds": result.get("seconds"),
        "solution_seconds": solution_s, "holds": list(result.get("holds", [])),
        "sizes": result.get("sizes", [])}
    return doc
