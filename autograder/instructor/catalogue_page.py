"""docs/reference/findings.md and docs/reference/probes.md, generated from the
registries themselves (they cannot drift), as ``reference_page`` does for the spec.

The pages read the registries generically, so they keep working as the registries
grow: every field of a finding kind in ``autograder.findings.CATALOGUE`` and of a
probe in ``autograder.grading.probes.REGISTRY`` (its spec terms included) is shown,
and so is every module-level table keyed by finding ID or by probe name in the
modules listed in ``FINDING_TABLES`` and ``PROBE_TABLES`` (e.g. ``FIXES``). A
callable is shown as where it lives and the first line of its docstring.
Regenerate with ``python -m autograder.instructor.catalogue_page`` from the checkout's
root (it writes both pages; a test fails while a checked-in page differs).
"""
from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import sys
from collections.abc import Mapping
from pathlib import Path

from .. import findings
from ..grading import probes as probe_registry

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "autograder"
# Where the pages go, relative to the checkout.
PAGES = {"findings": Path("docs/reference/findings.md"), "probes": Path("docs/reference/probes.md")}
# Modules whose tables keyed by finding ID (or by probe name) are shown beside each
# entry; a table that only repeats a field's value is not shown twice.
FINDING_TABLES = ("autograder.findings",)
PROBE_TABLES = ("autograder.grading.probes", "autograder.feedback.glossary")
REGENERATE = "python -m autograder.instructor.catalogue_page"


def _escape(text: str) -> str:
    """A value inside a Markdown table cell: one line, no cell breaks."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _where(obj) -> str:
    """A callable (or class) as its path in the checkout and its qualified name."""
    try:
        path = Path(inspect.getsourcefile(obj)).resolve().relative_to(ROOT).as_posix()
    except (TypeError, ValueError):
        path = getattr(obj, "__module__", "?")
    return f"`{getattr(obj, '__qualname__', repr(obj))}` in `{path}`"


def _doc_line(obj) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.split("\n\n")[0].replace("\n", " ").strip()


class Links:
    """Catalogue IDs and probe names, written as links to their entries."""

    def __init__(self, here: str):
        self.here = here

    def word(self, text: str) -> str:
        if text in findings.CATALOGUE:
            target = "" if self.here == "findings" else "findings.md"
            return f"[`{text}`]({target}#{text})"
        if text in probe_registry.REGISTRY:
            return self.probe(text)
        return _escape(text)

    def probe(self, name: str) -> str:
        """A probe's name as a link (a probe may share its name with a finding ID)."""
        target = "" if self.here == "probes" else "probes.md"
        return f"[`{name}`]({target}#{name})"


def value(v, links: Links) -> str | None:
    """One value as Markdown for a table cell, or None when there is nothing to show."""
    if v is None or (isinstance(v, (str, tuple, list, frozenset, set, Mapping)) and not v):
        return None
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, enum.Enum):
        return f"`{v.name}`"
    if isinstance(v, str):
        return links.word(v)
    if isinstance(v, (int, float)):
        return f"`{v!r}`"
    if isinstance(v, Path):    # a file of the package, by its path in the repository (never this machine's)
        return f"`{v.relative_to(ROOT) if v.is_relative_to(ROOT) else v.name}`"
    if isinstance(v, type) or callable(v):
        doc = _doc_line(v)
        return _where(v) + (f": {_escape(doc)}" if doc else "")
    if dataclasses.is_dataclass(v):
        shown = [f"{f.name}: {s}" for f, s in ((f, value(getattr(v, f.name), links)) for f in dataclasses.fields(v))
                 if s is not None]
        return "; ".join(shown) or None
    if isinstance(v, Mapping):
        shown = [f"{links.word(str(k))}: {s}" for k, s in ((k, value(x, links)) for k, x in v.items())
                 if s is not None]
        return "; ".join(shown) or None
    if isinstance(v, (frozenset, set)):
        v = sorted(v, key=str)
    if isinstance(v, (tuple, list)):
        shown = [value(x, links) for x in v]
        return ", ".join(s for s in shown if s is not None) or None
    return _escape(repr(v))


def fields(obj) -> dict[str, object]:
    """Every field of a registry entry, nested dataclasses flattened, and its
    properties: what a generic page shows of it."""
    out: dict[str, object] = {}
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if dataclasses.is_dataclass(v) and not isinstance(v, type):
                out.update({k: x for k, x in fields(v).items() if k not in out})
            else:
                out[f.name] = v
    for name, _prop in inspect.getmembers(type(obj), lambda a: isinstance(a, property)):
        if not name.startswith("_") and name not in out:
            try:
                out[name] = getattr(obj, name)
            except Exception:  # noqa: BLE001 - a property that needs more than the entry is not shown
                continue
    return out


