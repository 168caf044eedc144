"""Finding and reading the student's files (.py or .ipynb), without running them.

Everything here is static: copying the upload into the grader's own folder
(regular files only, within size and count caps, a zip unpacked safely),
locating the entry file, turning a notebook into a module, and catching syntax
errors with ``compile`` (which executes nothing). A problem becomes a
``submission-error`` finding that says what was expected and what was found.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ...findings import Finding

MAX_LISTED = 30
MAX_SOURCE_BYTES = 2 * 1024 * 1024
MAX_FILES = 500                      # files copied from an upload (or a zip in it)
MAX_FILE_BYTES = 20 * 1024 * 1024    # a bigger file is not copied (it cannot be the kernel)
MAX_TOTAL_BYTES = 100 * 1024 * 1024  # everything copied, zip contents included


@dataclass
class Staged:
    """The upload, copied into a folder the grader owns; what was left behind and why."""
    root: Path                        # the copy (a file's folder when a single file was uploaded)
    single: Path | None               # the copied file when one file was uploaded
    skipped: list[str] = field(default_factory=list)   # "name (why)"


def _copy_tree(src: Path, dest: Path, staged: Staged, budget: list[int]) -> None:
    """Regular files only: a symlink is never followed (it could point at the
    instructor's solution), a FIFO or device never opened."""
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        rel_dir = Path(dirpath).relative_to(src)
        for name in sorted(dirnames):
            if (Path(dirpath) / name).is_symlink():
                staged.skipped.append(f"{rel_dir / name} (a symbolic link; not followed)")
        dirnames[:] = sorted(d for d in dirnames if not (Path(dirpath) / d).is_symlink())
        for name in sorted(filenames):
            if budget[0] >= MAX_FILES:
                # Stop walking: a folder of a million files must not cost a million stats.
                staged.skipped.append(f"more files (only the first {MAX_FILES} are copied)")
                return
            _copy_file(Path(dirpath) / name, rel_dir / name, dest / rel_dir / name, staged, budget)


def stage(upload: Path, dest: Path) -> Staged:
    """Copy the upload (a file or a folder) into ``dest``, which must not exist yet."""
    dest.mkdir(parents=True)
    upload = Path(upload)
    staged = Staged(dest, None)
    if upload.is_symlink():
        staged.skipped.append(f"{upload.name} (a symbolic link; not followed)")
    elif upload.is_dir():
        _copy_tree(upload, dest, staged, [0, 0])
    elif upload.exists():
        _copy_file(upload, upload.name, dest / upload.name, staged, [0, 0])
        if (dest / upload.name).exists():
            staged.single = dest / upload.name
    return staged


def _copy_file(path: Path, rel, target: Path, staged: Staged, budget: list[int]) -> None:
    try:
        st = os.lstat(path)
    except OSError:
        return
    if stat.S_ISLNK(st.st_mode):
        staged.skipped.append(f"{rel} (a symbolic link; not followed)")
    elif not stat.S_ISREG(st.st_mode):
        staged.skipped.append(f"{rel} (not a regular file)")
    elif st.st_size > MAX_FILE_BYTES:
        staged.skipped.append(f"{rel} ({st.st_size} bytes; files over {MAX_FILE_BYTES} are not copied)")
    elif budget[0] >= MAX_FILES or budget[1] + st.st_size > MAX_TOTAL_BYTES:
        staged.skipped.append(f"{rel} (over the limit of {MAX_FILES} files / {MAX_TOTAL_BYTES} bytes)")
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as fin, \
                    open(target, "wb") as fout:
                shutil.copyfileobj(fin, fout, 1 << 20)
        except OSError as e:
            staged.skipped.append(f"{rel} (unreadable: {e.strerror})")
            return
        budget[0] += 1
        budget[1] += st.st_size


def unzip(archive: Path, dest: Path, staged: Staged) -> Finding | None:
    """Unpack a zip the student uploaded instead of the file: regular members
    only, no absolute or parent paths, within the caps (a zip bomb stops at
    MAX_TOTAL_BYTES of output)."""
    try:
        with zipfile.ZipFile(archive) as zf:
            members = zf.infolist()
            total = 0
            for m in members[:MAX_FILES]:
                name = m.filename
                mode = (m.external_attr >> 16) & 0o170000
                if m.is_dir():
                    continue
                if name.startswith("/") or ".." in Path(name).parts or mode == stat.S_IFLNK:
                    staged.skipped.append(f"{archive.name}: {name} (unsafe path or link; not unpacked)")
                    continue
                if m.file_size > MAX_FILE_BYTES or total + m.file_size > MAX_TOTAL_BYTES:
                    staged.skipped.append(f"{archive.name}: {name} (too large; not unpacked)")
                    continue
                target = dest / name
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(m) as fin, open(target, "wb") as fout:
                    # file_size is what the zip claims; count what really comes out.
                    left = MAX_FILE_BYTES
                    while chunk := fin.read(1 << 20):
                        left -= len(chunk)
                        if left < 0:
                            break
                        fout.write(chunk)
                total += m.file_size
            if len(members) > MAX_FILES:
                staged.skipped.append(f"{archive.name}: {len(members) - MAX_FILES} more members (over {MAX_FILES})")
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, RuntimeError) as e:
        return Finding.make("submission-error", "static",
                            f"{archive.name} is not a zip the grader can unpack ({type(e).__name__})",
                            check="submission", problem="bad-zip", file=archive.name)
    return None


