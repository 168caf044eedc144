"""Screenshots of three block maps, as a student sees them in the HTML report:
out-of-bounds with the clamped window, a never-written row of blocks, and the grid
order that broke a result.

    python benchmarks/blockmap_screenshots.py [-o docs/screenshots] [--run-key 3]
        [--only NAME ...] [--reuse-html]

Each kernel is graded through the real CLI (``grade FILE -a SLUG --format html
--run-key N``), the page is written to OUT/NAME.html, opened in headless Chromium
(Debian's /usr/bin/chromium, driven by Playwright) and the first block-map figure on it
(or the first whose caption names what it shows: the title above the drawing, the
legend and notes as text below it) is screenshotted with a little padding, at device
scale 2, to OUT/NAME.png. ``--reuse-html`` skips grading where
OUT/NAME.html already exists. Grading takes one to two minutes per kernel on 2 cores.
Exits 1 when a page has no block map or lacks the finding ID it is meant to show.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# name: (assignment, corpus kernel, the finding ID whose map it shows, text in that map's
# caption: the first map whose caption has it; None takes the page's first map).
# key_axis_parallel's page has two maps: the output-block-revisit map of its output,
# then the grid-order map (row-major steps beside the order that broke the result).
MAPS = {
    "out-of-bounds-clamped-window": ("add", "grid_one_step_too_long.py", "out-of-bounds", None),
    "never-written-row": ("add", "grid_one_row_short.py", "uninitialized-memory", None),
    "grid-order": ("flash_attention", "key_axis_parallel.py", "grid-order-dependence",
                   "numbered by the step it ran at"),
}
PADDING = 12          # CSS pixels around the SVG
SCALE = 2             # device pixels per CSS pixel


def grade_html(slug: str, kernel: Path, run_key: int) -> str:
    cmd = [sys.executable, "-m", "autograder", "grade", str(kernel.relative_to(REPO)), "-a", slug,
           "--format", "html", "--run-key", str(run_key)]
    print("$", " ".join(cmd[1:]), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=900)
    if proc.returncode != 0:
        sys.exit(f"grading {kernel} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
    if not os.path.exists(path):
        sys.exit("no Chromium here: `./setup.sh --test` installs Debian's chromium package as root")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", type=Path, default=REPO / "docs" / "screenshots")
    ap.add_argument("--run-key", type=int, default=3)
    ap.add_argument("--only", nargs="+", choices=sorted(MAPS), help="just these maps")
    ap.add_argument("--reuse-html", action="store_true", help="use OUT/NAME.html where it exists")
    args = ap.parse_args(argv)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sys.exit("needs playwright (the test extras: pip install -e '.[test]')")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    names = args.only or list(MAPS)

    pages = {}
    for name in names:
        slug, file, finding, _ = MAPS[name]
        html = out / f"{name}.html"
        if not (args.reuse_html and html.is_file()):
            t0 = time.monotonic()
            html.write_text(grade_html(slug, REPO / "assignments" / slug / "corpus" / file, args.run_key),
                            encoding="utf-8")
            print(f"  graded in {time.monotonic() - t0:.0f} s -> {html}", flush=True)
        if finding not in html.read_text(encoding="utf-8"):
            print(f"{name}: the page does not mention {finding}", file=sys.stderr)
            return 1
        pages[name] = html

    failed = False
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 900}, device_scale_factor=SCALE)
        for name, html in pages.items():
            page.goto(html.as_uri())
            title_has = MAPS[name][3]
            figures = page.locator("figure.blockmap")
            if title_has is not None:
                figures = figures.filter(has=page.locator(":scope > figcaption", has_text=title_has))
            if figures.count() == 0:
                print(f"{name}: no block map{f' titled {title_has!r}' if title_has else ''} on {html}",
                      file=sys.stderr)
                failed = True
                continue
            figure = figures.first
            figure.scroll_into_view_if_needed()
            box = page.evaluate("""e => { const r = e.getBoundingClientRect();
                return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height}; }""",
                                figure.element_handle())
            clip = {"x": max(0, box["x"] - PADDING), "y": max(0, box["y"] - PADDING),
                    "width": box["width"] + 2 * PADDING, "height": box["height"] + 2 * PADDING}
            png = out / f"{name}.png"
            page.screenshot(path=str(png), clip=clip, full_page=True)
            title = figure.locator(":scope > figcaption").first.text_content()
            print(f"{png} ({png.stat().st_size // 1024} KB, {clip['width']:.0f} x {clip['height']:.0f} CSS px): "
                  f"{title}")
        browser.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
