"""Where each part of the graded program is in the student's file, read from
the checked program document and the file's own text (pure data; no JAX).

The tracer records, for every equation, the student's own line behind it
(``serial.Encoder.source``: file name, line, function); ``calls`` reads the
parts of a ``pl.pallas_call`` that leave no equation (the ``grid=`` keyword, an
index map that computes nothing). The feedback points at the line that holds a
fault and quotes it as written: "at add.py:15: grid=(..., n // 128 + 1)".
"""
from __future__ import annotations

import ast
import functools
import math
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator

from ...pallas_surface.program import dmas, unroll
from ...spec import mistakes
from . import calls, dataflow, literals, resets

MAX_QUOTED = 160        # characters of a quoted line (a longer one is cut, saying so)


@dataclass(frozen=True)
class Place:
    where: str           # the line as the student knows it: "add.py:15" (a notebook: "nb.ipynb cell 3, line 4")
    text: str = ""       # the line as written, its indentation removed ("" when it cannot be read)


@dataclass(frozen=True)
class SemMismatch:
    """A DMA wait on another semaphore than its copy's start signals (``dmas.mismatches``)."""
    wait: Place          # the .wait()
    start: Place         # the .start() of the same copy (source and destination, static indices)
    waits_on: str        # the semaphore as written: "sem[1]"
    started_on: str      # "sem[0]"
    copy: str            # the copy's destination as the wait names it: "buf[0]"
    kind: str = "semaphore"   # or "slot": the copy was started into another slot (``started_into``)
    started_into: str = ""    # the start's destination ("slot": "buf[1]")
    source: str = ""          # what the copy reads: "x_hbm[64:128]"


@dataclass(frozen=True)
class KernelSource:
    call: str            # where the pl.pallas_call is: "matmul.py:29" (a notebook: "nb.ipynb cell 3, line 4")
    caller: str          # the function that calls it
    body: str = ""       # the kernel function's name ("" when no line of it is the student's)
    lines: str = ""      # where the kernel body's traced lines are: "matmul.py:14-22"
    at: Place | None = None                  # the call's own line, quoted
    grid_at: Place | None = None             # the grid= keyword
    semantics: Place | None = None           # dimension_semantics
    in_maps: tuple[Place | None, ...] = ()   # each input's index map (its BlockSpec)
    out_maps: tuple[Place | None, ...] = ()
    scratch: Place | None = None
    stores: tuple[Place, ...] = ()           # the kernel's writes of an output (ref[...] = ..., pltpu.store)
    dma_starts: tuple[Place, ...] = ()       # the kernel's async copies' .start()
    refs: tuple[str, ...] = ()               # the kernel's ref names, inputs then outputs (errors name them)
    inputs: int = 0                          # how many of refs are inputs
    cores: int = 1                           # a pl.kernel mesh's cores (1: a grid)
    grid: tuple[int, ...] = ()               # its grid at the first correctness case's shapes
    sem_mismatches: tuple[SemMismatch, ...] = ()   # waits on another semaphore than their copy's, one per line
    narrow_dots: tuple[Place, ...] = ()      # matrix products with a 16-bit result (no preferred_element_type)
    resets: tuple[tuple[int, Place], ...] = ()   # pl.when(program_id(axis) == 0) blocks that store: (axis, line)
    dimension_semantics: tuple[str, ...] = ()    # as the compiler params name them ("parallel", ...)
    # The kernel's reductions (max, sum, ...): (axes, the reduced value's rank, line), in order.
    reductions: tuple[tuple[tuple[int, ...], int, Place], ...] = ()
    scratch_refs: tuple[str, ...] = ()       # the kernel's scratch refs' names (what it carries across steps)
    narrow_scratch: tuple[int, ...] = ()     # scratch refs (their place among them) of a 16-bit dtype
    constants: tuple[tuple[float, Place], ...] = ()   # the float numbers it computes with (a scale), at each line
    unused_inputs: tuple[tuple[str, Place | None], ...] = ()   # inputs whose value reaches no write: (ref, its read)
    ops: tuple[tuple[str, Place], ...] = ()  # (primitive, line) a fix may name (OPS; narrow_read: a 16-bit cast)
    never_run: tuple[tuple[Place, Place], ...] = ()   # output stores under a pl.when no grid point runs: (store, when)

    def lines_of(self, *prims: str) -> tuple[Place, ...]:
        """The kernel's distinct lines that compute one of ``prims``, in order."""
        return tuple(dict.fromkeys(p for q, p in self.ops if q in prims))


