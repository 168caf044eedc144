"""The batch's progress: a bar on a terminal, plain lines otherwise."""
from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Counts the students' submissions: ``total`` of them, ``cached`` unchanged since
    the last run (their stored gradings kept). The instructor solution, graded beside
    them as the TPU stage's baseline, is reported on its own line and counted apart,
    so these counts agree with the run's last line."""

    def __init__(self, total: int, cached: int = 0, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.total, self.cached = total, cached
        self.done = self.failed = 0
        self.t0 = time.monotonic()

    def line(self) -> str:
        finished = self.done + self.failed
        remaining = self.total - self.cached - finished
        elapsed = time.monotonic() - self.t0
        rate = finished / elapsed if elapsed > 0 and finished else 0.0
        eta = f"{remaining / rate:.0f} s" if rate else "?"
        cached = f", {self.cached} unchanged" if self.cached else ""
        return (f"{self.done} graded, {self.failed} failed, {remaining} remaining{cached} · "
                f"{rate * 60:.1f}/min · ETA {eta}")

    def update(self, submission_id: str, ok: bool, solution: bool = False) -> None:
        if solution:
            who = "the instructor solution (counted apart)"
        elif ok:
            self.done += 1
            who = submission_id
        else:
            self.failed += 1
            who = submission_id
        if self.tty:
            width = 30
            share = (self.cached + self.done + self.failed) / max(self.total, 1)
            bar = "#" * int(share * width) + "." * (width - int(share * width))
            self.stream.write(f"\r[{bar}] {self.line()}\033[K")
        else:
            what = "graded" if ok else "FAILED"
            self.stream.write(f"{what} {who}: {self.line()}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