@dataclass(frozen=True)
class Located:
    module_file: Path            # the .py the child imports
    module_dir: Path             # added (last) to the child's sys.path
    uploaded_as: str             # what the student uploaded, relative to the submission
    cells: tuple[tuple[int, int], ...] = ()   # notebook: (first module line, cell number)
    note: str = ""               # said once at the top of the feedback (a file graded under another name)

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


def _missing(root: Path, entry_file: str, why: str, skipped: list[str] = ()) -> Finding:
    files = uploaded_files(root) + list(skipped)
    listed = files[:MAX_LISTED]
    return Finding.make(
        "submission-error", "static", why, check="submission", problem="file-missing",
        expected=entry_file, uploaded=listed, more_uploaded=len(files) > MAX_LISTED)


def prepare(upload: Path, entry_file: str, workdir: Path) -> tuple[Located | Finding, list[str]]:
    """Stage the upload in ``workdir`` and find the entry file in the copy; a
    zip uploaded instead of the file is unpacked (safely) and searched too.
    Returns the location (or the finding) and what was left out of the copy."""
    staged = stage(upload, workdir / "submission")
    if staged.single is None and not any(staged.root.iterdir()):
        why = (f"the upload could not be copied: {staged.skipped[0]}" if staged.skipped
               else f"the submission {Path(upload).name} is empty or does not exist")
        return _missing(staged.root, entry_file, why, staged.skipped), staged.skipped
    # A single file is graded exactly as that file uploaded alone to Gradescope.
    loc = locate(staged.root, entry_file, workdir)
    zips = sorted(p for p in staged.root.rglob("*.zip") if p.is_file())
    if isinstance(loc, Finding) and loc.facts().get("problem") == "file-missing" and len(zips) == 1:
        unzipped = workdir / "unzipped"
        unzipped.mkdir()
        bad = unzip(zips[0], unzipped, staged)
        if bad is not None:
            return bad, staged.skipped
        inner = locate(unzipped, entry_file, workdir)
        if isinstance(inner, Located):
            rel = zips[0].relative_to(staged.root)
            return Located(inner.module_file, inner.module_dir, f"{rel}/{inner.uploaded_as}",
                           inner.cells, inner.note), staged.skipped
    if isinstance(loc, Located) and loc.note and any(
            Path(x.split(" (")[0]).name == entry_file for x in staged.skipped):
        # The file it should have been was uploaded but not copied: say that, not "graded X instead".
        loc = _missing(staged.root, entry_file, f"{entry_file} was uploaded but could not be copied",
                       staged.skipped)
    if isinstance(loc, Finding) and staged.skipped and loc.facts().get("problem") == "file-missing":
        loc = _missing(staged.root, entry_file, loc.message, staged.skipped)
    return loc, staged.skipped


def _lone_python_file(root: Path) -> Path | None:
    found = [p for p in root.rglob("*.py") if p.is_file() and "__pycache__" not in p.parts]
    return found[0] if len(found) == 1 else None


def locate(root: Path, entry_file: str, workdir: Path) -> Located | Finding:
    """Find ``entry_file`` (or a single notebook) in the submission at ``root``."""
    root = Path(root)
    if not root.exists():
        return Finding.make("submission-error", "static", f"the submission {root} does not exist",
                            check="submission", problem="file-missing", expected=entry_file,
                            uploaded=[], more_uploaded=False)
    if root.is_file():
        candidates = [root]
    else:
        exact = sorted((p for p in root.rglob(entry_file) if p.is_file()),
                       key=lambda p: (len(p.parts), str(p)))
        notebooks = sorted(p for p in root.rglob("*.ipynb")
                           if p.is_file() and ".ipynb_checkpoints" not in p.parts)
        candidates = exact[:1] or (notebooks if len(notebooks) == 1 else [])
        lone = _lone_python_file(root) if not candidates and not notebooks else None
        if lone is not None:
            # The same on Gradescope and locally: one Python file, whatever its name,
            # is the one to grade; the feedback says what to call it.
            rel = str(lone.relative_to(root))
            return Located(lone, lone.parent, rel, note=f"graded {rel} as {entry_file}: the handout "
                           f"asks for a file named {entry_file}, so name it that")
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
    # Like `python add.py`: the entry file's own folder is importable (its helpers).
    return Located(path, path.parent, rel)


def _from_notebook(path: Path, rel: str, entry_file: str, workdir: Path) -> Located | Finding:
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = nb["cells"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError, MemoryError) as e:
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
    except (RecursionError, MemoryError) as e:   # e.g. one expression of 100,000 terms
        return Finding.make("submission-error", "static",
                            f"{loc.uploaded_as} is too deeply nested for Python to compile ({type(e).__name__})",
                            check="submission", problem="syntax-error", where=loc.uploaded_as,
                            line=None, text="", detail=f"{type(e).__name__}: nesting too deep to compile")
    return None
