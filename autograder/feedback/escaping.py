"""Student-controlled text made inert in each output format (pure functions).

Upload names, exception messages, tracebacks, what the code printed: any of
it may be crafted. In Markdown a newline and ``#### Score: 16 of 16`` would be
a heading, a backtick run would close a code block, ``<`` would be HTML and
``](`` a link; in a terminal an escape sequence would move the cursor; in JSON
a lone surrogate (an undecodable file name) is not text. HTML is escaped by
jinja's autoescape. In every format, bidirectional controls (which reorder what
a reader sees: "Trojan Source") and zero-width characters (which hide text)
are replaced by U+FFFD, as control characters are: every rendered value goes
through ``visible`` (the template environments' ``finalize``).
"""
from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")
# Bidirectional embeddings, overrides and isolates, marks, and zero-width characters.
_INVISIBLE = re.compile("[\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def visible(value: object) -> object:
    """What a reader sees is what there is: invisible and reordering characters
    replaced (a markup string stays markup: its type is kept)."""
    return type(value)(_INVISIBLE.sub("\ufffd", value)) if isinstance(value, str) else value
_LEADING = re.compile(r"^(\s*)([#>=+*\-]|\d+[.)])", re.M)


def plain(text: object) -> str:
    """For a terminal: no control characters (escape sequences) but newline and tab."""
    return _CONTROL.sub("\ufffd", _INVISIBLE.sub("\ufffd", str(text)))


def md_inline(text: object) -> str:
    """For Markdown text: structure-making characters escaped, line by line."""
    s = plain(text).replace("\\", "\\\\").replace("`", "\\`").replace("<", "&lt;")
    s = s.replace("](", "]\\(").replace("![", "!\\[").replace("|", "\\|")
    return _LEADING.sub(lambda m: f"{m.group(1)}\\{m.group(2)}", s)


def md_line(text: object) -> str:
    """For a Markdown heading or list item: one line."""
    return md_inline(" ".join(str(text).splitlines()))


def md_fence(text: object) -> str:
    """A code fence longer than any backtick run in ``text``."""
    runs = [len(r) for r in re.findall(r"`+", str(text))]
    return "`" * max(3, max(runs, default=0) + 1)


def json_text(text: str) -> str:
    """Lone surrogates (from undecodable bytes) replaced: JSON carries text only."""
    return visible(text.encode("utf-8", "surrogatepass").decode("utf-8", "replace"))
