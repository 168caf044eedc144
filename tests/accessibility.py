"""WCAG 2.2 AA in a real browser, for the browser tests (test_html, test_review).

axe-core (Deque's rule engine, the checker most accessibility audits start from)
runs inside the page under test, in Debian's Chromium. It comes from PyPI, pinned:
the test extra ``axe-playwright-python==0.1.8`` ships axe-core 4.12.1 as
``axe_playwright_python/axe.min.js``, which ``./setup.sh --test`` (pip) installs
on a fresh machine; only that file is used, injected with Playwright's own
``add_script_tag``. Reflow (WCAG 1.4.10) is checked here too: axe cannot, since
it needs the page laid out at 320 CSS px.
"""
from __future__ import annotations

import re
from importlib import resources

import pytest

AXE_PACKAGE = "axe_playwright_python"
AXE_VERSION = "4.12.1"          # what the pinned wheel ships; a different one fails loudly
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
REFLOW_PX = 320                 # 1280 px at 400 % zoom (WCAG 1.4.10)


def axe_source() -> str:
    try:
        source = (resources.files(AXE_PACKAGE) / "axe.min.js").read_text(encoding="utf-8")
    except ModuleNotFoundError:
        pytest.fail(f"axe-core is missing: `./setup.sh --test` installs it ({AXE_PACKAGE.replace('_', '-')}"
                    f"==0.1.8 from PyPI, the test extra, ships axe-core {AXE_VERSION})")
    head = re.match(r"/\*! axe v([0-9.]+)", source)
    assert head and head.group(1) == AXE_VERSION, f"expected axe-core {AXE_VERSION}, got {head and head.group(1)}"
    return source


def violations(page) -> list[str]:
    """axe-core's WCAG 2.0-2.2 A and AA violations on the page as it is now, one
    line per rule: its id, how many elements, and the first few elements."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=axe_source())
    result = page.evaluate("tags => axe.run(document, {runOnly: {type: 'tag', values: tags}})", WCAG_TAGS)
    assert result["testEngine"]["version"] == AXE_VERSION
    ran = {r["id"] for r in result["passes"]}
    assert {"color-contrast", "document-title", "html-has-lang"} <= ran, ran     # the rules ran on this page
    return [f"{v['id']} ({v['impact']}, {len(v['nodes'])}x): {v['help']}: "
            + "; ".join(" ".join(n["target"]) + " " + n["failureSummary"].replace("\n", " ")[:160]
                        for n in v["nodes"][:3])
            for v in result["violations"]]


def reflow(page) -> list[str]:
    """At 320 CSS px the page does not scroll sideways, and no block map is cut off
    (a wide table may scroll inside its own region, which a keyboard can focus)."""
    page.set_viewport_size({"width": REFLOW_PX, "height": 800})
    problems = []
    width = page.evaluate("document.documentElement.scrollWidth")
    if width > REFLOW_PX:
        problems.append(f"the page is {width} px wide at {REFLOW_PX} px")
    cut = page.evaluate("""w => [...document.querySelectorAll('figure.blockmap svg, figure.blockmap figcaption')]
        .filter(e => e.getBoundingClientRect().right > w + 0.5 || e.getBoundingClientRect().width < 10)
        .map(e => e.tagName + ' ' + Math.round(e.getBoundingClientRect().right))""", REFLOW_PX)
    problems += [f"block map cut off: {c}" for c in cut]
    return problems


def audit(page, widths=(1100, REFLOW_PX)) -> list[str]:
    """axe at each width (rules such as target size and scrollable regions depend
    on the layout), then reflow; the viewport is left at the first width."""
    found = []
    for w in widths:
        page.set_viewport_size({"width": w, "height": 800})
        found += [f"at {w} px: {v}" for v in violations(page)]
    found += reflow(page)
    page.set_viewport_size({"width": widths[0], "height": 800})
    return found
