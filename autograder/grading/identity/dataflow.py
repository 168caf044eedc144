"""Which of a kernel's inputs reach what it writes: a backward pass over the traced
kernel's equations (pure data; no JAX).

An input whose value never reaches a store, a DMA or anything a nested jaxpr does (a
loop, a branch: entered whole, as live) is one the kernel computes without: with a
wrong result, that is where to look (``y`` read into ``b`` and ``a + a`` stored). The
pass is conservative: whatever it cannot follow counts as used, so it names an input
only when no path from its reads reaches an effect. Every read is a ``get`` (or a
``load``) of the input's ref at the kernel's top level; a ref handed to another
equation whole (a DMA, a loop, a call) is used.
"""
from __future__ import annotations

from typing import Any

READS = ("get", "load")
# Equations that write or signal: what the kernel does, the roots of the pass.
EFFECTS = ("swap", "masked_swap", "addupdate", "dma_start", "dma_wait", "semaphore_signal", "semaphore_wait",
           "debug_callback", "debug_print")


def _ids(atoms: Any) -> list[int]:
    return [a["v"] for a in atoms if isinstance(a, dict) and type(a.get("v")) is int] \
        if isinstance(atoms, list) else []


def _live(eqns: list[dict], outvars: list[int]) -> list[bool]:
    """Each equation: whether its results reach an effect (or the jaxpr's outputs)."""
    needed, live = set(outvars), [False] * len(eqns)
    for i in range(len(eqns) - 1, -1, -1):
        e = eqns[i]
        params = e.get("params") if isinstance(e.get("params"), list) else []
        nested = any(isinstance(v, list) and v and v[0] in ("jaxpr", "branches", "body_jaxpr", "cond_jaxpr")
                     for v in params)
        if e.get("p") in EFFECTS or nested or set(_ids(e.get("out"))) & needed:
            live[i] = True
            needed.update(_ids(e.get("in")))
    return live


def unused_inputs(jaxpr: Any, first: int, count: int) -> list[tuple[int, list[Any]]]:
    """The kernel's inputs (their place among ``count`` refs from invar ``first``) whose value
    reaches nothing it writes: (input, the sources of its reads; [] when it is never read)."""
    if not isinstance(jaxpr, dict) or not isinstance(jaxpr.get("eqns"), list):
        return []
    eqns = [e for e in jaxpr["eqns"] if isinstance(e, dict)]
    invars = _ids(jaxpr.get("invars"))
    if len(invars) < first + count or len(eqns) != len(jaxpr["eqns"]):
        return []
    live = _live(eqns, _ids(jaxpr.get("outvars")))
    out = []
    for k, ref in enumerate(invars[first:first + count]):
        uses = [(e, alive) for e, alive in zip(eqns, live) if ref in _ids(e.get("in"))]
        if all(e.get("p") in READS and _ids(e.get("in"))[:1] == [ref] and not alive for e, alive in uses):
            out.append((k, [e.get("src") for e, _alive in uses]))
    return out
