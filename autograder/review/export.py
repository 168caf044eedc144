"""Submissions to review: a Gradescope "Export Submissions" folder or zip, or
any folder of submission folders.

Gradescope's export holds ``submission_metadata.yml`` (Ruby-style symbol keys
such as ``:submitters:``, read with a real YAML parser) and one folder per
submission id. Without the metadata, every sub-folder is a submission named
by its folder. Nothing here trusts the export: zip members that would land
outside the extraction folder, links and oversized files are refused.
"""
from __future__ import annotations

import hashlib
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

METADATA = "submission_metadata.yml"
MAX_ZIP_BYTES = 4 << 30            # an export's whole uncompressed size
MAX_FILE_BYTES = 512 << 20


class ExportError(ValueError):
    """An export that cannot be read: names the file, the rule and what was seen."""


@dataclass(frozen=True)
class Submitter:
    name: str = ""
    email: str = ""
    sid: str = ""


@dataclass(frozen=True)
class Submission:
    id: str                                  # the folder name (Gradescope's submission id)
    folder: Path
    submitters: tuple[Submitter, ...] = ()
    gradescope_score: float | None = None    # what Gradescope recorded, when the export says
    created_at: str = ""

    @property
    def names(self) -> str:
        return ", ".join(s.name or s.email or s.sid for s in self.submitters) or self.id

    def content_hash(self) -> str:
        """Every file's relative path and bytes: the regrade cache's key."""
        h = hashlib.sha256()
        for p in sorted(self.folder.rglob("*")):
            if p.is_file() and not p.is_symlink():
                h.update(str(p.relative_to(self.folder)).encode("utf-8", "surrogateescape") + b"\0")
                h.update(hashlib.sha256(p.read_bytes()).digest())
        return h.hexdigest()


def _key(d: dict, name: str) -> Any:
    """A metadata key, Ruby-symbol style (``:name``) or plain."""
    return d.get(f":{name}", d.get(name)) if isinstance(d, dict) else None


def _submitters(entry: dict) -> tuple[Submitter, ...]:
    out = []
    for s in _key(entry, "submitters") or []:
        if isinstance(s, dict):
            out.append(Submitter(str(_key(s, "name") or ""), str(_key(s, "email") or ""),
                                 str(_key(s, "sid") or "")))
    return tuple(out)


def _score(entry: dict) -> float | None:
    for value in (_key(entry, "score"), _key(_key(entry, "results") or {}, "score")):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
    return None


def _metadata(folder: Path) -> dict | None:
    path = folder / METADATA
    if not path.is_file():
        return None
    import yaml
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ExportError(f"{path}: must be valid YAML; got {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ExportError(f"{path}: must map submission ids to their metadata; got {type(data).__name__}")
    return data


def _root(folder: Path) -> Path:
    """Gradescope's zip holds one top folder (assignment_123_export/): look inside it."""
    if (folder / METADATA).is_file():
        return folder
    inner = [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
    if len(inner) == 1 and (inner[0] / METADATA).is_file():
        return inner[0]
    return folder


def extract(zpath: Path, into: Path) -> Path:
    """Unpack an export zip safely (no member outside ``into``, no links)."""
    with zipfile.ZipFile(zpath) as zf:
        total = 0
        for info in zf.infolist():
            target = (into / info.filename).resolve()
            if not str(target).startswith(str(into.resolve()) + os.sep) and target != into.resolve():
                raise ExportError(f"{zpath}: member {info.filename!r} would be written outside the export")
            if (info.external_attr >> 16) & 0o170000 == 0o120000:
                continue                                  # a symbolic link: never followed
            total += info.file_size
            if info.file_size > MAX_FILE_BYTES or total > MAX_ZIP_BYTES:
                raise ExportError(f"{zpath}: member {info.filename!r} makes the export larger than allowed")
            zf.extract(info, into)
    return into


def read_submissions(path: Path, unpack_into: Path) -> list[Submission]:
    """The submissions under ``path`` (a folder or a zip), sorted by id."""
    path = Path(path)
    if path.is_file() and zipfile.is_zipfile(path):
        path = extract(path, unpack_into)
    if not path.is_dir():
        raise ExportError(f"{path}: must be an export folder or its zip (a folder of submission folders)")
    root = _root(path)
    meta = _metadata(root)
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if meta is not None:
        listed = [root / str(k) for k in meta if (root / str(k)).is_dir()]
        folders = sorted(set(listed) | {f for f in folders if f.name in {str(k) for k in meta}})
    subs = []
    for folder in folders:
        entry = (meta or {}).get(folder.name, {}) or {}
        subs.append(Submission(folder.name, folder, _submitters(entry), _score(entry),
                               str(_key(entry, "created_at") or "")))
    if not subs:
        raise ExportError(f"{root}: holds no submission folders")
    return subs
