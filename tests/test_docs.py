"""The documentation: the site builds with ``mkdocs build --strict`` (a broken link or
anchor fails), the generated reference pages are the registries' own account, every
path the guides and the README name exists, and the README stays a front door.
No JAX; the build takes a few seconds."""
from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import subprocess
import sys

import pytest
from conftest import REPO

from autograder import findings
from autograder.grading import probes
from autograder.instructor import catalogue_page

DOCS = REPO / "docs"
GUIDES = sorted((DOCS / "guides").glob("*.md"))
README = REPO / "README.md"
# The guide every reader is sent to from the README.
READERS = ("students", "instructors", "tas", "tpu", "security", "how-it-works", "extending")
# Where a path the docs name may start: the checkout's own folders and files, and the
# package's folders (``grading/judge/faces.py``) and assignments' (``add/corpus/x.py``).
ROOTS = ("autograder", "tests", "benchmarks", "assignments", "solutions", "requirements", "docs", ".ci")
TOP_FILES = ("setup.sh", "run_autograder", "pyproject.toml", "mkdocs.yml", "README.md")
# What a guide's command writes (the instructors' `new relu`), not in the checkout before it runs.
WRITTEN_BY_COMMANDS = {"assignments/relu/", "solutions/relu.py"}
PLACEHOLDER = re.compile(r"<[^>]*>|\*|\bSLUG\b|\bEXTRA\b|\.\.\.")


SEGMENT = r"(?:<[^>\n]*>|[\w.*-])+"
PATH = re.compile(rf"(?<![\w./~-])(?:{SEGMENT}(?:/{SEGMENT})+/?|{SEGMENT}/|[\w.-]+\.(?:sh|toml|yml)\b)")


def _folders(root) -> set[str]:
    return {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}


def named_paths(text: str) -> list[str]:
    """Every path written in a code span or block of ``text``: one that starts at a
    folder of the checkout, at an assignment's folder (``add/corpus/x.py``), or at a
    folder of the package (``grading/judge/faces.py``: a module, or folders only, so
    that a command's output folder that shares a name, ``review/index.html``, is not one)."""
    package = _folders(REPO / "autograder")
    starts = set(ROOTS) | _folders(REPO / "assignments")
    found = []
    for span in re.findall(r"```.*?```|`[^`\n]+`", text, re.S):
        for token in PATH.findall(span):
            token = token.rstrip(".,:;)")
            parts = [p for p in token.split("/") if p]
            if token in TOP_FILES or parts[0] in starts:
                found.append(token)
            elif parts[0] in package and (token.endswith(".py") or all(
                    (REPO / "autograder" / "/".join(parts[:i + 1])).is_dir() for i in range(len(parts)))):
                found.append(token)
    return found


def missing(path: str) -> bool:
    """The path (or, for one with a placeholder, the folder before it) is not in the checkout."""
    fixed = PLACEHOLDER.split(path, 1)[0]
    if fixed != path:
        path = fixed.rsplit("/", 1)[0] if "/" in fixed else fixed
    for base in (REPO, REPO / "autograder", REPO / "assignments"):
        if (base / path).exists():
            return False
    return True


def test_the_path_finder_reads_spans_blocks_and_placeholders():
    text = ("see `autograder/grading/judge/faces.py`, `grading/identity/numbers.py`, "
            "`add/corpus/grid_one_step_too_long.py` and `assignments/<slug>/corpus/`; "
            "```bash\npython benchmarks/grade_bench.py --container\n```\n"
            "not `jax.jit`, `a / b` or `out/speed.json`")
    paths = named_paths(text)
    assert paths == ["autograder/grading/judge/faces.py", "grading/identity/numbers.py",
                     "add/corpus/grid_one_step_too_long.py", "assignments/<slug>/corpus/",
                     "benchmarks/grade_bench.py"]
    assert not any(missing(p) for p in paths)
    assert missing("autograder/feedback/nowhere.py") and missing("grading/nowhere/")


@pytest.mark.parametrize("page", [*GUIDES, README, DOCS / "index.md"], ids=lambda p: p.name)
def test_every_path_a_guide_names_exists(page):
    gone = sorted({p for p in named_paths(page.read_text(encoding="utf-8"))
                   if missing(p) and p not in WRITTEN_BY_COMMANDS})
    assert not gone, f"{page.relative_to(REPO)} names paths the checkout lacks: {gone}"


