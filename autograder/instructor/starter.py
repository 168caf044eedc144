"""The student starter, generated from the instructor's solution so the two never drift.

A solution marks what students write between ``# BEGIN SOLUTION`` and
``# END SOLUTION`` lines. The starter keeps everything else. Inside a region,
lines ``# STUB: text`` are what the starter gets instead (``text`` at the
line's own indentation); a region without stub lines becomes ``raise
NotImplementedError(...)`` inside a function, and nothing at module level.
The grader knows that raise: a starter submitted as is gets one clear finding.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
_STUB = re.compile(r"^(\s*)# STUB:(?: ?)(.*)$")
DEFAULT_STUB = 'raise NotImplementedError("write this part")'


class StarterError(ValueError):
    """A solution whose regions cannot make a starter: names the file, the line and the rule."""

    def __init__(self, file: Path | str, line: int | None, rule: str, seen: str):
        where = f"{file}: line {line}" if line else f"{file}"
        super().__init__(f"{where}: {rule}; got {seen!r}")


def _marker(line: str) -> str | None:
    stripped = line.strip()
    return stripped if stripped in (BEGIN, END) else None


def starter_text(solution: str, file: Path | str = "<solution>") -> str:
    """The starter for one solution's text; raises StarterError on unbalanced
    markers or a starter that is not valid Python."""
    out: list[str] = []
    region: tuple[int, str] | None = None        # (line number, indentation) of the open BEGIN
    stubs: list[str] = []
    regions = 0
    for n, line in enumerate(solution.splitlines(), 1):
        mark = _marker(line)
        if mark == BEGIN:
            if region is not None:
                raise StarterError(file, n, f"'{BEGIN}' inside a region opened at line {region[0]}", line)
            region, stubs = (n, line[:len(line) - len(line.lstrip())]), []
        elif mark == END:
            if region is None:
                raise StarterError(file, n, f"'{END}' without a '{BEGIN}' before it", line)
            if stubs:
                out += stubs
            elif region[1]:
                out.append(region[1] + DEFAULT_STUB)
            region, regions = None, regions + 1
        elif region is not None:
            m = _STUB.match(line)
            if m:
                stubs.append(m.group(1) + m.group(2) if m.group(2) else "")
        else:
            out.append(line)
    if region is not None:
        raise StarterError(file, region[0], f"'{BEGIN}' never closed by '{END}'", BEGIN)
    if not regions:
        raise StarterError(file, 1, f"a solution must mark what students write with '{BEGIN}' ... "
                           f"'{END}'", "no regions")
    # A removed region leaves the blank lines around it: at most two in a row (PEP 8).
    text = re.sub(r"\n{4,}", "\n\n\n", "\n".join(out)).rstrip("\n") + "\n"
    try:
        ast.parse(text)
    except SyntaxError as e:
        line = (e.text or "").strip()
        raise StarterError(file, None, f"the starter left after removing the regions must be valid Python "
                           f"(add '# STUB:' lines); at the starter's line {e.lineno}, {line!r}", e.msg) from None
    return text


def starter_for(solution_path: Path) -> str:
    return starter_text(solution_path.read_text(encoding="utf-8"), solution_path)


def solution_lines(solution: str) -> list[str]:
    """The lines only the solution has (inside its regions, markers and stubs aside):
    what no student-facing file may contain."""
    lines, inside = [], False
    for line in solution.splitlines():
        mark = _marker(line)
        if mark is not None:
            inside = mark == BEGIN
        elif inside and not _STUB.match(line) and line.strip():
            lines.append(line.strip())
    return lines
