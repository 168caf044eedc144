"""What happened to one run, as the parent checked it (numpy only, no JAX)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..pallas_surface.static.facts import Facts

Status = Literal[
    "ok",          # finished; an output (kernel runs) or facts (static runs) came back
    "error",       # raised
    "bad-type",    # returned something that is not one array
    "timeout",     # did not finish within its limit (or was not started: would hang again)
    "memory", "disk", "died",   # stopped by a limit, or the process ended
    "load-error",  # the submission could not be imported: reported once, submission-wide
    "skipped",     # not run: the grading's time budget was spent
    "settled",     # not run: a static probe already settled what it would show
]
# The error type of an in-order run on a kernel with no shuffled axis: the run
# in order would be the run as marked, so the child does not repeat it.
NO_SHUFFLED_AXIS = "NoShuffledAxis"


@dataclass(frozen=True, eq=False)
class Outcome:
    status: Status
    seconds: float = 0.0
    phase: str = ""                       # trace | run | analysis: where it raised or hung
    error_type: str = ""
    message: str = ""
    frames: tuple[str, ...] = ()          # traceback lines in the student's files
    output: np.ndarray | None = None      # the output, read and checked by the parent
    output_problem: str = ""              # why an ok kernel run has no output to compare
    dtype: str = ""                       # the dtype the kernel returned
    shape: tuple[int, ...] = ()           # the shape it returned
    returned: str = ""                    # bad-type: what it returned instead
    traced: bool = False                  # the student's function was traced (the two below are known)
    pallas_calls: int = 0                 # pallas_call equations in the trace, nested ones included
    grid_steps: int = 0                   # grid points over every pallas_call
    facts: Facts | None = None            # a static analysis's facts, decoded (``pallas_surface.facts``)
    order: tuple = ()                     # recorded grid order: ((point...), core) pairs
    races_found: bool = False
    captured: str = ""                    # what the interpreter printed during the run
    limit_s: float | None = None          # timeout: the limit it ran under
    not_run: bool = False                 # timeout: not started, an earlier run hung the same way
    at: tuple[str, int] | None = None     # a trace that hung: the student's line it was running (file, line)
    returncode: int | None = None
    stderr_tail: str = ""
    memory_mb: int | None = None
    disk_mb: int | None = None
    reason: str = ""                      # skipped / settled / not_run: why, in words
    settled_by: Any = None                # settled: the Finding that settled it

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def ran(self) -> bool:
        """The run happened and finished (whatever it returned)."""
        return self.status in ("ok", "error", "bad-type")


@dataclass(frozen=True)
class LoadError:
    """Why the submission could not be imported (or the child not started):
    reported once, as the submission-wide finding."""
    kind: str                             # syntax | import | exit | missing-function | arity |
    #                                       timeout | memory | disk | died
    error_type: str = ""
    message: str = ""
    frames: tuple[str, ...] = ()
    line: int | None = None               # syntax errors
    found: tuple[str, ...] = ()           # missing-function: what the module defines
    signature: str = ""                   # arity: the function's signature
    returncode: int | None = None
    stderr_tail: str = ""
    limit_s: float | None = None
    disk_mb: int | None = None
