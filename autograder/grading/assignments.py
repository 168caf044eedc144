"""Assignments read with the probes' vocabulary: ``find`` (by slug), ``load`` (a folder).

The spec reader sits below grading and names no probe; each probe's module
carries its own terms (``probes.TERMS``). Reading a spec needs both, so the two
meet here, above the probes, and every command reads its assignment through
this module: a new probe is then its one module plus its registration.
"""
from __future__ import annotations

from pathlib import Path

from ..spec import Assignment, locate, read
from .probes import TERMS


def load(folder: Path | str) -> Assignment:
    """Read and validate ``<folder>/spec.toml``."""
    return read(folder, TERMS)


def find(slug: str, root: Path | None = None) -> Assignment:
    """Assignment ``slug`` where assignments are looked for (``spec.search_path``)."""
    return load(locate(slug, root))