@dataclass(frozen=True)
class Sources:
    """The graded program's places: its kernels, the work done outside them, and
    any line of the student's module, quoted."""
    kernels: tuple[KernelSource, ...] = ()
    outside: tuple[tuple[str, Place], ...] = ()     # (primitive, its first line) outside every kernel
    case: str = ""                                  # the case whose program this is (the first correctness case)
    file: str = ""                                  # the module's name as the tracer records it
    text: tuple[str, ...] = ()                      # the module's lines as written
    where: Callable[[str, int], str] | None = field(default=None, compare=False, repr=False)

    def place(self, file: str, line: Any) -> Place | None:
        """A line of the student's module, quoted; None for another file or a line it does not have."""
        if file != self.file or not isinstance(line, int) or not 1 <= line <= len(self.text) or self.where is None:
            return None
        return Place(self.where(file, line), quote(self.text[line - 1]))


    def innermost(self, frames: Any) -> Place | None:
        """The innermost of a traceback's frames ('File "add.py", line 15, in f\\n
        code') that is a line of the student's module, quoted; None when none is."""
        for frame in reversed(frames if isinstance(frames, (list, tuple)) else ()):
            m = _FRAME.match(str(frame))
            place = self.place(m[1], int(m[2])) if m else None
            if place is not None:
                return place
        return None

    def shape_reads(self, dim: int, rank: int) -> tuple[tuple[Place, str], ...]:
        """Every ``<array>.shape[dim]`` the module reads (``[-1]`` counted as the last of
        ``rank`` dimensions), as (its line, the expression as written), in line order.
        Read from the text alone (nothing runs); () when it does not parse."""
        tree, joined = _module(self.text)
        if tree is None:
            return ()
        found = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                    and node.value.attr == "shape" and isinstance(node.slice, ast.Constant) \
                    and isinstance(node.slice.value, int) and not isinstance(node.slice.value, bool) \
                    and node.slice.value % max(rank, 1) == dim and -rank <= node.slice.value < rank:
                place = self.place(self.file, node.lineno)
                if place is not None:
                    found.append((node.lineno, place, ast.get_source_segment(joined, node) or ""))
        return tuple((p, expr) for _n, p, expr in sorted(found, key=lambda x: x[0]))

    def writes_to(self, name: str) -> tuple[Place, ...]:
        """Every line that stores into ``name[...]`` (``name[...] = ...``, ``name[...] += ...``),
        in line order; read from the text alone, () when it does not parse."""
        tree, _joined = _module(self.text)
        return () if tree is None else \
            tuple(p for p in (self.place(self.file, n) for n in calls.store_lines(tree, name)) if p is not None)


    def carried_writes(self, names: tuple[str, ...]) -> tuple[tuple[str, Place], ...]:
        """Every store into one of ``names`` (scratch refs) outside a block that runs at a
        first step only (a function under ``pl.when(... == 0)``: the reset): what a step
        hands the next, as (ref, line), in line order. From the text alone."""
        tree, _joined = _module(self.text)
        if tree is None:
            return ()
        resets = [range(n.lineno, (n.end_lineno or n.lineno) + 1) for n in ast.walk(tree)
                  if isinstance(n, ast.FunctionDef) and any(calls.first_step(d) for d in n.decorator_list)]
        found = {n: name for name in names for n in calls.store_lines(tree, name) if not any(n in r for r in resets)}
        return tuple((found[n], p) for n in sorted(found) if (p := self.place(self.file, n)) is not None)


    def scratch_names(self, k: KernelSource) -> tuple[str, ...]:
        """The kernel's scratch refs by the names its body gives them: the traced names, or
        where those are not names (a ``lambda *refs`` wrapper: 'refs[4]'), the trailing
        positional parameters of the kernel function ``k.body`` (refs come in order:
        index operands, inputs, outputs, scratch)."""
        if all(n.isidentifier() for n in k.scratch_refs):
            return k.scratch_refs
        tree, _joined = _module(self.text)
        fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == k.body), None) \
            if tree is not None and k.body else None
        if fn is None:
            return ()
        args = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        args = args[:len(args) - len(fn.args.defaults)]
        return tuple(args[len(args) - len(k.scratch_refs):]) if len(args) >= len(k.scratch_refs) else ()


