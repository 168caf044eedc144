"""The spec's top-level ``jax = "..."`` line, the course's JAX release, as text: one
place for the two that handle the line itself rather than the parsed spec. ``build``
writes it into the spec it zips; the calibration's spec hash leaves it out (it names
which release grades, and changes no time a run takes on that release)."""
from __future__ import annotations

import json
import re
import tomllib

_LINE = re.compile(r'^jax\s*=.*(?:\n|$)', re.M)


def with_release(text: str, release: str) -> str:
    """``spec.toml`` text naming ``release`` as the course's JAX: the line replaced
    where the spec has one, else put first (a top-level key must come before the
    first table). Read back to check it says exactly that."""
    line = f"jax = {json.dumps(release)}\n"
    out = _LINE.sub(line, text, count=1) if _LINE.search(text) else line + text
    if tomllib.loads(out).get("jax") != release:
        raise ValueError(f"spec.toml: could not write jax = {release!r} (a 'jax' key inside a table?)")
    return out


def without_release(text: str) -> str:
    """``spec.toml`` text with its ``jax`` line removed."""
    return _LINE.sub("", text)