def keyed_tables(modules: tuple[str, ...], keys, skip: tuple[object, ...]) -> dict[str, Mapping]:
    """Module-level tables whose keys are among ``keys`` (or tuples that start with
    one): ``{'module.NAME': table}``. The registries themselves, and tables of
    registry entries or callables, are left out (their entries are shown as fields)."""
    found: dict[str, Mapping] = {}
    for name in modules:
        module = importlib.import_module(name)
        for attr, table in vars(module).items():
            if attr.startswith("_") or not isinstance(table, Mapping) or not table or any(table is s for s in skip):
                continue
            heads = [k[0] if isinstance(k, tuple) and k else k for k in table]
            if not all(isinstance(h, str) and h in keys for h in heads):
                continue
            if any(callable(x) or (dataclasses.is_dataclass(x) and not isinstance(x, type)) for x in table.values()):
                continue
            found[f"{name.removeprefix('autograder.')}.{attr}"] = table
    return found


def _entry_rows(entry_fields: dict[str, object], tables: dict[str, Mapping], key: str, links: Links,
                skip: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    rows, seen = [], set()
    for name, v in entry_fields.items():
        shown = value(v, links)
        if name in skip or shown is None:
            continue
        rows.append((name.replace("_", " "), shown))
        seen.add(_escape(v) if isinstance(v, str) else None)
    for label, table in tables.items():
        mine = {k: x for k, x in table.items() if k == key or (isinstance(k, tuple) and k[:1] == (key,))}
        if not mine:
            continue
        if len(mine) == 1 and key in mine:
            only = mine[key]
            if isinstance(only, str) and _escape(only) in seen:
                continue
            shown = value(only, links)
        else:
            shown = "; ".join(f"{_escape(', '.join(map(str, k[1:])) or '(any)')}: {value(x, links)}"
                              for k, x in mine.items())
        if shown:
            rows.append((f"`{label}`", shown))
    return rows


def _table(rows: list[tuple[str, str]]) -> str:
    return "| field | value |\n|---|---|\n" + "".join(f"| {k} | {v} |\n" for k, v in rows)


def _template(finding_id: str) -> str | None:
    """The explanation template of a finding, wherever the package keeps it."""
    found = sorted(PACKAGE.rglob(f"{finding_id}.j2"))
    return found[0].relative_to(ROOT).as_posix() if found else None


def _found_by() -> dict[str, list[str]]:
    by: dict[str, list[str]] = {}
    for name, probe in probe_registry.REGISTRY.items():
        for fid in fields(probe).get("ids", ()):
            by.setdefault(fid, []).append(name)
    return by


def findings_page() -> str:
    links = Links("findings")
    tables = keyed_tables(FINDING_TABLES, findings.CATALOGUE, (findings.CATALOGUE,))
    by = _found_by()
    order = list(getattr(findings, "PRECEDENCE", ()))
    out = [f"""# Finding catalogue

Generated by `{REGENERATE}` from `autograder.findings.CATALOGUE` and the probe
registry (do not edit by hand; a test fails while this page differs from the code).
Finding IDs are a public contract: they appear in results.json `tags`, in the
feedback and in instructors' corpus expectations, so they never change once published.
Each failed test carries exactly one, its root cause (the precedence below). How
findings are drawn and charged: [Findings and the rubric](../guides/findings.md).

## Every finding

What each finding says of the student's kernel (its summary) and how it is detected
(the catalogue's `detected_by`):

| ID | title | summary | how it is detected | probes that report it |
|---|---|---|---|---|
"""]
    for fid, kind in findings.CATALOGUE.items():
        f = fields(kind)
        reported = ", ".join(links.probe(p) for p in by.get(fid, [])) or "outside the probes"
        out.append(f"| {links.word(fid)} | {_escape(f.get('title', ''))} | {_escape(f.get('summary', ''))} | "
                   f"{_escape(f.get('detected_by', ''))} | {reported} |\n")
    if order:
        out.append("\n## Root-cause precedence\n\nWhen several findings hit one test, the earliest here is "
                   "the one the test carries (`findings.PRECEDENCE`):\n\n" +
                   "".join(f"{i}. {links.word(fid)}\n" for i, fid in enumerate(order, 1)))
    for fid, kind in findings.CATALOGUE.items():
        rows = _entry_rows(fields(kind), tables, fid, links, skip=("id",))
        if fid in by:
            rows.append(("probes that report it", ", ".join(links.probe(p) for p in by[fid])))
        if fid in order:
            rows.append(("precedence", f"{order.index(fid) + 1} of {len(order)}"))
        template = _template(fid)
        if template:
            rows.append(("explanation template", f"`{template}`"))
        out.append(f"\n## {fid}\n\n{_table(rows)}")
    for label, table in other_tables(FINDING_TABLES, findings.CATALOGUE).items():
        out.append(f"\n## `{label}`\n\n" + _doc_of_table(label) +
                   "| key | value |\n|---|---|\n" +
                   "".join(f"| `{_escape(k)}` | {value(x, links)} |\n" for k, x in table.items()))
    return "".join(out)


def other_tables(modules: tuple[str, ...], keys) -> dict[str, Mapping]:
    """Every module-level table of text by text in the modules that is not keyed by
    ``keys`` (e.g. the fixes by submission problem): shown as tables of their own."""
    found: dict[str, Mapping] = {}
    for name in modules:
        for attr, table in vars(importlib.import_module(name)).items():
            if attr.startswith("_") or not isinstance(table, Mapping) or not table or set(table) <= set(keys):
                continue
            if all(isinstance(k, str) and isinstance(x, str) for k, x in table.items()):
                found[f"{name.removeprefix('autograder.')}.{attr}"] = table
    return found


def _doc_of_table(label: str) -> str:
    """The comment above a module-level table in its source, as a paragraph."""
    module, attr = label.rsplit(".", 1)
    try:
        lines = inspect.getsource(importlib.import_module(f"autograder.{module}")).splitlines()
    except (OSError, TypeError):
        return ""
    at = next((i for i, line in enumerate(lines) if line.startswith(f"{attr}:") or line.startswith(f"{attr} =")),
              None)
    comment = []
    while at is not None and at > 0 and lines[at - 1].startswith("#"):
        at -= 1
        comment.insert(0, lines[at].lstrip("# ").strip())
    return (" ".join(comment) + "\n\n") if comment else ""


def probes_page() -> str:
    links = Links("probes")
    tables = keyed_tables(PROBE_TABLES, probe_registry.REGISTRY, (probe_registry.REGISTRY,))
    out = [f"""# Probes

Generated by `{REGENERATE}` from `autograder.grading.probes.REGISTRY` (do not
edit by hand; a test fails while this page differs from the code). A probe is a
check beyond the graded cases' outputs: it plans runs on a case (static analyses,
or interpreter runs with one switch turned), and judges their outcomes into
[findings](findings.md). An assignment enables it under `[probes.<name>]` with
`points`, `visibility` and `gates` (and the probe's own keys below). How probes
are charged: [Findings and the rubric](../guides/findings.md).

| probe | title | rung | finding IDs | spec keys beyond points, visibility, gates |
|---|---|---|---|---|
"""]
    for name, probe in probe_registry.REGISTRY.items():
        f = fields(probe)
        out.append(f"| {links.probe(name)} | {_escape(f.get('title', ''))} | `{f.get('rung', '')}` | "
                   f"{value(f.get('ids', ()), links) or ''} | {value(f.get('keys', ()), Links('')) or ''} |\n")
    rungs = getattr(findings, "RUNGS", {})
    if rungs:
        notes = keyed_tables(PROBE_TABLES + FINDING_TABLES, rungs, (rungs,))
        out.append("\n## Rungs\n\nWhere a finding is seen (`findings.RUNGS`), with what the student's glossary "
                   "says of each:\n\n| rung | what it is | " +
                   " | ".join(f"`{label}`" for label in notes) + " |\n|---|---|" + "---|" * len(notes) + "\n")
        for rung, label in rungs.items():
            out.append(f"| `{rung}` | {_escape(label)} | " +
                       " | ".join(_escape(str(t.get(rung, ""))).lstrip(": ") for t in notes.values()) + " |\n")
    for name, probe in probe_registry.REGISTRY.items():
        judge = fields(probe).get("judge")
        module = sys.modules.get(getattr(judge, "__module__", ""), None)
        about = _doc_line(module) if module is not None else ""
        rows = _entry_rows(fields(probe), tables, name, links, skip=("name",))
        out.append(f"\n## {name}\n\n" + (f"{about}\n\n" if about else "") + _table(rows))
    return "".join(out)


def pages() -> dict[Path, str]:
    """Every generated page, by its path relative to the checkout."""
    return {PAGES["findings"]: findings_page(), PAGES["probes"]: probes_page()}


def write(root: Path) -> list[Path]:
    written = []
    for rel, text in pages().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(rel)
    return written


if __name__ == "__main__":
    # Into the checkout it is run from (the package may be an installed copy).
    if not (Path.cwd() / "mkdocs.yml").is_file():
        sys.exit("catalogue_page: run it from the pallas-autograder checkout's root (no mkdocs.yml here)")
    for rel in write(Path.cwd()):
        print(f"wrote {rel}")
