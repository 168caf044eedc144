"""What a finding on a secret case carries: only words and coarse values the
grader chose (pure data; no JAX).

A secret case's shapes, seed and data are never shown, and a submission that
knows this can still try to spell them out through what its failure looks
like: a function name in a traceback frame, an exception class it makes at
trace time, an exit status (``os._exit(M % 256)``), the share of wrong outputs
to 0.1 %, the words of an upstream error (which quote shapes), a time limit
scaled by its grid. So every finding on a secret case is rewritten here,
before scoring and rendering, to what the grader chooses to say:

- its message: the finding's title in the grader's words, with a band;
- an exception: that one was raised, never which (a class chosen from a
  secret dimension among even a few shown names spells bits of it); no
  traceback frames (an empty list), no exception text;
- no exit status, no captured output;
- the share of wrong (or non-finite) outputs and the error's size next to the
  output as coarse bands (``share_band``, ``error_band``), a time limit as the
  next of ``LIMIT_BANDS``;
- of every other fact, only the grader's own vocabulary (``KEPT``): which
  check, which rung, which switch, which fill, which operand's index map
  crosses its axes (``probes.static``); every other value is withheld
  (kept as None, so a template that reads it shows that it is withheld).
A rendered secret test therefore depends on the submission only through the
finding's ID and these few bands.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...findings import Finding
from ...spec import Assignment

# What a secret case's exception is called, whatever was raised (trace, run, a probe run).
RAISED = "an exception"
LIMIT_BANDS = (10, 30, 60, 120, 300, 600, 1200, 2400)
# Facts whose values are the grader's own words or switches (never the submission's).
KEPT = frozenset({"problem", "phase", "memory_mb", "disk_mb", "not_run", "reason", "rule", "rule_id",
                  "test_rung", "variant", "seed", "cores", "mode", "mode_passing", "mode_failing", "switch",
                  "behaviour", "interpret_params", "fills_passing", "fills_failing", "own_case", "static",
                  "kind", "stops_tpu_interpret", "status", "rerun_rung", "stress", "type", "limit_s",
                  "mismatch_text", "nonfinite", "relative_to_output", "same_bug_as",
                  # The operand whose index map sends a grid axis to another block axis, in the
                  # scan's words ("input 0"): where the fault's line is, which the feedback names anyway.
                  "map_axes"})
# Facts never kept, not even as withheld: what reads them checks that they are there
# (an exit status, the raw count the renderer would turn into a share).
DROPPED = frozenset({"exit", "stderr_tail", "mismatches"})


def share_band(part: int, whole: int) -> str:
    """A share of the outputs, in one of five bands."""
    share = part / max(whole, 1)
    if share >= 1:
        return "every output"
    if share > 0.5:
        return "more than half of the outputs"
    if share >= 0.1:
        return "10% to 50% of the outputs"
    if share >= 0.01:
        return "1% to 10% of the outputs"
    return "under 1% of the outputs"


def error_band(relative: Any) -> str:
    """An error next to the output's magnitude, in one of three bands."""
    if not isinstance(relative, (int, float)) or isinstance(relative, bool) or relative != relative:
        return "an unknown share"
    if relative < 1e-4:
        return "under 0.01%"
    return "under 1%" if relative < 1e-2 else "1% or more"


def limit_band(limit: Any) -> Any:
    if not isinstance(limit, (int, float)) or isinstance(limit, bool):
        return limit
    return next((b for b in LIMIT_BANDS if limit <= b), LIMIT_BANDS[-1])


def shown_type(name: Any) -> str:
    """An exception type as a secret case shows it: that it raised, not what."""
    return RAISED


def _message(f: Finding, facts: dict) -> str:
    """The finding in the grader's words: its title, and the bands it has."""
    problem = facts.get("problem")
    if problem == "exception":
        where = "while tracing" if facts.get("phase") == "trace" else "while running"
        return f"raised {facts['type']} {where}"
    words = f.kind.titled(problem)
    if isinstance(facts.get("mismatch_text"), str):
        words += f": {facts['mismatch_text']} are wrong"
    return words


def shown(f: Finding) -> Finding:
    """``f`` as a secret case's finding carries it."""
    raw = f.facts()
    facts: dict[str, Any] = {}
    for key, value in raw.items():
        if key in DROPPED:
            continue
        facts[key] = value if key in KEPT else None
    if "type" in raw:
        facts["type"] = shown_type(raw["type"])
    if "frames" in raw:
        facts["frames"] = []
    if "limit_s" in raw:
        facts["limit_s"] = limit_band(raw["limit_s"])
    total = raw.get("total") or raw.get("elements")
    if "mismatches" in raw and isinstance(total, int):
        facts["mismatch_text"] = share_band(raw["mismatches"], total)
    elif "mismatch_text" in raw:
        facts["mismatch_text"] = None
    if "nonfinite" in raw:
        n = raw["nonfinite"]
        facts["nonfinite"] = ("All" if n >= total else "Some") if isinstance(n, int) and n and isinstance(
            total, int) else 0
    if "relative_to_output" in raw:
        facts["relative_to_output"] = error_band(raw["relative_to_output"])
    if "reason" in raw and not isinstance(raw["reason"], str):
        facts["reason"] = None
    return replace(f, message=_message(f, facts), evidence=Finding.make(f.id, f.rung, "", **facts).evidence)


def shown_findings(assignment: Assignment, findings: list[Finding]) -> list[Finding]:
    """Every finding, each on a secret case as that case may show it."""
    secret = {c.name for c in assignment.cases if not c.visible}
    return [shown(f) if f.case in secret else f for f in findings]
