"""The inputs and float64 references of a plan's draws, made on first use.

Input files are written only for runs that are really sent (a run the
schedule drops costs nothing); references are computed by the instructor's
numpy reference, here in the parent, from exactly the values the kernel gets.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from ...spec import Assignment, Case, mistakes
from . import inputs
from .runs import Draw


def load_reference(assignment: Assignment) -> Callable:
    """The instructor's float64 numpy reference (trusted code, run in the parent)."""
    return getattr(mistakes.reference_module(assignment), assignment.reference.partition(":")[2])


def nudge(made: list) -> list:
    """The inputs with one element changed: the first element of the first floating-point
    array set past every value it holds (twice its largest magnitude plus one, exact in
    its dtype), so a reduction that takes it in moves whatever it computes (a max too)."""
    i = _nudged_at(made)
    if i is None:
        return made
    ci = made[i]
    array = ci.array.copy()
    big = 2.0 * float(np.max(np.abs(array))) + 1.0
    array.flat[0] = inputs.round_to(np.array([big]), ci.dtype)[0]
    return [*made[:i], replace(ci, array=array), *made[i + 1:]]


def steady_period(a: Assignment, case: Case) -> tuple[str, int] | None:
    """(the reduction's dimension, its period) where a case can hold every block of the
    reduction alike: the spec names the dimension and the size every block size divides
    (``multiple_of``), and the case holds at least two of it; else None."""
    rule = next((d for d in a.dims if d.name == a.reduction_dim), None) if a.reduction_dim else None
    size = case.dim_map.get(a.reduction_dim) if rule is not None else None
    if rule is None or not isinstance(size, int) or rule.multiple_of < 2 or size < 2 * rule.multiple_of \
            or size % rule.multiple_of:
        return None
    return rule.name, rule.multiple_of


def steady(made: list, a: Assignment, case: Case) -> list:
    """The inputs with every block of the reduction alike: each array along the reduction's
    dimension repeats its first period (``steady_period``). A block of any size the
    handout allows (a multiple of the period) then holds the same values at every step
    of the reduction, so nothing a kernel carries from step to step changes."""
    found = steady_period(a, case)
    if found is None:
        return made
    dim, period = found
    out = []
    for spec, ci in zip(a.inputs, made):
        axes = [i for i, n in enumerate(spec.shape) if n == dim] if ci.kind == "array" else []
        array = ci.array
        for axis in axes:
            first = np.take(array, np.arange(period), axis=axis)
            array = np.concatenate([first] * (array.shape[axis] // period), axis=axis)
        out.append(replace(ci, array=array) if axes else ci)
    return out


def _nudged_at(made: list) -> int | None:
    return next((i for i, ci in enumerate(made) if ci.kind == "array" and ci.dtype != "int32"
                 and ci.array is not None and ci.array.size), None)


class DrawStore(Mapping):
    """Draw -> float64 reference (a Mapping, computed lazily); ``files(draw)``
    writes the draw's input files for the child."""

    def __init__(self, assignment: Assignment, reference_fn: Callable, in_dir: Path):
        self.assignment, self.reference_fn, self.in_dir = assignment, reference_fn, in_dir
        self._files: dict[Draw, list[dict]] = {}
        self._refs: dict[Draw, np.ndarray] = {}
        self._mistakes: tuple[mistakes.Mistake, ...] | None = None

    def mistakes(self) -> tuple[mistakes.Mistake, ...]:
        """The assignment's declared mistakes (``spec.mistakes``), loaded on first use; none
        when they do not load (``check`` says why: they choose a fix's words, never a grade)."""
        if self._mistakes is None:
            try:
                self._mistakes = mistakes.of(self.assignment)
            except Exception:   # noqa: BLE001 (a broken declaration loses a fix's words, nothing else)
                self._mistakes = ()
        return self._mistakes

    def nudged_input(self, draw: Draw) -> tuple[str, list[int]] | None:
        """The input a nudged draw changes (``nudge``'s rule, read from the spec: nothing is
        drawn again) and the element's index, else None."""
        a = self.assignment
        for spec in a.inputs:
            shape = a.shape(spec.shape, draw.case) if spec.kind == "array" else ()
            if spec.kind == "array" and a.dtype_of(spec.dtype, draw.case) != "int32" and math.prod(shape):
                return spec.name, [0] * len(shape)
        return None

    def _make(self, draw: Draw):
        made = inputs.make(self.assignment, draw.case, draw.seed)
        if draw.altered == "nudged":
            return nudge(made)
        return steady(made, self.assignment, draw.case) if draw.altered == "steady" else made

    def files(self, draw: Draw) -> list[dict]:
        if draw not in self._files:
            self._files[draw] = self._tables(draw) if draw.abstract else self._write(draw)
        return self._files[draw]

    def _tables(self, draw: Draw) -> list[dict]:
        """An abstract draw as the child gets it: shapes, and the small integer inputs' values
        (``inputs.index_tables``: a data-dependent grid's estimate reads them)."""
        out = self.abstract(draw)
        for i, ci in inputs.index_tables(self.assignment, draw.case, draw.seed).items():
            path = self.in_dir / f"{draw.index}_{i}.npy"
            np.save(path, ci.array, allow_pickle=False)
            path.chmod(0o644)
            out[i] = {"kind": "array", "file": str(path), "dtype": ci.dtype}
        return out

    def _write(self, draw: Draw) -> list[dict]:
        out = []
        for i, ci in enumerate(self._make(draw)):
            if ci.kind == "float":
                out.append({"kind": "float", "value": ci.value})
                continue
            path = self.in_dir / f"{draw.index}_{i}.npy"
            np.save(path, ci.array, allow_pickle=False)
            path.chmod(0o644)
            out.append({"kind": "array", "file": str(path), "dtype": ci.dtype})
        return out

    def abstract(self, draw: Draw) -> list[dict]:
        """The draw as the tracer sees it: shapes, dtypes and static floats, no data."""
        a, case = self.assignment, draw.case
        params = dict(case.params)
        return [{"kind": "float", "value": params[i.name]} if i.kind == "float" else
                {"kind": "abstract", "shape": list(a.shape(i.shape, case)),
                 "dtype": a.dtype_of(i.dtype, case)} for i in a.inputs]

    def arguments(self, draw: Draw) -> tuple[list, list[int]]:
        """The reference's arguments for a draw, and where its arrays are among them."""
        made = self._make(draw)
        return ([ci.array if ci.kind == "array" else ci.value for ci in made],
                [i for i, ci in enumerate(made) if ci.kind == "array"])

    def __getitem__(self, draw: Draw) -> np.ndarray:
        return self.reference(draw)

    def reference(self, draw: Draw, keep: bool = True) -> np.ndarray:
        """The draw's float64 reference (``keep=False``: not cached, unless it already is)."""
        if draw.abstract:
            raise KeyError("an abstract draw has no reference")
        if draw in self._refs:
            return self._refs[draw]
        args = [ci.array if ci.kind == "array" else ci.value for ci in self._make(draw)]
        ref = np.asarray(self.reference_fn(*args), dtype=np.float64)
        if keep:
            self._refs[draw] = ref
        return ref

    def forget(self, draws) -> None:
        """Drop these draws' references and input files (a sweep's finished key)."""
        for draw in draws:
            self._refs.pop(draw, None)
            for f in self._files.pop(draw, []):
                if f.get("file"):
                    Path(f["file"]).unlink(missing_ok=True)

    def __iter__(self) -> Iterator[Draw]:
        return iter(self._refs)

    def __len__(self) -> int:
        return len(self._refs)
