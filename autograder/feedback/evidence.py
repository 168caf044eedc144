"""Which fix a finding's evidence calls for: the key of its kind's ``seen``
entry in the catalogue, and the values that fill it, read from the finding's
facts and the kernel's (``grading.identity.sources``). A row a mask leaves out
(the fill comes back as it was) is not an accumulator to zero; two cores of a
``pl.kernel`` mesh writing one range is not a parallel grid axis; a DMA that is
wrong only when copies complete early is a buffer refilled too soon. None when
the evidence does not say (the catalogue's general line stands). The wording is
the catalogue's; this module only chooses. Plain data; no JAX.
"""
from __future__ import annotations

from typing import Iterable

from ..findings import Finding
from ..grading.identity.sources import Sources


def _range(access: dict) -> str:
    rng = access.get("element_range") or []
    return "[" + ", ".join(f"{lo}:{hi}" for lo, hi in rng) + "]" if rng else ""


def _race(x: dict, sources: Sources | None) -> tuple[str, dict] | None:
    accesses = [a for a in x.get("accesses") or [] if isinstance(a, dict)]
    if len(accesses) != 2:
        return None
    buffer = str(x.get("operand") or "the same buffer")
    what = f"{buffer} {_range(accesses[0])}".strip()
    kernels = sources.kernels if sources is not None else ()
    if len(kernels) == 1 and kernels[0].cores > 1 and all(a.get("access") == "write" for a in accesses):
        return "cores-overlap", {"what": what}
    kinds = {a.get("access") for a in accesses}
    if kinds == {"read", "write"}:
        return "dma-in-flight", {"what": what}
    if kinds == {"write"}:
        return "blocks-shared", {"what": what}
    return None


def _uninitialized(x: dict) -> tuple[str, dict] | None:
    if "never_written" not in x or x.get("unwritten_count"):
        return None     # no fill reruns to tell (or blocks the grid never visits: the grid's own fix)
    if x["never_written"] and x.get("first_never"):
        return "never-stored", {"count": x["never_written"], "first": ", ".join(str(i) for i in x["first_never"])}
    return "read-first", {}


def _dma(f: Finding, x: dict) -> tuple[str, dict] | None:
    if f.problem == "mode-dependent":
        return {"eager": ("refilled", {}), "on_wait": ("read-early", {})}.get(x.get("mode_failing"))
    return {"hang": ("hang", {}), "semaphore-left": ("never-waited", {})}.get(f.problem or "")


def _hang(x: dict, sources: Sources | None) -> tuple[str, dict] | None:
    if x.get("not_run"):
        return None
    if x.get("phase") == "trace":
        at = x.get("at")
        place = sources.place(at[0], at[1]) if sources is not None and isinstance(at, list) and len(at) == 2 \
            else None
        return ("trace-hang", {"where": place.where}) if place is not None else ("trace-stuck", {})
    return ("run-hang", {}) if x.get("phase") == "run" else None


def seen(f: Finding, sources: Sources | None = None, related: Iterable[Finding] = ()) -> tuple[str, dict] | None:
    """(key, values) of the fix ``f``'s evidence calls for, or None."""
    x = f.facts()
    if f.id == "uninitialized-memory":
        return _uninitialized(x)
    if f.id == "data-race":
        return _race(x, sources)
    if f.id == "dma-protocol":
        return _dma(f, x)
    if f.id == "grid-order-dependence" and f.problem == "hang":
        return "hang", {}
    if f.id == "not-a-kernel" and isinstance(x.get("outside"), dict) and x["outside"]:
        return "outside", {"prim": ", ".join(sorted(x["outside"]))}
    if f.id == "submission-error" and f.problem == "timeout":
        return _hang(x, sources)
    return None


def fix(f: Finding, sources: Sources | None = None, related: Iterable[Finding] = ()) -> str | None:
    """The fix ``f``'s evidence calls for, in the catalogue's words, or None."""
    found = seen(f, sources, related)
    return f.kind.fix_seen(*found) if found is not None else None
