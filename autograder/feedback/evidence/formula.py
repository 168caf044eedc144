"""A wrong result's formula error, placed from what the comparison saw: rows that are
the right rows times one number (``judge.compare.scaled_rows``: the store's divisor);
outputs that moved with one input element the reference keeps them apart from
(``judge.compare.mixed_axes``: the one reduction along that axis); a number the kernel
computes with, made from another size of the case than the reference's
(``judge.compare.constant_fit``: 1/√S for 1/√D, at the line that uses it); an input
whose value reaches nothing the kernel writes (``identity.dataflow``); what a mistake the
instructor declared beside the reference computes (``compare.mistake_fit``: the
instructor's fix, at the line its ``at`` names).

A reduction's axes count in its own value, whose rank may not be the output's (a
block with a squeezed leading dimension): they are matched from the end, as a
block's trailing dimensions are the array's.
"""
from __future__ import annotations

import re

from ...findings import Finding
from ...grading.identity.calls import divisor
from ...grading.identity.sources import KernelSource, Place, Sources
from ...spec import mistakes

# A wrong result's facts that place its formula error (each says more than the general fix).
FORMULA_FACTS = ("constant", "mistake", "unused_input", "scaled_rows", "mixed", "steady")


def _line(p: Place) -> int:
    m = re.search(r"(\d+)$", p.where)
    return int(m[1]) if m else -1


def lines_said(places) -> str:
    """Their line numbers in words, each once: "line 17", "lines 17 and 18", "lines 3, 7 and 9"."""
    lines = [str(n) for n in sorted({_line(p) for p in places})]
    if not lines:
        return ""
    return f"line{'s' if len(lines) > 1 else ''} " + ", ".join(lines[:-1]) + (" and " if len(lines) > 1 else "") \
        + lines[-1]


def _size_read(c: dict, sources: Sources | None) -> tuple[Place, str] | None:
    """The one line of the module that reads the size a number is made from (``q.shape[1]``:
    the fact's axis and rank) and the expression as written; None for none or several."""
    axis, rank = c.get("axis"), c.get("rank")
    if sources is None or type(axis) is not int or type(rank) is not int:
        return None
    reads = sources.shape_reads(axis, rank)
    return reads[0] if len(reads) == 1 else None


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


def formula_fault(f: Finding, k: KernelSource, sources: Sources | None = None) -> tuple[str, Place] | None:
    """(what the line is, the line) of a formula error the comparison placed, else None."""
    x = f.facts()
    if f.id != "wrong-result":
        return None
    if (made := _constant(x.get("constant"), k)) is not None:
        # (the line that reads the wrong size makes the number; the kernel's line only uses it)
        read = _size_read(x["constant"], sources)
        return ("the line that makes the number", read[0]) if read is not None \
            else ("the number it computes with", made)
    if (seen := _mistake_line(x.get("mistake"), k, sources)) is not None:
        return seen
    if x.get("unused_input") and k.unused_inputs and (k.unused_inputs[0][1] is not None or len(k.stores) == 1):
        read = k.unused_inputs[0][1]
        return ("the read whose value is never used", read) if read is not None else ("the store", k.stores[0])
    if isinstance(x.get("scaled_rows"), dict) and len(k.stores) == 1:
        return "the store (what it scales the rows by)", k.stores[0]
    if (found := _mixing(x.get("mixed"), k)):
        return "the reduction", found[0][2]
    if isinstance(x.get("mixed"), dict) and _shifted(x["mixed"]) is not None:
        # A value landed elsewhere in a kernel whose copy went to another slot than its wait's
        # (``dmas.mismatches``' slot kind): that copy's start moved it.
        moved = next((m for m in k.sem_mismatches if m.kind == "slot"), None)
        if moved is not None:
            return "the copy's start", moved.start
    carried = _carried(k, sources) if isinstance(x.get("steady"), dict) and not x.get("mixed") else ()
    return ("what the step carries", carried[0][1]) if len(carried) == 1 else None


def _mixing(mixed, k: KernelSource | None) -> list[tuple[tuple[int, ...], int, Place]]:
    """The kernel's reductions along an axis the outputs mixed along, one per line
    ([] when there is none, or more lines than one fix can name)."""
    try:
        axes, rank = set(mixed["axes"]), len(mixed["shape"])
    except (KeyError, TypeError):
        return []
    found = {}
    for r in k.reductions if k is not None else ():
        if any(a - r[1] + rank in axes for a in r[0]):
            found.setdefault(r[2].where, r)
    return list(found.values()) if len(found) <= MAX_LINES else []


