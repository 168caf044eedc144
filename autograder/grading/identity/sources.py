"""Where each pl.pallas_call of the graded program is in the student's file,
read from the checked program document (pure data; no JAX).

The tracer records, for every equation, the student's own line behind it
(``serial.Encoder.source``: file name, line, function). The feedback's fix
lines name those lines, so a student reads "in the pl.pallas_call at
matmul.py:29" rather than a rule in general terms.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterator


@dataclass(frozen=True)
class KernelSource:
    call: str            # where the pl.pallas_call is: "matmul.py:29" (a notebook: "nb.ipynb cell 3, line 4")
    caller: str          # the function that calls it
    body: str = ""       # the kernel function's name ("" when no line of it is the student's)
    lines: str = ""      # where the kernel body's traced lines are: "matmul.py:14-22"


def _eqns(node: Any, skip_kernels: bool = False) -> Iterator[dict]:
    """Every equation under ``node``, in document order (into nested jaxprs; a
    pallas_call's own kernel only when ``skip_kernels`` is false)."""
    if isinstance(node, dict):
        if "p" in node and "params" in node:
            yield node
            if skip_kernels and node["p"] == "pallas_call":
                return
        for value in node.values():
            yield from _eqns(value, skip_kernels)
    elif isinstance(node, list):
        for value in node:
            yield from _eqns(value, skip_kernels)


def _span(where: Callable[[str, int], str], file: str, lines: list[int]) -> str:
    """'matmul.py:14-22' (a notebook cell's 'nb.ipynb cell 3, line 4-12'); two
    places joined by 'to' when the lines are in different cells."""
    start, end = where(file, min(lines)), where(file, max(lines))
    if start == end:
        return start
    head, _sep, _n = start.rpartition(":" if ":" in start else " ")
    same = end.rpartition(":" if ":" in end else " ")[0] == head
    return f"{start}-{end.rpartition(':' if ':' in end else ' ')[2]}" if same else f"{start} to {end}"


def of_program(doc: dict, where: Callable[[str, int], str]) -> tuple[KernelSource, ...]:
    """Each pallas_call of a program document, in order. ``where(file, line)``
    names a line as the student knows it (a notebook's cell)."""
    sources = [s for s in doc.get("sources", []) if isinstance(s, list) and len(s) == 3]

    def source(index: Any) -> tuple[str, int, str] | None:
        if not isinstance(index, int) or not 0 <= index < len(sources):
            return None
        file, line, function = sources[index]
        return (str(file), int(line), str(function)) if isinstance(line, int) else None

    out = []
    for eqn in _eqns(doc.get("program"), skip_kernels=True):
        if eqn["p"] != "pallas_call":
            continue
        call = source(eqn.get("src"))
        if call is None:
            continue
        body = [s for e in _eqns(eqn["params"]) if (s := source(e.get("src"))) is not None]
        if not body:
            out.append(KernelSource(where(call[0], call[1]), call[2]))
            continue
        (file, function), _n = Counter((s[0], s[2]) for s in body).most_common(1)[0]
        lines = sorted({s[1] for s in body if (s[0], s[2]) == (file, function)})
        out.append(KernelSource(where(call[0], call[1]), call[2], function, _span(where, file, lines)))
    return tuple(out)