@functools.lru_cache(maxsize=2)
def _module(text: tuple[str, ...]) -> tuple[ast.Module | None, str]:
    """The module's syntax tree (None: it does not parse) and its text, parsed once for
    every question the feedback asks of it."""
    joined = "\n".join(text)
    return calls.parse(joined), joined


_FRAME = re.compile(r'File "([^"]*)", line (\d+)')


def quote(line: str) -> str:
    text = line.strip()
    return text if len(text) <= MAX_QUOTED else text[:MAX_QUOTED] + " ..."


def _eqns(node: Any, skip_kernels: bool = False) -> Iterator[dict]:
    """Every equation under ``node``, in document order (into nested jaxprs; a
    pallas_call's own kernel only when ``skip_kernels`` is false)."""
    if isinstance(node, dict):
        if "p" in node and "params" in node:
            yield node
            if skip_kernels and node["p"] in KERNEL_CALLS:
                return
        for value in node.values():
            yield from _eqns(value, skip_kernels)
    elif isinstance(node, list):
        for value in node:
            yield from _eqns(value, skip_kernels)


def _sourced(node: Any, src: Any = None) -> Iterator[tuple[dict, Any]]:
    """Every equation under ``node`` with its source line, or where it records none, its
    nearest enclosing equation's (jnp.where's own jit records none for its select_n)."""
    if isinstance(node, dict):
        if "p" in node and "params" in node:
            src = node.get("src") if node.get("src") is not None else src
            yield node, src
        for value in node.values():
            yield from _sourced(value, src)
    elif isinstance(node, list):
        for value in node:
            yield from _sourced(value, src)


KERNEL_CALLS = ("pallas_call", "mpmd_map")
STORES = ("swap", "masked_swap")
OPS = frozenset(p for prims in mistakes.AT.values() for p in prims)   # (a mistake's ``at``; exp: overflow)


def _span(where: Callable[[str, int], str], file: str, lines: list[int]) -> str:
    """'matmul.py:14-22' (a notebook cell's 'nb.ipynb cell 3, line 4-12'); two
    places joined by 'to' when the lines are in different cells."""
    start, end = where(file, min(lines)), where(file, max(lines))
    if start == end:
        return start
    head, _sep, _n = start.rpartition(":" if ":" in start else " ")
    same = end.rpartition(":" if ":" in end else " ")[0] == head
    return f"{start}-{end.rpartition(':' if ':' in end else ' ')[2]}" if same else f"{start} to {end}"


def _params(eqn: dict) -> dict:
    return {k: v for k, v in eqn["params"]} if isinstance(eqn.get("params"), list) else {}


def _field(dc: Any, name: str) -> Any:
    """A dataclass value's field in the document ({"dc": [type, [[name, value], ...]]})."""
    if isinstance(dc, dict) and isinstance(dc.get("dc"), list) and len(dc["dc"]) == 2:
        return next((v for k, v in dc["dc"][1] if k == name), None)
    return None


def _kernel_jaxpr(eqn: dict) -> dict | None:
    p = _params(eqn)
    closed = p.get("jaxpr") if eqn["p"] == "pallas_call" else None
    if closed is None and isinstance(p.get("jaxprs"), dict):        # mpmd_map: one jaxpr per mesh
        closed = next(iter(p["jaxprs"].get("t") or []), None)
    # A closed jaxpr (0.12: {"cjx": ...}) or an open one (0.10.2's pallas_call: {"jx": ...}).
    jaxpr = closed.get("cjx", closed.get("jx", closed)) if isinstance(closed, dict) else None
    jaxpr = jaxpr.get("jaxpr", jaxpr) if isinstance(jaxpr, dict) else None
    return jaxpr if isinstance(jaxpr, dict) and "eqns" in jaxpr else None


# A product's result types the TPU's matrix unit cannot accumulate in (Mosaic: "Expected
# matmul acc to be 32-bit"); the document names dtypes as numpy does.
NARROW = ("bfloat16", "float16")


def _dt(atom: Any) -> str | None:     # (``literals._dtype``, for an atom of any shape a forged document has)
    return literals._dtype(atom) if isinstance(atom, dict) else None


def _narrow_dot(e: dict, p: str = "dot_general") -> bool:
    """A dot_general (an equation of ``p``) whose result is 16-bit, as the document says it
    (a claim: a wrong answer moves only where the feedback points)."""
    return e.get("p") == p and isinstance(e.get("out"), list) and bool(e["out"]) and _dt(e["out"][0]) in NARROW


