"""Which fix: the key of a finding's kind's ``seen`` entry in the catalogue and the
values that fill it, chosen from its evidence; see the package's docstring."""
from __future__ import annotations

import math
import re
from typing import Iterable

from ...findings import CATALOGUE, Finding
from ...grading.identity.sources import Sources
from .formula import _line, formula_fix, lines_said
from .where import (
    _never_stored,
    _wrong_dimension,
    crossed,
    dma_fact,
    narrow_reads,
    narrow_scratch,
    padded_reads,
    reset_axis,
    stores_miss,
    unread,
)


def _range(access: dict) -> str:
    rng = access.get("element_range") or []
    return "[" + ", ".join(f"{lo}:{hi}" for lo, hi in rng) + "]" if rng else ""


def _race_fix(x: dict, sources: Sources | None) -> tuple[str, dict] | None:
    accesses = [a for a in x.get("accesses") or [] if isinstance(a, dict)]
    if len(accesses) != 2:
        return None
    buffer = str(x.get("operand") or "the same buffer")
    slot = re.search(r"\[\((\d+), *slice", " ".join(str(r) for r in x.get("report") or []))
    what = (f"{buffer} (slot {slot[1]}, elements {_range(accesses[0])})" if slot
            else f"{buffer} {_range(accesses[0])}".strip())
    kernels = sources.kernels if sources is not None else ()
    if len(kernels) == 1 and kernels[0].cores > 1 and all(a.get("access") == "write" for a in accesses):
        return "cores-overlap", {"what": what}
    kinds = {a.get("access") for a in accesses}
    if kinds == {"read", "write"}:
        line = {a.get("access"): m[1] for a in accesses if (m := re.search(r":(\d+):\d+", str(a.get("where"))))}
        lines = f" at line {line['read']} (the copy started at line {line['write']})" if len(line) == 2 else ""
        return "dma-in-flight", {"what": what, "lines": lines}
    if kinds == {"write"}:
        return "blocks-shared", {"what": what}
    return None


def _never_run(f: Finding, x: dict, kernels) -> tuple[str, dict] | None:
    """Elements never stored, in a kernel whose output store sits under a pl.when that no
    grid point runs (``KernelSource.never_run``): that condition is the fault."""
    if len(kernels) != 1 or not kernels[0].never_run or f.problem == "unwritten-blocks" \
            or x.get("unwritten_count") or not _never_stored(x):
        return None
    store, when = kernels[0].never_run[0]
    return "store-never-runs", {"store": _line(store), "when": _line(when), "cond": when.text or "pl.when",
                                "grid": _point(kernels[0].grid)}


def _stored_values(x: dict) -> dict:
    return {"count": x.get("never_written"), "first": ", ".join(str(i) for i in x.get("first_never") or ())}


def _uninitialized(f: Finding, x: dict) -> tuple[str, dict] | None:
    if f.problem == "unwritten-blocks":
        return "unvisited", {}
    if not isinstance(x.get("never_written"), int) or x.get("unwritten_count"):
        return None     # no fill reruns to tell (or blocks the grid never visits: the grid's own fix)
    if _never_stored(x):
        return "never-stored", _stored_values(x)
    return "read-first", {}


def _wrong_semaphore(f: Finding, sources: Sources | None) -> tuple[str, dict] | None:
    """A wait on another semaphore than its copy's start (read from the traced kernel):
    whatever the run showed (a hang, a result that depends on the DMA mode), that is the fix."""
    kernels = sources.kernels if sources is not None else ()
    m = dma_fact(f, kernels[0]) if len(kernels) == 1 else None
    if m is None:
        return None
    if m.kind == "unwaited":
        return "never-waited-copy", {"source": m.source, "copy": m.copy, "start": m.start.where}
    if m.kind == "slot":
        return "wrong-slot", {"source": m.source, "started_into": m.started_into, "start": m.start.where,
                              "waits_in": m.copy, "wait": m.wait.where}
    return "wrong-semaphore", {"waits_on": m.waits_on, "copy": m.copy, "started_on": m.started_on,
                               "start": m.start.where}


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
        return ("trace-hang", {}) if place is not None else ("trace-stuck", {})
    return ("run-hang", {}) if x.get("phase") == "run" else None