# Reductions along the mixed axis one fix names (more: the fix names none).
MAX_LINES = 3


def formula_fix(f: Finding, sources: Sources | None) -> tuple[str, dict] | None:
    """(key, values) of the fix a placed formula error calls for, else None."""
    x = f.facts()
    kernels = sources.kernels if sources is not None else ()
    kernel = kernels[0] if len(kernels) == 1 else None
    if f.id == "wrong-result" and (made := _constant(x.get("constant"), kernel)) is not None:
        return _made(x["constant"], made, kernel, sources)
    if f.id == "wrong-result" and isinstance(x.get("mistake"), dict) \
            and (seen := _mistake(x["mistake"], kernel, sources)):
        return seen
    if f.id == "wrong-result" and x.get("unused_input") and kernel is not None and kernel.unused_inputs:
        return _unused(kernel)
    if f.id == "wrong-result" and isinstance(x.get("scaled_rows"), dict):
        return _scaled(x["scaled_rows"], kernel, sources)
    if f.id == "wrong-result" and isinstance(x.get("mixed"), dict) and (found := _mixed(x["mixed"], kernel)):
        return found
    if f.id == "wrong-result" and isinstance(x.get("steady"), dict):
        carried = _carried(kernel, sources)
        return _steady(x["steady"], carried, _frozen(kernel, sources, carried))
    return None


def _carried(k: KernelSource | None, sources: Sources | None) -> tuple[tuple[str, Place], ...]:
    """The stores into the kernel's scratch outside its first-step reset, as (ref, line)."""
    return sources.carried_writes(sources.scratch_names(k)) if k is not None and sources is not None else ()


def _frozen(k: KernelSource | None, sources: Sources | None,
            carried: tuple[tuple[str, Place], ...]) -> list[tuple[str, Place]]:
    """The scratch refs stored only in the first-step reset (no later step updates them:
    none of ``carried``), with that store's line: a running value never carried forward."""
    if k is None or sources is None:
        return []
    updated = {name for name, _p in carried}
    return [(name, writes[0]) for name in sources.scratch_names(k)
            if name not in updated and (writes := sources.writes_to(name))]


def _steady(s: dict, carried: tuple[tuple[str, Place], ...],
            frozen: list[tuple[str, Place]] = ()) -> tuple[str, dict] | None:
    """The fix a right answer on alike blocks calls for: the lines that update what is
    carried, and a carried value no step updates."""
    try:
        values = {"dim": str(s["dim"]), "period": int(s["period"]), "size": int(s["size"])}
    except (KeyError, TypeError, ValueError):
        return None
    named = [f"{name} at line {_line(p)}" for name, p in carried]
    values["carried"] = (f" ({', '.join(named)}); when a later block changes one carried value (a running maximum, "
                         "say), everything computed from its old value must follow" if named else "")
    if carried and len(frozen) == 1:
        name, p = frozen[0]
        values["carried"] += (f". {name} is stored only at the first step (line {_line(p)}) and no later step "
                              f"stores its new value, though each step reads it: store it every step")
    return "steady-carry", values


def _mixed(m: dict, k: KernelSource | None) -> tuple[str, dict] | None:
    """The fix outputs mixed along an axis call for: the reduction along it, and the
    axis the reference's own outputs move along (where its reduction runs)."""
    try:
        rank, axis = len(m["shape"]), int(m["axes"][0])
        lo, hi = (int(v) for v in m["span"][0])
        ref_lo, ref_hi = (int(v) for v in m["ref_span"][axis])
        values = {"input": str(m["input"]), "at": ", ".join(str(int(i)) for i in m["at"]),
                  "moved": int(m["moved"]), "axis": axis, "span": _indices(lo, hi), "ref_at": _indices(ref_lo, ref_hi)}
        want = [int(d) for d in m["ref_axes"] if int(d) not in m["axes"]]
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    values["want"] = (f"; in the reference the change spreads along axis {want[0]} instead: reduce along "
                      f"axis={want[0] - rank}" if len(want) == 1 else "")
    if (shifted := _shifted(m)) is not None:
        return "shifted", {**values, **shifted}
    found = _mixing(m, k)
    if not found:
        return "mixed", values
    raxes = {a for r in found for a in r[0] if a - r[1] + rank in m["axes"]}
    many = len(found) > 1
    words = ("s", "run", "", "their") if many else ("", "runs", "es", "its")
    return "mixed-axis", {**values, "line": ", ".join(str(_line(r[2])) for r in found),
                          **dict(zip(("lines", "runs", "es", "its"), words)),
                          "raxis": " and ".join(str(a) for a in sorted(raxes)) or str(axis)}