def test_the_extending_guide_names_the_files_each_walk_through_touches():
    text = (DOCS / "guides" / "extending.md").read_text(encoding="utf-8")
    paths = set(named_paths(text))
    for needed in ("autograder/grading/probes/__init__.py", "autograder/findings/",
                   "autograder/pallas_surface/release/", "requirements/jax-<release>.txt",
                   "tests/test_canaries.py"):
        assert needed in paths, f"extending.md no longer names {needed}"
    for section in ("Add a probe", "Add a finding", "Add an assignment", "Add a JAX release"):
        assert f"\n## {section}\n" in text, section


def test_the_generated_reference_pages_are_the_registries_own_account():
    for rel, text in catalogue_page.pages().items():
        assert (REPO / rel).read_text(encoding="utf-8") == text, \
            f"{rel} is stale: regenerate with `python -m autograder.instructor.catalogue_page`"


def test_the_generated_pages_show_every_registry_entry_and_field():
    page = catalogue_page.findings_page()
    for fid, kind in findings.CATALOGUE.items():
        assert f"\n## {fid}\n" in page and kind.title in page
    probe_page = catalogue_page.probes_page()
    for name in probes.REGISTRY:
        assert f"\n## {name}\n" in probe_page


def test_a_field_the_catalogue_grows_is_shown_without_touching_the_generator():
    kind = next(iter(findings.CATALOGUE.values()))
    Grown = dataclasses.make_dataclass("Grown", [(f.name, f.type) for f in dataclasses.fields(kind)] +
                                       [("chip_line", str), ("same_bug_as", tuple), ("notes", dict)],
                                       frozen=True)
    grown = Grown(**{f.name: getattr(kind, f.name) for f in dataclasses.fields(kind)},
                  chip_line="halts the core", same_bug_as=("data-race",), notes={"hidden": "withheld"})
    rows = dict(catalogue_page._entry_rows(catalogue_page.fields(grown), {}, kind.id,
                                           catalogue_page.Links("findings")))
    assert rows["chip line"] == "halts the core"
    assert rows["same bug as"] == "[`data-race`](#data-race)"
    assert rows["notes"] == "hidden: withheld"


def test_the_readme_is_a_front_door():
    text = README.read_text(encoding="utf-8")
    lines = text.count("\n")
    assert lines <= 300, f"README.md has {lines} lines: it is a front door; move detail into a guide"
    quick = text.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", quick, re.S).group(1)
    assert len([c for c in block.splitlines() if c.strip()]) == 2, block
    for reader in READERS:
        assert f"(docs/guides/{reader}.md)" in text, f"README does not send its readers to {reader}.md"
    for target in re.findall(r"\]\(((?!https?://)[^)#]+)", text):
        assert (REPO / target).exists(), f"README links to {target}, which is not in the checkout"


def test_the_generated_reference_says_how_every_finding_is_detected():
    # The table of every finding is generated from the catalogue (each kind's detected_by),
    # so a new finding needs no line in a guide; the findings guide sends its readers there.
    text = (DOCS / "reference" / "findings.md").read_text(encoding="utf-8")
    table = text.split("\n## Every finding\n", 1)[1].split("\n## ", 1)[0]
    rows = {m.group(1): line for line in table.splitlines() if (m := re.match(r"\| \[`([a-z-]+)`\]", line))}
    assert list(rows) == list(findings.CATALOGUE)
    for fid, kind in findings.CATALOGUE.items():
        assert f"| {catalogue_page._escape(kind.summary)} | {catalogue_page._escape(kind.detected_by)} |" in rows[fid]
    guide = (DOCS / "guides" / "findings.md").read_text(encoding="utf-8")
    assert "(../reference/findings.md#every-finding)" in guide


def test_the_site_builds_with_every_link_and_anchor_resolved(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs-material is not installed: `./setup.sh --test` installs it (the test extra)")
    site = tmp_path / "site"
    # (NO_MKDOCS_2_WARNING: mkdocs-material's notice about its successor, not about this site.)
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    for page in ("index.html", "guides/extending.html", "reference/findings.html", "changelog.html",
                 "tpu-runs.html"):
        assert (site / page).is_file(), page
    # The chip runs' raw data stays in the repository, not on the site.
    assert not (site / "chip-data").exists()