def _padding_fix(x: dict) -> tuple[str, dict] | None:
    """The fix the padding of an input's partial block calls for, in the case's numbers:
    the block and the size along the axis, the padding it leaves, the grid axis that
    steps through it, and a block that divides the size (and every size the handout allows)."""
    read = padded_reads(x)
    if not read:
        return None
    e, axis = read[0]
    b, n = e["block_shape"][axis], e["array_shape"][axis]
    count = -(-n // b)
    named = all(isinstance(p.get("name"), str) and isinstance(p.get("dims"), list) and a < len(p["dims"])
                and isinstance(p["dims"][a], str) for p, a in read)
    dims = {p["dims"][a] for p, a in read} if named else set()
    steps = {g[i] if isinstance(g := p.get("grid_axes"), list) and (i := p["axes"].index(a)) < len(g) else None
             for p, a in read}
    step = next(iter(steps)) if len(steps) == 1 else None
    index = (f"pl.program_id({step}) * {b} + " if isinstance(step, int) else "" if count == 1
             else f"the block's index * {b} + ")
    every = [m[a] for p, a in read if isinstance(m := p.get("multiple_of"), list) and a < len(m)]
    whole = math.gcd(*every) if len(every) == len(read) and all(isinstance(m, int) and m > 0 for m in every) else 0
    # (A multiple of 128, which a block's last dimension must be; one that divides every
    # size the handout allows where it says what they are multiples of.)
    fits = [d for d in range(128, b, 128) if n % d == 0 and (whole <= 1 or whole % d == 0)]
    dim = next(iter(dims)) if len(dims) == 1 else ""
    also = f", which divides every {dim} the handout allows" if fits and whole > 1 and dim else ""
    return "partial-input-block", {
        "block": b, "size": n, "real": n - (count - 1) * b, "pad": count * b - n, "index": index,
        "along": " and ".join(f"dimension {a} of {p['name'] if named else p['operand']}" for p, a in read),
        "named": f"{dim} = {n}" if dim else f"{n} elements",
        "both": "" if len(read) == 1 else f" of {'both' if len(read) == 2 else 'each'}, since 0 times NaN "
                                          "padding is still NaN",
        "divides": f" (e.g. {fits[-1]}{also})" if fits else ""}


def _point(values) -> str:
    return "(" + ", ".join(str(int(v)) for v in values) + ("," if len(values) == 1 else "") + ")"


def reads_fix(f: Finding, related: Iterable[Finding] = ()) -> str | None:
    """The fix an unread input block calls for (``unread``), in the wrong-result kind's words."""
    u = unread(f, related)
    if u is None:
        return None
    try:
        read = ", ".join(_point(r) for r in u["read"]) + (
            f" (and {u['read_count'] - len(u['read'])} more)" if u["read_count"] > len(u["read"]) else "")
        also = f" (the same holds for {', '.join(u['also'])})" if u.get("also") else ""
        values = {**u, "output_block": _point(u["output_block"]), "input_block": _point(u["input_block"]),
                  "block_shape": " x ".join(str(b) for b in u["block_shape"]), "read": read or "nothing",
                  "also": also}
    except (KeyError, TypeError, ValueError):
        return None
    kind = u["kind"]
    if kind == "map-misses" and len(u["read"]) == 1 == u["read_count"] and list(u["read"][0]) != \
            list(u["input_block"]) and sorted(u["read"][0]) == sorted(u["input_block"]):
        kind = "map-swapped"      # (the one block it reads is the needed one, its axes in another order)
    return CATALOGUE["wrong-result"].fix_seen(kind, values)


# What a secret case's finding may say: keys chosen from the grader's own words alone
# (its problem, its DMA mode: ``secrecy.KEPT``), filled with nothing of the case's.
SECRET_SAFE = frozenset({"unvisited", "refilled", "read-early", "hang", "never-waited", "map-axes"})


def seen(f: Finding, sources: Sources | None = None, related: Iterable[Finding] = (),
         visible: bool = True) -> tuple[str, dict] | None:
    """(key, values) of the fix ``f``'s evidence calls for, or None (``visible``
    False: a secret case's finding, said only in the grader's own words)."""
    if not visible:
        found = seen(f, None, ())
        return found if found is not None and found[0] in SECRET_SAFE and not found[1] else None
    x = f.facts()
    kernels = sources.kernels if sources is not None else ()
    reset = reset_axis(f, kernels[0]) if f.id == "uninitialized-memory" and len(kernels) == 1 else None
    if reset is not None:
        axis, place, reduction = reset
        return "reset-axis", {"axis": axis, "line": place.where, "reduction": reduction}
    if (length := _wrong_dimension(f, sources)) is not None:
        return length
    if (found := formula_fix(f, sources)) is not None:
        return found
    if f.id == "numerics" and len(kernels) == 1 and narrow_scratch(x, kernels[0]):
        k = kernels[0]
        names = sources.scratch_names(k)
        named = [names[i] for i in k.narrow_scratch if i < len(names)]
        return "narrow-scratch", {"names": " and ".join(named) or "ref", "line": k.scratch.where}
    if f.id == "numerics" and len(kernels) == 1 and (reads := narrow_reads(x, kernels[0])):
        return "narrow-read", {"lines": lines_said(reads)}
    if f.id == "uninitialized-memory" and (found := _never_run(f, x, kernels)) is not None:
        return found
    if f.id == "uninitialized-memory":
        found = _uninitialized(f, x)
        if found == ("read-first", {}) and len(kernels) == 1 and stores_miss(x, kernels[0]):
            return "stores-miss", {**_stored_values(x), "wrong": x["wrong_unwritten"]}
        gridless = len(kernels) == 1 and not kernels[0].grid
        return ("read-unfilled", {}) if found == ("read-first", {}) and gridless else found
    if f.id == "data-race":
        return _race_fix(x, sources)
    if f.id == "dma-protocol":
        return _wrong_semaphore(f, sources) or _dma(f, x)
    if f.id == "out-of-bounds" and isinstance(x.get("slice"), dict):    # a ref slice refused while tracing
        s = {"end": x["slice"]["dim"] - 1, "stride": 1, **x["slice"]}
        runs_out = "size" in s and s["start"] < s["dim"]
        return ("slice-runs-out", {**s, "last": s["start"] + (s["size"] - 1) * s["stride"]}) if runs_out \
            else ("slice-past-end", s)
    if f.id == "out-of-bounds" and crossed(x):
        return "map-axes", {}   # (a visible case's numbers: ``fixes._out_of_bounds``)
    if f.id == "grid-order-dependence" and f.problem == "hang":
        return "hang", {}
    if f.id == "not-a-kernel" and isinstance(x.get("outside"), dict) and x["outside"]:
        return "outside", {"prim": ", ".join(sorted(x["outside"]))}
    if f.id == "submission-error" and f.problem == "timeout":
        return _hang(x, sources)
    if f.id == "padding-dependence":
        return _padding_fix(x)
    return None


def fix(f: Finding, sources: Sources | None = None, related: Iterable[Finding] = (),
        visible: bool = True) -> str | None:
    """The fix ``f``'s evidence calls for, in the catalogue's words, or None."""
    found = seen(f, sources, related, visible)
    return f.kind.fix_seen(*found) if found is not None else None
