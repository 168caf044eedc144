"""Probes: checks that expose what each interpreter rung cannot see.

Each probe declares its rung and the finding IDs it can produce, plans the
child runs it needs for one case (static analyses or interpreter runs with
other parameters), and judges their outcomes into findings. The registry below
is the one list of probes; assignments enable them under ``[probes.<name>]``.
"""
from __future__ import annotations

from ..spec import PROBES
from .base import Probe, ProbeResults
from .dynamic import GRID_ORDER, POISONING, RACES
from .numerics import NUMERICS
from .static import COMPILE, INDEX_MAPS, STRUCTURE, VMEM

REGISTRY: dict[str, Probe] = {p.name: p for p in (
    INDEX_MAPS, COMPILE, VMEM, STRUCTURE, POISONING, GRID_ORDER, RACES, NUMERICS)}
assert tuple(REGISTRY) == PROBES, "spec.PROBES and the registry must list the same probes"

__all__ = ["REGISTRY", "Probe", "ProbeResults"]