def _narrow_reads(node: Any) -> list[Any]:
    """The sources of 16-bit casts of a float32 value read from a ref (an input rounded
    before it is computed with: ``x_ref[...].astype(jnp.bfloat16)``)."""
    read = {o.get("v") for e in _eqns(node) if e.get("p") == "get" for o in e.get("out") or []
            if _dt(o) == "float32"}
    return [e.get("src") for e in _eqns(node) if _narrow_dot(e, "convert_element_type")
            and isinstance(e.get("in"), list) and e["in"] and isinstance(e["in"][0], dict)
            and e["in"][0].get("v") in read]


# The reductions whose axis the feedback may name (a max along the wrong axis, ...).
REDUCTIONS = ("reduce_max", "reduce_min", "reduce_sum", "reduce_prod", "argmax", "argmin")


def _reduction(e: dict) -> tuple[tuple[int, ...], int] | None:
    """(axes, the reduced value's rank) of a reduction as the document says it, else None."""
    if e.get("p") not in REDUCTIONS or not isinstance(e.get("out"), list) or len(e["out"]) != 1:
        return None
    axes = _params(e).get("axes")
    axes = axes.get("t") if isinstance(axes, dict) else axes
    aval = e["out"][0].get("aval") if isinstance(e["out"][0], dict) else None
    sa = aval.get("sa") if isinstance(aval, dict) else None
    if not isinstance(axes, list) or not axes or not all(isinstance(a, int) and not isinstance(a, bool)
                                                          for a in axes) \
            or not isinstance(sa, list) or not sa or not isinstance(sa[0], list):
        return None
    rank = len(sa[0]) + (len(axes) if e["p"].startswith("reduce") else 1)
    return (tuple(axes), rank) if all(0 <= a < rank for a in axes) and rank <= 8 else None


def _narrow_scratch(jaxpr: dict | None, first: int) -> tuple[int, ...]:
    """The scratch refs (by place among the scratch) whose dtype is 16-bit, as the document says."""
    out = []
    for i, v in enumerate((jaxpr or {}).get("invars", [])[first:]):
        ref = v.get("aval", {}).get("ref") if isinstance(v, dict) and isinstance(v.get("aval"), dict) else None
        sa = ref[0].get("sa") if isinstance(ref, list) and ref and isinstance(ref[0], dict) else None
        dt = sa[1].get("dt") if isinstance(sa, list) and len(sa) > 1 and isinstance(sa[1], dict) else None
        if dt in NARROW:
            out.append(i)
    return tuple(out)


# Numbers every kernel computes with (a mean's half, a square's two): no scale to check.
PLAIN = frozenset({0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0})


def _constants(node: Any, most: int = 8) -> list[tuple[float, Any]]:
    """The float scalar literals of a kernel's equations, each at every equation's source
    that uses it, the first one first (``literals._scalar``: the document's own literal forms)."""
    found: dict[tuple[float, Any], None] = {}
    values: set[float] = set()      # (at most ``most`` numbers, each at up to four lines on average)
    for e in _eqns(node):
        for atom in e.get("in") if isinstance(e.get("in"), list) else ():
            try:
                value = literals._scalar(atom) if isinstance(atom, dict) and "lit" in atom else None
            except (ValueError, TypeError):     # (a literal the grammar let through, not read)
                value = None
            if type(value) is float and math.isfinite(value) and value not in PLAIN \
                    and (value in values or len(values) < most) and len(found) < 4 * most:
                values.add(value)
                found.setdefault((value, e["src"] if isinstance(e.get("src"), int) else None), None)
    return list(found)


def _writes(jaxpr: dict, refs: set, found: list) -> None:
    """Equations that store into ``refs`` (var ids), following them into nested
    jaxprs by position (a cond's branches, a loop's body: their trailing operands)."""
    for e in jaxpr.get("eqns", []):
        ins = [a.get("v") for a in e.get("in", []) if isinstance(a, dict)]
        if e.get("p") in STORES and ins and ins[0] in refs:
            found.append(e.get("src"))
        for sub in _subjaxprs(e):
            invars = [v.get("v") for v in sub.get("invars", []) if isinstance(v, dict)]
            n = min(len(invars), len(ins))
            inner = {invars[len(invars) - n + i] for i in range(n) if ins[len(ins) - n + i] in refs}
            if inner:
                _writes(sub, inner, found)


def _subjaxprs(eqn: dict) -> Iterator[dict]:
    for value in _params(eqn).values():
        stack = [value]
        while stack:
            v = stack.pop()
            if isinstance(v, dict):
                if "eqns" in v and "invars" in v:
                    yield v
                    continue
                stack.extend(v.values())
            elif isinstance(v, list):
                stack.extend(v)


