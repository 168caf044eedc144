"""A test named in a grading's feedback, as a link to that test on the TA's page.

The feedback the site shows is Gradescope's Markdown, which names other tests in
words ("explained under test 1.2", "cost 5 points in tests 1.2, 2.2", "check P5
sees this bug too"). On a submission's page every test is a section with
``id="test-N"``, so each such number becomes a link there, as on the self-contained
HTML report. Only text outside code is touched, and only numbers that are a test
on this page: the words stay as they were (escaped by the renderer), the link's
target is one the site chose.
"""
from __future__ import annotations

import re
from typing import Any

NUMBER = r"[A-Z]?\d+(?:\.\d+)*"
# "test 1.2", "tests 1.2, 2.2 and 3.2", "check P5": the word, then one number or a list.
_REF = re.compile(rf"\b(?:[Tt]ests?|[Cc]hecks?) ({NUMBER}(?:(?:,| and|, and) {NUMBER})*)\b")
_ONE = re.compile(rf"\b{NUMBER}\b")


def spans(text: str, anchors: frozenset[str]) -> list[tuple[int, int, str]]:
    """Where ``text`` names a test on the page: (start, end, number) for each link.
    A lone reference links its words ("test 1.2"); in a list each number links alone."""
    out = []
    for m in _REF.finditer(text):
        numbers = list(_ONE.finditer(m.group(1), 0))
        if len(numbers) == 1 and numbers[0].group() in anchors:
            out.append((m.start(), m.end(), numbers[0].group()))
            continue
        base = m.start(1)
        out.extend((base + n.start(), base + n.end(), n.group()) for n in numbers if n.group() in anchors)
    return out


def _split(tok: Any, anchors: frozenset[str], token_type: Any) -> list[Any]:
    text, pieces, at = tok.content, [], 0
    for start, end, number in spans(text, anchors):
        if start > at:
            pieces.append(_text(token_type, text[at:start]))
        pieces.append(token_type("link_open", "a", 1, attrs={"href": f"#test-{number}"}))
        pieces.append(_text(token_type, text[start:end]))
        pieces.append(token_type("link_close", "a", -1))
        at = end
    if not pieces:
        return [tok]
    if at < len(text):
        pieces.append(_text(token_type, text[at:]))
    return pieces


def _text(token_type: Any, content: str) -> Any:
    t = token_type("text", "", 0)
    t.content = content
    return t


def rule(state: Any) -> None:
    """A markdown-it core rule: reads the page's test numbers from ``env["anchors"]``."""
    from markdown_it.token import Token
    anchors = frozenset(state.env.get("anchors") or ()) if isinstance(state.env, dict) else frozenset()
    if not anchors:
        return
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children, depth = [], 0
        for tok in block.children:
            depth += tok.type == "link_open"
            depth -= tok.type == "link_close"
            children.extend(_split(tok, anchors, Token) if tok.type == "text" and depth == 0 else [tok])
        block.children = children
