"""The HTML report in a real browser: Debian's headless Chromium, driven by
Playwright. Skips (with the reason) where Chromium is not installed."""
import re
import shutil

import pytest
from accessibility import audit
from conftest import corpus, run_cli

pytestmark = [pytest.mark.jax, pytest.mark.grading]   # grades through real JAX first


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("no Chromium here: `./setup.sh --test` installs Debian's chromium package as root")
    return path


def test_html_report_is_a_self_contained_styled_page(tmp_path):
    chromium = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="the test extras (playwright) are not installed")
    proc = run_cli("grade", str(corpus("add") / "grid_one_step_too_long.py"), "-a", "add",
                   "--format", "html", "--run-key", "3")
    assert proc.returncode == 0, proc.stderr[-2000:]
    page_file = tmp_path / "report.html"
    page_file.write_text(proc.stdout, encoding="utf-8")
    # Nothing fetched (an inline SVG's namespace name is an identifier, not a fetch).
    text = proc.stdout.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "http://" not in text and "https://" not in text
    shot = tmp_path / "report.png"
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        errors = []
        page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: errors.append(f"request {r.url}") if not r.url.startswith("file:") else None)
        page.goto(page_file.as_uri())
        page.screenshot(path=str(shot), full_page=True)
        # Summary first, then the tests; passed and failed look different.
        order = page.evaluate("[...document.querySelector('main').children].map(e => e.className || e.tagName)")
        assert order.index("summary") < order.index("test fail")
        assert page.locator("ol.problems li").count() == 1
        colours = page.evaluate("""() => ['pass', 'fail'].map(k =>
            getComputedStyle(document.querySelector('section.test.' + k)).borderLeftColor)""")
        assert colours[0] != colours[1]
        assert page.locator("section.test.fail").count() == 4 and page.locator("section.test.pass").count() == 10
        # Every code block has a working copy button.
        assert page.locator("pre").count() == page.locator("pre button.copy").count() >= 2
        button = page.locator("pre button.copy").first
        button.click()
        # The block is selected at once; the clipboard, where it answers, makes it "Copied".
        sync_api.expect(button).not_to_have_text("Copy", timeout=10_000)
        assert button.inner_text() in ("Copied", "Selected: press Ctrl+C")
        assert page.evaluate("window.getSelection().toString()").strip()
        # The one problem's block map, drawn inline under the test that explains it: the
        # array's blocks, the block outside it and the clamped window, each with a hover title.
        figure = page.locator("#test-1\\.2 figure.blockmap")
        drawing = figure.locator("svg")
        assert page.locator("figure.blockmap svg").count() == 1 and drawing.count() == 1
        titles = drawing.locator("g > title").all_text_contents()
        assert len(titles) == 5 and any("grid point (0, 2)" in t for t in titles)
        assert drawing.evaluate("e => e.getBoundingClientRect().width") > 100
        # Everyone gets what it shows (WCAG 1.1.1): the drawing is an image named by what
        # it marks; the title, legend and notes are text; each marked cell's hover text is
        # listed in words, opened from the keyboard.
        name = drawing.get_attribute("aria-label")
        assert drawing.get_attribute("role") == "img" and "asked for outside the array: 1 cell" in name
        assert "read instead (start clamped inside): 1 cell" in name
        assert figure.locator("figcaption").inner_text().startswith('input "x_ref" (16, 256) in 8 x 128 blocks')
        legend = figure.locator(".map-legend").inner_text()
        assert "asked for outside the array" in legend and "read instead (start clamped inside)" in legend
        assert "the generic interpreter" in figure.locator(".map-notes").inner_text()
        summary = figure.locator("details.map-cells summary")
        summary.focus()
        page.keyboard.press("Enter")
        cells = figure.locator("details.map-cells li")
        sync_api.expect(cells.first).to_be_visible()
        assert cells.count() == 2 and any("grid point (0, 2)" in t and "outside the array (16, 256)" in t
                                          for t in cells.all_inner_texts())
        map_shot = tmp_path / "map.png"
        figure.screenshot(path=str(map_shot))
        # WCAG 2.2 AA by axe-core, at 1100 and 320 CSS px, and reflow at 320.
        assert audit(page) == []
        browser.close()
    assert errors == []
    assert shot.stat().st_size > 10_000 and map_shot.stat().st_size > 2_000
    print(f"screenshot: {shot}, the map: {map_shot}")


def test_every_reference_to_another_test_links_to_its_section(grade_cli, tmp_path):
    """Issue 45: the summary linked "Explained under test 1.2", but inside the tests a
    reference to another test was plain text. On the self-contained page each is a link
    to that test's section; Gradescope's html (results.json: no such sections) keeps the words."""
    doc, page = grade_cli(corpus("matmul") / "k_axis_parallel.py", "matmul", "--format", "html", "--run-key", "3")

    def section(number: str) -> str:
        start = page.index(f'id="test-{number}">')
        return page[start:page.index("</section>", start)]

    problem = "problem 1, Output block revisited [output-block-revisit]"
    assert ('<p>Problem 1, Output block revisited [output-block-revisit], explained under <a href="#test-1.2">test '
            '1.2</a>: output 0: block (0, 0) is written at grid points (0, 0, 0) and (0, 0, 1), which differ along '
            'axis 2, marked parallel.</p>') in section("2.2")
    assert ('<p>Same bug, not charged again: this check saw Depends on grid order [grid-order-dependence], another '
            f'view of {problem}, which already cost points in <a href="#test-1.2">test 1.2</a>.</p>') in section("P6")
    assert (f'<p>Same bug, not charged again: this check found {problem}, which already cost points in '
            '<a href="#test-1.2">test 1.2</a>.</p>') in section("P1")
    assert ('<p>note: <a href="#test-P5">check P5</a> (poisoning) sees this bug too, as depends on uninitialized '
            'memory [uninitialized-memory].</p>') in section("1.2")
    # Every link on the page leads to a section that is there.
    targets = re.findall(r'href="#([^"]+)"', page)
    assert len(targets) >= 8 and all(f'id="{t}"' in page for t in targets)
    # Gradescope's html for each test: the same words, no link (its page has no such sections).
    shown = {t["number"]: t["output"] for t in doc["tests"]}
    assert "<a " not in "".join(shown.values()) and "explained under test 1.2" in shown["2.2"]
    assert "which already cost points in test 1.2." in shown["P6"]
    # In Chromium: a link leads to its test, and the page still meets WCAG 2.2 AA (axe-core).
    chromium = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="the test extras (playwright) are not installed")
    page_file = tmp_path / "report.html"
    page_file.write_text(page, encoding="utf-8")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        view = browser.new_page()
        view.goto(page_file.as_uri())
        view.locator("#test-P6 a", has_text="test 1.2").click()
        assert view.evaluate("location.hash") == "#test-1.2"
        assert audit(view, widths=(1280, 390)) == []
        browser.close()