def _counts(eqn: dict) -> tuple[int, int, int]:
    """(index operands, inputs, outputs) of a pallas_call's kernel refs."""
    gm = _params(eqn).get("grid_mapping")
    values = [_field(gm, k) for k in ("num_index_operands", "num_inputs", "num_outputs")]
    return tuple(v if isinstance(v, int) else 0 for v in values)


def _grid(eqn: dict) -> tuple[int, ...]:
    grid = _field(_params(eqn).get("grid_mapping"), "grid")
    items = grid.get("t") if isinstance(grid, dict) else None
    return tuple(items) if isinstance(items, list) and all(type(g) is int for g in items) else ()


def _cores(eqn: dict) -> int:
    meshes = _params(eqn).get("meshes") or _params(eqn).get("mesh")
    for mesh in (meshes.get("t") or []) if isinstance(meshes, dict) and "t" in meshes else [meshes]:
        n = _field(mesh, "num_cores")
        if isinstance(n, int) and n > 1:
            return n
    return 1


class _Reader:
    def __init__(self, doc: dict, where: Callable[[str, int], str], text: tuple[str, ...], file: str):
        self.sources = [s for s in doc.get("sources", []) if isinstance(s, list) and len(s) == 3]
        self.where, self.text, self.file = where, text, file
        self.tree = calls.parse("\n".join(text)) if text else None

    def source(self, index: Any) -> tuple[str, int, str] | None:
        if not isinstance(index, int) or not 0 <= index < len(self.sources):
            return None
        file, line, function = self.sources[index]
        return (str(file), int(line), str(function)) if isinstance(line, int) else None

    def place(self, file: str, line: int | None) -> Place | None:
        if line is None:
            return None
        text = quote(self.text[line - 1]) if file == self.file and 1 <= line <= len(self.text) else ""
        return Place(self.where(file, line), text)

    def places(self, srcs) -> tuple[Place, ...]:
        seen = dict.fromkeys(s for i in srcs if (s := self.source(i)) is not None)
        return tuple(p for s in seen if (p := self.place(s[0], s[1])) is not None)

    def kernel(self, eqn: dict) -> KernelSource | None:
        call = self.source(eqn.get("src"))
        if call is None:
            return None
        jaxpr = _kernel_jaxpr(eqn)
        body = [s for e in _eqns(eqn["params"]) if (s := self.source(e.get("src"))) is not None]
        name, span = "", ""
        if body:
            (file, name), _n = Counter((s[0], s[2]) for s in body).most_common(1)[0]
            span = _span(self.where, file, sorted({s[1] for s in body if (s[0], s[2]) == (file, name)}))
            name = name.rpartition(".")[2]     # (a nested function's qualname: 'f.<locals>.step' -> 'step')
        nio, nin, nout = _counts(eqn)
        invars = [v.get("v") for v in (jaxpr or {}).get("invars", []) if isinstance(v, dict)]
        written: list = []
        if jaxpr is not None and nout:
            _writes(jaxpr, set(invars[nio + nin:nio + nin + nout]), written)
        names = [str(n) for n in (jaxpr or {}).get("names") or []]
        lines = calls.of_call(self.tree, call[1]) if self.tree is not None and call[0] == self.file else None
        at = (lambda n: self.place(call[0], n)) if lines is not None else (lambda n: None)
        return KernelSource(
            self.where(call[0], call[1]), call[2], name, span, self.place(call[0], call[1]),
            at(lines.grid) if lines else None, at(lines.semantics) if lines else None,
            tuple(at(n) for n in lines.in_maps) if lines else (),
            tuple(at(n) for n in lines.out_maps) if lines else (), at(lines.scratch) if lines else None,
            self.places(written), self.places(e.get("src") for e in _eqns(eqn["params"]) if e["p"] == "dma_start"),
            tuple(names[nio:nio + nin + nout]) if len(names) >= nio + nin + nout else (), nin, _cores(eqn),
            _grid(eqn), self.mismatches(jaxpr, names, _grid(eqn)),
            self.places(e.get("src") for e in _eqns(eqn["params"]) if _narrow_dot(e)),
            tuple((axis, p) for axis, src in resets.resets(jaxpr) if (p := self._at(src)) is not None),
            resets.semantics(_params(eqn).get("compiler_params")),
            tuple((*r, p) for e in _eqns(eqn["params"]) if (r := _reduction(e)) and (p := self._at(e.get("src")))),
            tuple(names[nio + nin + nout:]), _narrow_scratch(jaxpr, nio + nin + nout),
            tuple(dict.fromkeys((c, p) for c, src in _constants(eqn["params"]) if (p := self._at(src)) is not None)),
            tuple((names[nio + k] if len(names) > nio + k else f"input {k}", next(filter(None, map(self._at, srcs)),
                                                                                  None))
                  for k, srcs in dataflow.unused_inputs(jaxpr, nio, nin)),
            tuple((e["p"], p) for e, src in _sourced(eqn["params"]) if e["p"] in OPS and (p := self._at(src)))
            + tuple(("narrow_read", p) for src in _narrow_reads(eqn["params"]) if (p := self._at(src))),
            self.never_run(jaxpr, _grid(eqn), written))

    def never_run(self, jaxpr: dict | None, grid: tuple[int, ...], written: list) -> tuple[tuple[Place, Place], ...]:
        """The output stores under a pl.when that no grid point runs (``unroll.never_run``), with its line."""
        found = unroll.never_run(jaxpr, grid) if jaxpr is not None and written else None
        return tuple(dict.fromkeys((st, c) for e, cond in found or () if e.get("src") in written
                                   and (st := self._at(e.get("src"))) and (c := self._at(cond.get("src")))))

    def _at(self, src: Any) -> Place | None:
        found = self.source(src)
        return self.place(found[0], found[1]) if found is not None else None

    def mismatches(self, jaxpr: dict | None, names: list[str], grid: tuple[int, ...]) -> tuple[SemMismatch, ...]:
        """The kernel's waits on a semaphore their copy was not started with, or for a copy
        started into another slot (``dmas.mismatches``), the first at each line."""
        found = dmas.copies(jaxpr, grid) if jaxpr is not None else None
        if not found:
            return ()
        invars = [v.get("v") for v in jaxpr.get("invars", []) if isinstance(v, dict)]
        named = dict(zip(invars, names)) if len(invars) == len(names) else {}
        out: dict[str, SemMismatch] = {}
        for m in dmas.mismatches(found):
            wait, start = (self.source(c.at) for c in (m.wait, m.start))
            wait, start = (self.place(s[0], s[1]) if s is not None else None for s in (wait, start))
            if wait is not None and start is not None and wait.where not in out:
                out[wait.where] = SemMismatch(wait, start, dmas.written(m.wait.sem, named),
                                              dmas.written(m.start.sem, named), dmas.written(m.wait.dst, named),
                                              m.kind, dmas.written(m.start.dst, named), dmas.written(m.wait.src, named))
        return tuple(out.values())


