"""Mistakes an instructor has seen, declared beside the reference: a wrong formula the
grader recognises by its result, so the fix names it.

``reference.py`` may define ``MISTAKES``, a dict from a name (a noun phrase that
completes "the reference computes with ...": "a causal mask") to a dict of

- ``compute``: a function of the entry function's arguments (float64 numpy, like the
  reference) returning what the mistaken kernel computes. Where the result depends on
  the kernel's tiling, it takes a keyword ``blocks``: each input's block shape, by the
  spec's input name, as the kernel's BlockSpecs give it (an input with none is absent);
- ``fix``: what to change, in the instructor's words, shown as written;
- ``at`` (optional): which line of the kernel holds the fault, one of ``AT``; the fix
  names that line when the kernel has exactly one such line.

When a kernel's wrong output on a visible case is what one mistake computes, within
the case's own tolerance, its fix is shown. It is evidence for the fix, never a charge:
the score comes from the reference alone, and a secret case is never tried.
"""
from __future__ import annotations

import importlib.util
import inspect
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Callable

from .model import Assignment
from .reader import SpecError

# The kernel lines a mistake's ``at`` may name, by the primitive the line computes.
AT = {"where": ("select_n",), "division": ("div",), "exp": ("exp", "exp2"), "dot": ("dot_general",),
      "accumulator": (), "store": ()}    # (accumulator: the scratch update that adds a product; store: the output's)
# The longest fix shown (a paragraph; a longer one belongs in the handout).
MAX_FIX = 600


@dataclass(frozen=True)
class Mistake:
    name: str
    compute: Callable
    fix: str
    at: str | None = None
    tiled: bool = False          # compute takes the kernel's block shapes (``blocks=``)

    def __call__(self, args: list, blocks: dict[str, tuple[int, ...]]):
        return self.compute(*args, blocks=blocks) if self.tiled else self.compute(*args)


def reference_module(a: Assignment) -> ModuleType:
    """The instructor's reference file, imported (trusted code, run in the parent)."""
    path = a.folder / a.reference.partition(":")[0]
    spec = importlib.util.spec_from_file_location(f"_reference_{a.slug}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def of(a: Assignment, module: ModuleType | None = None) -> tuple[Mistake, ...]:
    """The assignment's declared mistakes, validated (a broken one raises SpecError)."""
    module = module if module is not None else reference_module(a)
    path = a.folder / a.reference.partition(":")[0]
    raw = getattr(module, "MISTAKES", {})
    if not isinstance(raw, dict):
        raise SpecError(path, "MISTAKES", "must be a dict from a name to {compute, fix, at}", type(raw).__name__)
    return tuple(_one(path, name, entry) for name, entry in raw.items())


def _one(path: Path, name, entry) -> Mistake:
    key = f"MISTAKES[{name!r}]"
    if not isinstance(name, str) or not name.strip():
        raise SpecError(path, key, "a mistake's name must be a non-empty string", name)
    if not isinstance(entry, dict) or set(entry) - {"compute", "fix", "at"}:
        raise SpecError(path, key, "must be a dict with keys compute, fix and (optional) at",
                        sorted(entry) if isinstance(entry, dict) else type(entry).__name__)
    compute, fix, at = entry.get("compute"), entry.get("fix"), entry.get("at")
    if not callable(compute):
        raise SpecError(path, f"{key}['compute']", "must be a function of the entry function's arguments", compute)
    if not isinstance(fix, str) or not fix.strip() or len(fix) > MAX_FIX:
        raise SpecError(path, f"{key}['fix']", f"must be a non-empty string of at most {MAX_FIX} characters", fix)
    if at is not None and at not in AT:
        raise SpecError(path, f"{key}['at']", f"must be one of {', '.join(AT)} (or absent)", at)
    try:
        tiled = "blocks" in inspect.signature(compute).parameters
    except (TypeError, ValueError):
        tiled = False
    return Mistake(name.strip(), compute, " ".join(fix.split()), at, tiled)
