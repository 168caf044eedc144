"""Finding and reading the student's files (.py or .ipynb), without running them.

Everything here is static: locating the entry file, turning a notebook into a
module, and catching syntax errors with ``compile`` (which executes nothing).
A problem becomes a ``submission-error`` finding that says what was expected
and what was found.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .findings import Finding

MAX_LISTED = 30
MAX_SOURCE_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class Located:
    module_file: Path            # the .py the child imports
    module_dir: Path             # added (last) to the child's sys.path
    uploaded_as: str             # what the student uploaded, relative to the submission
    cells: tuple[tuple[int, int], ...] = ()   # notebook: (first module line, cell number)

    def where(self, line: int | None) -> str:
        """'matmul.py:12' or 'matmul.ipynb cell 3, line 4' for a module line number."""
        if line is None:
            return self.uploaded_as
        if not self.cells:
            return f"{self.uploaded_as}:{line}"
        start, cell = max((c for c in self.cells if c[0] <= line), default=(1, 1))
        return f"{self.uploaded_as} cell {cell}, line {line - start + 1}"


def uploaded_files(root: Path) -> list[str]:
    if root.is_file():
        return [root.name]
    files = []
    for p in sorted(root.rglob("*")):
        if p.is_file() or p.is_symlink():
            files.append(str(p.relative_to(root)))
        if len(files) > MAX_LISTED:
            break
    return files


def _missing(root: Path, entry_file: str, why: str) -> Finding:
    files = uploaded_files(root)
    listed = files[:MAX_LISTED]
    return Finding.make(
        "submission-error", "static", why, check="submission", problem="file-missing",
        expected=entry_file, uploaded=listed, more_uploaded=len(files) > MAX_LISTED)


def locate(root: Path, entry_file: str, workdir: Path) -> Located | Finding:
    """Find ``entry_file`` (or a single notebook) in the submission at ``root``."""
    root = Path(root)
    if not root.exists():
        return Finding.make("submission-error", "static", f"the submission {root} does not exist",
                            check="submission", problem="file-missing", expected=entry_file,
                            uploaded=[], more_uploaded=False)
    if root.is_file():
        candidates = [root]
        base = root.parent
    else:
        base = root
        exact = sorted((p for p in root.rglob(entry_file) if p.is_file()),
                       key=lambda p: (len(p.parts), str(p)))
        notebooks = sorted(p for p in root.rglob("*.ipynb")
                           if p.is_file() and ".ipynb_checkpoints" not in p.parts)
        candidates = exact[:1] or (notebooks if len(notebooks) == 1 else [])
        if not candidates:
            why = (f"expected a file named {entry_file} (or one notebook defining the function)"
                   if len(notebooks) <= 1 else
                   f"expected a file named {entry_file}; found {len(notebooks)} notebooks and "
                   "cannot tell which one to grade")
            return _missing(root, entry_file, why)
    path = candidates[0]
    rel = path.name if root.is_file() else str(path.relative_to(root))
    if path.suffix == ".ipynb":
        return _from_notebook(path, rel, entry_file, workdir)
    if path.suffix != ".py":
        return _missing(root, entry_file, f"expected a Python file {entry_file} or a notebook; "
                        f"got {path.name}")
    return Located(path, path.parent if root.is_file() else base, rel)


def _from_notebook(path: Path, rel: str, entry_file: str, workdir: Path) -> Located | Finding:
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = nb["cells"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return Finding.make("submission-error", "static",
                            f"{rel} is not a readable Jupyter notebook ({type(e).__name__})",
                            check="submission", problem="bad-notebook", file=rel)
    lines: list[str] = []
    starts: list[tuple[int, int]] = []
    number = 0
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        number += 1
        src = cell.get("source", "")
        text = "".join(src) if isinstance(src, list) else str(src)
        body = text.splitlines()
        if body and body[0].lstrip().startswith("%%"):
            body = ["# (cell magic skipped by the grader)"] + ["" for _ in body[1:]]
        starts.append((len(lines) + 1, number))
        for line in body:
            stripped = line.lstrip()
            if stripped.startswith(("!", "%")):
                # Shell escapes and line magics are not Python: keep the line count.
                lines.append(line[: len(line) - len(stripped)] + "pass  # skipped by the grader")
            else:
                lines.append(line)
    module = workdir / "notebook" / entry_file
    module.parent.mkdir(parents=True, exist_ok=True)
    module.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Located(module, path.parent, rel, tuple(starts))


def check_source(loc: Located) -> Finding | None:
    """Syntax errors (file:line) and unreadable files, found without running anything."""
    try:
        raw = loc.module_file.read_bytes()
    except OSError as e:
        return Finding.make("submission-error", "static", f"cannot read {loc.uploaded_as}: {e.strerror}",
                            check="submission", problem="unreadable", file=loc.uploaded_as)
    if len(raw) > MAX_SOURCE_BYTES:
        return Finding.make("submission-error", "static",
                            f"{loc.uploaded_as} is {len(raw)} bytes; the limit is {MAX_SOURCE_BYTES}",
                            check="submission", problem="too-large", file=loc.uploaded_as)
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return Finding.make("submission-error", "static",
                            f"{loc.uploaded_as} is not UTF-8 text (byte {e.start})",
                            check="submission", problem="not-utf8", file=loc.uploaded_as)
    try:
        compile(source, str(loc.module_file), "exec", dont_inherit=True)
    except SyntaxError as e:
        text = (e.text or "").rstrip("\n")
        return Finding.make("submission-error", "static",
                            f"syntax error at {loc.where(e.lineno)}: {e.msg}",
                            check="submission", problem="syntax-error", where=loc.where(e.lineno),
                            line=e.lineno, text=text, detail=e.msg)
    except ValueError as e:  # e.g. source with NUL bytes
        return Finding.make("submission-error", "static", f"{loc.uploaded_as} cannot be compiled: {e}",
                            check="submission", problem="syntax-error", where=loc.uploaded_as,
                            line=None, text="", detail=str(e))
    return None