def _shifted(m: dict) -> dict | None:
    """One output moved where the reference moves one other (``mixed_axes``' moved_to):
    the offset between them, along the axes it is not zero."""
    try:
        to, ref = [int(i) for i in m["moved_to"]], [int(i) for i in m["ref_to"]]
    except (KeyError, TypeError, ValueError):
        return None
    along = [(d, a - b) for d, (a, b) in enumerate(zip(to, ref)) if a != b]
    if len(to) != len(ref) or not along:
        return None
    said = " and ".join(f"{abs(n)} {'after' if n > 0 else 'before'} where it belongs along axis {d}"
                        for d, n in along)
    return {"to": ", ".join(map(str, to)), "ref_to": ", ".join(map(str, ref)), "offset": said,
            "also": " also" if m.get("also") is True else ""}


def _constant(c, k: KernelSource | None) -> Place | None:
    """The line of the kernel's number the comparison found made from the wrong size."""
    value = c.get("value") if isinstance(c, dict) else None
    return next((p for v, p in (k.constants if k is not None else ()) if v == value), None)


def _made(c: dict, place: Place, k: KernelSource | None = None,
          sources: Sources | None = None) -> tuple[str, dict] | None:
    """The fix a number made from the wrong size (or applied twice) calls for, in the
    case's own numbers."""
    try:
        values = {"value": f"{float(c['value']):.4g}", "form": str(c["form"]), "dim": str(c["dim"]),
                  "size": int(c["size"]), "line": _line(place)}
        if c.get("twice") is True:
            return "constant-twice", {**values, "lines": lines_said(
                [p for v, p in (k.constants if k is not None else ()) if v == c["value"]] or [place])}
        read = _size_read(c, sources)
        values.update(meant=str(c["meant"]), meant_value=f"{float(c['meant_value']):.4g}",
                      meant_dim=str(c["meant_dim"]),
                      made=f", made from {read[1]} at line {_line(read[0])}" if read is not None else "")
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    return "wrong-constant", values


def _unused(k: KernelSource) -> tuple[str, dict]:
    """The fix an input whose value reaches no write calls for, with the store that goes without it."""
    ref, read = k.unused_inputs[0]
    store = f" (the store at line {_line(k.stores[0])} computes without it)" if len(k.stores) == 1 else ""
    what = (f"the kernel reads {ref} at line {_line(read)}, but nothing it writes depends on that value"
            if read is not None else f"nothing the kernel writes depends on {ref}")
    return "unused-input", {"ref": ref, "what": what, "store": store}


def _indices(lo: int, hi: int) -> str:
    return f"index {lo}" if lo == hi else f"indices {lo}-{hi}"


# What a declared mistake's ``at`` calls the line it names (``spec.mistakes.AT``).
AT_WORDS = {"where": "the jnp.where", "division": "the division", "exp": "the exponential",
            "dot": "the matrix product", "accumulator": "the accumulator's update", "store": "the store"}


def _mistake_line(m, k: KernelSource | None, sources: Sources | None = None) -> tuple[str, Place] | None:
    """(what the line is, the line) a declared mistake's ``at`` names, when the kernel has
    exactly one such line, else None."""
    at = m.get("at") if isinstance(m, dict) else None
    if k is None or at not in AT_WORDS:
        return None
    if at == "accumulator":     # the scratch update, outside the first-step reset, that adds a product
        lines = tuple(p for _name, p in _carried(k, sources) if "dot(" in p.text or "@" in p.text)
    else:
        lines = k.stores if at == "store" else k.lines_of(*mistakes.AT[at])
    return (AT_WORDS[at], lines[0]) if len(lines) == 1 else None


def _mistake(m: dict, k: KernelSource | None, sources: Sources | None = None) -> tuple[str, dict] | None:
    """The fix a declared mistake calls for, in the instructor's words, at its line."""
    if not isinstance(m.get("name"), str) or not isinstance(m.get("fix"), str):
        return None
    seen = _mistake_line(m, k, sources)
    line = f" ({seen[0]} at line {_line(seen[1])})" if seen is not None else ""
    fix = m["fix"].strip().rstrip(".")      # (the catalogue's sentence ends it)
    return "known-mistake", {"name": m["name"], "fix": fix[:1].upper() + fix[1:], "line": line}
