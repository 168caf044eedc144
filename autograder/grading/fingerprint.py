"""A structural fingerprint of a traced program (pure data, no JAX).

Two submissions whose kernels trace to the same program, up to names, source
positions, constant values and literal values, get the same fingerprint: the
TA review groups them (common designs, and possible copying). Variables are
already numbered by first appearance in the document (``pallas_surface.serial``),
so renaming a variable or a function changes nothing; reordering work does.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

# Document keys that say where or what something is called, not what it computes.
_DROPPED_KEYS = frozenset({"src", "names", "sources"})
_DROPPED_PARAMS = frozenset({"name", "metadata", "debug", "name_and_src_info", "debug_info",
                             "cost_estimate"})


def _normal(value: Any) -> Any:
    if isinstance(value, dict):
        if "lit" in value:
            return {"lit": _normal(value.get("aval"))}          # a literal: its type, not its value
        if "consts" in value and "jaxpr" in value:
            return {"jaxpr": _normal(value["jaxpr"]), "consts": len(value["consts"])}
        return {k: _normal(v) for k, v in value.items() if k not in _DROPPED_KEYS}
    if isinstance(value, list):
        if value and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in value):
            # An equation's or a dataclass's parameters: [name, value] pairs.
            return [[k, _normal(v)] for k, v in value if k not in _DROPPED_PARAMS]
        return [_normal(v) for v in value]
    return value


def of(document: dict) -> str:
    """The fingerprint of one checked program document (16 hex digits)."""
    canonical = json.dumps(_normal(document.get("program", document)), sort_keys=True,
                           separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
