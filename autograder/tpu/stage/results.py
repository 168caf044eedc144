"""The TPU stage's results merged into a results.json: the test ``T1``
(``feedback.tpu_timing``; a section of the top-level output when it is unscored
and shown now), the leaderboard row, and the versions in ``extra_data``. Pure
data; no JAX."""
from __future__ import annotations

import copy

from ...feedback.results_format import cap, listed_as_test
from ...feedback.tpu_timing import NUMBER, board_name, entry, is_board_row, section
from ...spec import Speed


def merge(results: dict, spec: Speed, result: dict, device: dict, solution_s: float | None) -> dict:
    """A results.json with the TPU stage's outcome in place of what it said before."""
    doc = copy.deepcopy(results)
    tests = doc.get("tests", [])
    old = next((t for t in tests if t.get("number") == NUMBER), None)
    doc["tests"] = [t for t in tests if t.get("number") != NUMBER]
    if listed_as_test(spec.tpu_points, spec.visibility):
        new = entry(spec, result, device, solution_s, doc.get("test_output_format") or
                    (old or {}).get("output_format", "md"))
        doc["tests"].append(new)
    else:
        # Unscored and shown now: a section of the top-level output; a second merge replaces it.
        new = {"score": 0.0}
        before = doc.setdefault("extra_data", {}).setdefault("output_before_tpu", doc.get("output", ""))
        text = section(spec, result, device, solution_s, doc.get("output_format", "md"))
        doc["output"] = cap(before.rstrip("\n") + "\n\n" + text)
    doc["score"] = round(float(doc.get("score", 0.0)) - float((old or {}).get("score", 0.0)) + new["score"], 4)
    board = [row for row in doc.get("leaderboard", []) if not is_board_row(str(row.get("name", "")))]
    if result.get("status") == "timed" and result.get("seconds"):
        name = board_name(device.get("chip") or spec.chip, device.get("kind", "tpu"))
        board.append({"name": name, "value": round(result["seconds"] * 1e3, 4), "order": "asc"})
    if board:
        doc["leaderboard"] = board
    doc.setdefault("extra_data", {})["tpu_stage"] = {
        "status": result.get("status"), "device": device, "seconds": result.get("seconds"),
        "solution_seconds": solution_s, "holds": list(result.get("holds", [])),
        "sizes": result.get("sizes", [])}
    return doc