def with_narrow_dots(found: Sources, others: list[Sources]) -> Sources:
    """``found`` with the 16-bit products and scratch other signatures' programs of the
    same one kernel have (a bfloat16 case's ``jnp.dot`` is 16-bit, a float32 case's is
    not; a scratch of ``x.dtype`` too)."""
    if len(found.kernels) != 1:
        return found
    k = found.kernels[0]
    dots, scratch = dict.fromkeys(k.narrow_dots), dict.fromkeys(k.narrow_scratch)
    for o in others:
        if len(o.kernels) == 1 and o.kernels[0].call == k.call:
            dots.update(dict.fromkeys(o.kernels[0].narrow_dots))
            scratch.update(dict.fromkeys(o.kernels[0].narrow_scratch))
    return replace(found, kernels=(replace(k, narrow_dots=tuple(dots), narrow_scratch=tuple(sorted(scratch))),))


def of_program(doc: dict, where: Callable[[str, int], str], text: str = "", file: str = "",
               case: str = "") -> Sources:
    """The places of a program document (``case``'s). ``where(file, line)`` names a line
    as the student knows it (a notebook's cell); ``text``: the module ``file``'s source."""
    lines = tuple(text.splitlines())
    r = _Reader(doc, where, lines, file)
    kernels, outside = [], {}
    for eqn in _eqns(doc.get("program"), skip_kernels=True):
        if eqn["p"] in KERNEL_CALLS:
            k = r.kernel(eqn)
            if k is not None:
                kernels.append(k)
        elif eqn["p"] not in outside and (s := r.source(eqn.get("src"))) is not None:
            outside[eqn["p"]] = r.place(s[0], s[1])
    return Sources(tuple(kernels), tuple(outside.items()), case, file, lines, where)
