"""A wrong result's formula error, placed from what the comparison saw: rows that are
the right rows times one number (``judge.compare.scaled_rows``: the store's divisor).
"""
from __future__ import annotations

import re

from ...findings import Finding
from ...grading.identity.sources import KernelSource, Place, Sources, divisor


def _line(p: Place) -> int:
    m = re.search(r"(\d+)$", p.where)
    return int(m[1]) if m else -1


def _scaled(rows: dict, k: KernelSource | None, sources: Sources | None) -> tuple[str, dict] | None:
    """The fix rows that are the right rows times one number call for: where the one store
    divides, what it divides by and every line that writes that."""
    try:
        values = {"rows": int(rows["rows"]), "of": int(rows["of"]), "low": f"{float(rows['low']):.3g}",
                  "high": f"{float(rows['high']):.3g}", "divided": ""}
    except (KeyError, TypeError, ValueError):
        return None
    found = divisor(k.stores[0].text) if k is not None and len(k.stores) == 1 else None
    writes = sources.writes_to(found[1]) if found is not None and sources is not None else ()
    if found is not None and writes:
        lines = ", ".join(str(_line(p)) for p in writes)
        values["divided"] = (f": the store divides by {found[0]}, so check how {found[1]} is computed "
                             f"(line{'s' if len(writes) > 1 else ''} {lines})")
    else:
        values["divided"] = ": check what it is divided or multiplied by (a normalising sum, a scale factor)"
    return "scaled-rows", values


def formula_fault(f: Finding, k: KernelSource) -> tuple[str, Place] | None:
    """(what the line is, the line) of a formula error the comparison placed, else None."""
    if f.id == "wrong-result" and isinstance(f.facts().get("scaled_rows"), dict) and len(k.stores) == 1:
        return "the store (what it scales the rows by)", k.stores[0]
    return None


def formula_fix(f: Finding, sources: Sources | None) -> tuple[str, dict] | None:
    """(key, values) of the fix a placed formula error calls for, else None."""
    x = f.facts()
    kernels = sources.kernels if sources is not None else ()
    if f.id == "wrong-result" and isinstance(x.get("scaled_rows"), dict):
        return _scaled(x["scaled_rows"], kernels[0] if len(kernels) == 1 else None, sources)
    return None
