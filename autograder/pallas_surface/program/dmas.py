"""A kernel's manual DMAs as the program document records them, and the waits on
a semaphore their copy was not started with (pure data; no JAX).

Both supported releases bind ``dma_start`` and ``dma_wait`` with a ``tree``
parameter, the pytree of ``(src_ref, dst_ref, dst_sem, src_sem, device_id)``
(``AsyncCopyDescriptor._get_args_and_tree``), whose leaves are the equation's
operands in order; each ref is a ``TransformedRef`` whose ``NDIndexer`` holds its
indices (a ``Slice``'s start, size and stride, or a leaf: an operand, a literal
when the index is static). A local copy's wait waits on ``dst_sem``, the same
slot its start signals (0.12's ``is_wait_send`` and 0.10.2's
``insert_dummy_device`` mark the remote, swapped form, left out here).

A wait whose copy (the same source and destination, at the same indices) was
started only on another semaphore is a fact: ``mismatches``. The indices are numbers:
a loop's or the grid's are evaluated step by step (``unroll``). Anything else (an
index read from memory, a remote copy, a branch on data, a field of another form)
gives no fact. The document is the tracer's claim: every read checks its form and a
malformed one reads as nothing, never as an exception.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from . import unroll

DMA = ("dma_start", "dma_wait")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,40}")


@dataclass(frozen=True)
class Ref:
    """A ref and its static indices: ``var`` the kernel's variable id, ``index`` one
    tuple per NDIndexer, each index an int or a (start, size, stride) slice."""
    var: int
    index: tuple[tuple[Any, ...], ...]
    shape: tuple[tuple[int, ...], ...] = ()     # each NDIndexer's ref shape (to leave whole slices out)


@dataclass(frozen=True)
class Copy:
    """One ``dma_start`` (``started``) or ``dma_wait`` of a local copy."""
    started: bool
    src: Ref
    dst: Ref
    sem: Ref             # the semaphore it signals (a start) or waits on (a wait)
    at: Any = None       # the equation's ``src``: its index into the document's sources


@dataclass(frozen=True)
class Mismatch:
    """A wait on ``wait.sem`` for the copy ``start`` signalled ``start.sem`` with
    ("semaphore"), a wait for a copy of ``start``'s source into another slot of
    the same buffer than the one ``start`` copied it into ("slot"), or a copy started
    and never waited on ("unwaited": ``wait`` is its start)."""
    wait: Copy
    start: Copy
    kind: str = "semaphore"


def _params(eqn: dict) -> dict:
    p = eqn.get("params")
    return {k[0]: k[1] for k in p if isinstance(k, list) and len(k) == 2 and isinstance(k[0], str)} \
        if isinstance(p, list) else {}


def _dc(value: Any, cls: str) -> dict | None:
    """A dataclass value's fields ({"dc": [cls, [[name, value], ...]]}), else None."""
    body = value.get("dc") if isinstance(value, dict) else None
    if not (isinstance(body, list) and len(body) == 2 and body[0] == cls and isinstance(body[1], list)):
        return None
    return {f[0]: f[1] for f in body[1] if isinstance(f, list) and len(f) == 2 and isinstance(f[0], str)}


def _items(value: Any) -> list | None:
    items = value.get("t") if isinstance(value, dict) else None
    return items if isinstance(items, list) else None


def _int(value: Any, operands: list) -> int | None:
    """A static integer: written in the tree, or a leaf whose operand is a literal."""
    if isinstance(value, dict) and set(value) == {"leaf"}:
        k = value["leaf"]
        atom = operands[k] if type(k) is int and 0 <= k < len(operands) else None
        value = atom.get("lit") if isinstance(atom, dict) and "v" not in atom else None
    return value if type(value) is int else None


def _index(value: Any, operands: list) -> Any:
    sl = _dc(value, "Slice")
    if sl is not None:
        parts = tuple(_int(sl.get(k), operands) for k in ("start", "size", "stride"))
        return None if None in parts else parts
    return _int(value, operands)


def _ref(value: Any, operands: list) -> Ref | None:
    """A tree's ref: a bare leaf (the whole ref) or a TransformedRef of NDIndexers."""
    leaf, transforms = value, []
    tr = _dc(value, "TransformedRef")
    if tr is not None:
        leaf, transforms = tr.get("ref"), _items(tr.get("transforms"))
    k = leaf.get("leaf") if isinstance(leaf, dict) and set(leaf) == {"leaf"} else None
    atom = operands[k] if type(k) is int and 0 <= k < len(operands) else None
    var = atom.get("v") if isinstance(atom, dict) else None
    if type(var) is not int or transforms is None:
        return None
    index, shapes = [], []
    for t in transforms:
        nd = _dc(t, "NDIndexer")
        indices, shape = _items((nd or {}).get("indices")), _items((nd or {}).get("shape"))
        if indices is None or shape is None or not all(type(n) is int for n in shape):
            return None
        one = tuple(_index(i, operands) for i in indices)
        if None in one:
            return None
        index.append(one)
        shapes.append(tuple(shape))
    return Ref(var, tuple(index), tuple(shapes))


