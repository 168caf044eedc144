"""Every reader of a student's program document in the parent, under one guard
(pure data; no JAX).

The tracer is student code: the document it writes is a claim, checked by the
schema's grammar (``pallas_surface.program.schema``) before anything reads it.
The grammar checks each node's shape, not what every field of every class
holds (a ``BlockMapping`` whose ``array_aval`` is the integer 7 is
grammatical). So every reader the parent will apply to the document runs here
once, as soon as the document is read (``grading.run.tracing``): one that
fails refuses the program there, which costs the student that size's tests
and never ends a grading in an "Autograder error". ``READERS`` is the one list:
a new reader of a document belongs in it (tests/test_document_fuzz.py drives
each, and what reads several documents at once, ``grading.judge.faces``, with
mutated documents).
"""
from __future__ import annotations

from typing import Any, Callable

from . import canonical, likeness, numbers, sources


def _sources(doc: dict) -> Any:
    return sources.of_program(doc, lambda file, line: f"{file}:{line}")


# (what it reads, the reader): each takes a checked document and raises on one it cannot read.
READERS: tuple[tuple[str, Callable[[dict], Any]], ...] = (
    ("canonical form", canonical.of),       # faces, fingerprint, shingles (normal form included)
    ("numbers", numbers.of),                # the kernels' numbers and block counts (faces)
    ("sources", _sources),                  # where each pallas_call is (the feedback's fix lines)
    ("likeness", likeness.of),              # the TA site's near-duplicate listing
)


def refusal(doc: dict) -> str | None:
    """Why the parent cannot read this checked document (None: every reader can)."""
    for name, read in READERS:
        try:
            read(doc)
        except MemoryError:
            raise
        except Exception as e:  # noqa: BLE001 - any failure to read a student's document is the student's
            return f"the grader could not analyse the traced program ({name}: {type(e).__name__})"
    return None
