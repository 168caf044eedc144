"""Where the pallas-autograder checkout is, for the verbs that need more than the package.

`build` zips the grader's own files: ``setup.sh``, ``run_autograder``,
``requirements/jax-<release>.txt``, ``pyproject.toml``, ``README.md`` and the
``autograder`` source; `handout` copies the course release's lock into the
student kit as ``requirements.txt``. A regular
install (``./setup.sh``, a wheel) puts the package in site-packages, where
none of those files are, so they are looked for, first match wins, in:

1. the folder holding the running package (a checkout run as ``python -m
   autograder``, or the Gradescope zip's source folder);
2. the current directory, then each of its parents;
3. the folder pip installed this package from (``pip install /path/to/checkout``,
   which ``./setup.sh`` runs, records it in the install's ``direct_url.json``).

A folder counts when its ``pyproject.toml`` names the project ``pallas-autograder``
and it holds the ``autograder`` package.
"""
from __future__ import annotations

import importlib.metadata
import json
import tomllib
import urllib.parse
import urllib.request
from pathlib import Path

NAME = "pallas-autograder"
PACKAGE = Path(__file__).resolve().parents[1]
# What `build` puts at the zip's root (besides the package).
ROOT_FILES = ("setup.sh", "run_autograder", "pyproject.toml", "README.md")


def lock(release: str) -> str:
    """The lock file of a JAX release, relative to the checkout."""
    return f"requirements/jax-{release}.txt"


class NoCheckout(FileNotFoundError):
    """No pallas-autograder checkout where one was looked for: says where, and what it needs."""


def is_checkout(folder: Path) -> bool:
    """``folder`` holds a pyproject.toml naming pallas-autograder and the ``autograder`` package."""
    try:
        data = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    project = data.get("project")
    return isinstance(project, dict) and project.get("name") == NAME and \
        (folder / "autograder" / "__init__.py").is_file()


def installed_from() -> Path | None:
    """The local folder pip installed this package from, if it recorded one (PEP 610)."""
    try:
        text = importlib.metadata.distribution(NAME).read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return None
    try:
        url = json.loads(text or "{}").get("url", "")
    except (ValueError, AttributeError):
        return None
    parsed = urllib.parse.urlparse(url) if isinstance(url, str) else None
    if parsed is None or parsed.scheme != "file":
        return None
    return Path(urllib.request.url2pathname(parsed.path))


def candidates() -> list[Path]:
    """Where a checkout is looked for, in order (see the module docstring), without repeats."""
    cwd = Path.cwd().resolve()
    found = [PACKAGE.parent, cwd, *cwd.parents]
    source = installed_from()
    if source is not None:
        found.append(source)
    return list(dict.fromkeys(found))


def find(needs: tuple[str, ...] = ROOT_FILES) -> Path:
    """The first checkout (see the module docstring) holding every file in ``needs``;
    raises NoCheckout naming every folder it looked in."""
    looked = candidates()
    for folder in looked:
        if is_checkout(folder) and all((folder / f).is_file() for f in needs):
            return folder
    where = ", ".join(str(p) for p in looked)
    raise NoCheckout(f"no pallas-autograder checkout found: looked for a folder whose pyproject.toml names "
                     f"{NAME!r}, holding the autograder package and {', '.join(needs)}, in {where} (the "
                     "running package's folder, the current directory and its parents, and the folder pip "
                     "installed from); run this from your pallas-autograder checkout (cd into it)")
