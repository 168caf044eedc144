"""Assignment specs: ``<assignments>/<slug>/spec.toml`` as frozen, validated dataclasses.

Where assignments are found, first match wins: the folder given with
``--assignments``; ``$PALLAS_AUTOGRADER_ASSIGNMENTS``; ``./assignments`` in the
current directory (a checkout, a student kit); the folder beside the installed
package (a checkout, or the Gradescope zip). ``read`` validates a spec against
the vocabulary of probes it is handed; ``autograder.grading.assignments`` hands
it the registry's (``find``, ``load``). A wheel carries no assignments:
their hidden cases and references are not for everyone who installs it.
"""
from __future__ import annotations

import os
from pathlib import Path

from .model import (
    CPU_RUNGS,
    DTYPES,
    VISIBILITIES,
    Assignment,
    Case,
    Checks,
    DimRule,
    InputSpec,
    Limits,
    OutputSpec,
    ProbeRubric,
    Production,
    Speed,
    SpeedSize,
    Stress,
    Structure,
    Tolerance,
)
from .reader import SpecError, TableReader
from .tables import load as read, read_own_tolerance
from .vocabulary import ProbeTerms, SpecContext, Vocabulary

ENV = "PALLAS_AUTOGRADER_ASSIGNMENTS"


class UnknownAssignment(LookupError):
    """No assignment of that slug where assignments are looked for: says which exist, and where."""

__all__ = ["Assignment", "Case", "Checks", "CPU_RUNGS", "DTYPES", "DimRule", "InputSpec", "Limits",
           "OutputSpec", "ProbeRubric", "ProbeTerms", "Production", "SpecContext", "SpecError", "Speed",
           "SpeedSize", "Stress", "Structure",
           "TableReader", "Tolerance", "UnknownAssignment", "VISIBILITIES", "Vocabulary", "assignments_root",
           "available", "locate", "read", "read_own_tolerance", "search_path"]


def _holds_specs(folder: Path) -> bool:
    return folder.is_dir() and any((p / "spec.toml").is_file() for p in folder.iterdir())


def search_path(explicit: Path | None = None) -> list[Path]:
    """Where assignments may be, in the order they are tried."""
    found = [Path(explicit)] if explicit else []
    if os.environ.get(ENV):
        found.append(Path(os.environ[ENV]))
    found += [Path.cwd() / "assignments", Path(__file__).resolve().parent.parent.parent / "assignments"]
    return found


def assignments_root(explicit: Path | None = None) -> Path:
    """The folder holding assignment folders (see the module docstring)."""
    candidates = search_path(explicit)
    if explicit or os.environ.get(ENV):
        return candidates[0]        # an explicit choice is never second-guessed
    return next((c for c in candidates if _holds_specs(c)), candidates[-1])


def available(root: Path | None = None) -> list[str]:
    root = assignments_root(root)
    return sorted(p.name for p in root.iterdir() if (p / "spec.toml").is_file()) if root.is_dir() else []


def locate(slug: str, root: Path | None = None) -> Path:
    """The folder of assignment ``slug``. (Reading it needs the probes' vocabulary,
    which lives above this layer: ``grading.assignments.find`` reads it.)"""
    folder = assignments_root(root)
    if slug not in available(folder):
        where = ", ".join(str(p) for p in ([folder] if root or os.environ.get(ENV) else search_path()))
        raise UnknownAssignment(f"unknown assignment {slug!r}; valid: {', '.join(available(folder)) or '(none)'}"
                          f" (looked in {where}; give --assignments DIR or set {ENV})")
    return folder / slug