def copy_of(eqn: dict) -> Copy | None:
    """A dma_start's or dma_wait's local copy at static indices, else None."""
    if not isinstance(eqn, dict) or eqn.get("p") not in DMA or not isinstance(eqn.get("in"), list):
        return None
    p = _params(eqn)
    if p.get("is_wait_send", False) is not False or p.get("insert_dummy_device", False) is not False:
        return None
    tree = p.get("tree")
    body = tree.get("tree") if isinstance(tree, dict) else None
    parts = _items(body[1]) if isinstance(body, list) and len(body) == 2 else None
    if parts is None or len(parts) != 5 or parts[3] is not None or parts[4] is not None:
        return None     # not (src, dst, dst_sem, src_sem, device_id) of a local copy
    refs = [_ref(v, eqn["in"]) for v in parts[:3]]
    if None in refs:
        return None
    return Copy(eqn["p"] == "dma_start", *refs, eqn.get("src"))


def copies(jaxpr: Any, grid: tuple[int, ...] = ()) -> tuple[Copy, ...] | None:
    """The DMAs a kernel issues, in order over its grid and loops, every index a number
    (``unroll.dma_eqns``); None when one cannot be read (an index read from memory, a
    remote copy, a branch on data): a partial view could miss the start that matches a wait."""
    eqns = unroll.dma_eqns(jaxpr, grid)
    if eqns is None:
        return None
    found = [copy_of(e) for e in eqns]
    return None if None in found else tuple(found)


def mismatches(found: tuple[Copy, ...]) -> tuple[Mismatch, ...]:
    """Each wait whose copy was started, and only ever on one other semaphore; and each
    wait for a copy never started whose source was copied, only ever, into one other
    slot of the same buffer (a prefetch into the slot in use, waited for where it belongs).
    A wait that names one source for every slot it waits on, or a copy another wait
    waits for where it was started (a stand-in of the same size: the semaphore counts
    bytes, not sources), says nothing of slots. Where no wait is amiss, each copy started
    and never waited on (``unwaited``)."""
    out = []
    starts = [c for c in found if c.started]
    waits = [c for c in found if not c.started]
    waited = {(w.src, w.dst) for w in waits}
    sources: dict[Any, set] = {}
    slots: dict[Any, set] = {}
    for w in waits:
        sources.setdefault(w.at, set()).add(w.src)
        slots.setdefault(w.at, set()).add(w.dst)
    for w in waits:
        same = [s for s in starts if (s.src, s.dst) == (w.src, w.dst)]
        sems = {s.sem for s in same}
        if len(sems) == 1 and w.sem not in sems:
            out.append(Mismatch(w, same[0]))
        elif not same and not (len(sources[w.at]) == 1 and len(slots[w.at]) > 1):
            moved = [s for s in starts if s.src == w.src and s.dst.var == w.dst.var and (s.src, s.dst) not in waited]
            if len({(s.dst, s.sem) for s in moved}) == 1:
                out.append(Mismatch(w, moved[0], "slot"))
    return tuple(out) or tuple(Mismatch(s, s, "unwaited") for s in unwaited(found))


def unwaited(found: tuple[Copy, ...]) -> tuple[Copy, ...]:
    """The starts no wait consumes by the kernel's end: each wait takes the earliest start
    still pending on its semaphore (a DMA semaphore counts what landed, not which copy).
    Nothing where a wait finds nothing pending (waited before its start: another bug)."""
    pending: dict[Ref, list[Copy]] = {}
    for c in found:
        queue = pending.setdefault(c.sem, [])
        if c.started:
            queue.append(c)
        elif not queue:
            return ()
        else:
            queue.pop(0)
    return tuple(sorted((c for q in pending.values() for c in q), key=found.index))


def written(ref: Ref, names: dict[int, str]) -> str:
    """A ref as the student wrote it: 'sem[1]', 'x_hbm[64:128]' (whole trailing
    slices left out); a name that is not an identifier reads 'a ref'."""
    name = names.get(ref.var, "")
    name = name if NAME.fullmatch(name) else "a ref"
    for index, shape in zip(ref.index, ref.shape or ((),) * len(ref.index)):
        parts = list(index)
        while parts and isinstance(parts[-1], tuple) and len(shape) >= len(parts) \
                and parts[-1] == (0, shape[len(parts) - 1], 1):
            parts.pop()
        if parts:
            name += "[" + ", ".join(_one(i) for i in parts) + "]"
    return name


def _one(i: Any) -> str:
    if isinstance(i, tuple):
        start, size, stride = i
        return f"{start}:{start + size * stride}" + (f":{stride}" if stride != 1 else "")
    return str(i)
