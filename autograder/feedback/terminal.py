"""The terminal the CLI talks to: a progress line on stderr while grading, and
colour for PASS/FAIL, each only where a person is watching (a TTY; colour off
under NO_COLOR or TERM=dumb, and never in a pipe or a file)."""
from __future__ import annotations

import os
import re
import sys
import time
from typing import TextIO

GREEN, RED, BOLD, RESET = "\033[32m", "\033[31m", "\033[1m", "\033[0m"


def is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def wants_colour(stream: TextIO) -> bool:
    return is_tty(stream) and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def colour(text: str) -> str:
    """PASS and FAIL marks at the start of a line, and the score line, in colour."""
    text = re.sub(r"(?m)^\[PASS\]", f"{GREEN}[PASS]{RESET}", text)
    text = re.sub(r"(?m)^\[FAIL\]", f"{RED}[FAIL]{RESET}", text)
    # The score again, under the rule that opens the report's last screen.
    text = re.sub(r"(?m)^(={79}\n\n?)(.+)$", lambda m: f"{m.group(1)}{BOLD}{m.group(2)}{RESET}", text)
    first, nl, rest = text.partition("\n")
    return f"{BOLD}{first}{RESET}{nl}{rest}"


class Progress:
    """One line on stderr, rewritten in place: what runs now, how far, how long."""

    def __init__(self, stream: TextIO = sys.stderr):
        self.stream = stream
        self.enabled = is_tty(stream)
        self.t0 = time.monotonic()
        self.width = 0

    def __call__(self, what: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.t0
        count = f" ({done}/{total} runs)" if total else ""
        line = f"grading: {what}{count}, {elapsed:.0f} s"[:79]     # one line of an 80-column terminal
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width = len(line)

    def clear(self) -> None:
        if self.enabled and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0
