"""A block map as SVG and HTML, for the HTML report and the TA site: an image named by
what it marks, a title on every cell, no script; the legend and every marked cell in words."""
from __future__ import annotations

from html import escape

from .model import MARKS, PLAIN, BlockMap, Cell, Legend, Panel

# ---- SVG and HTML (the HTML report and the TA site) --------------------------

CHAR_PX = 6.8       # an estimate of a 12px character's width, for the layout
PAD = MARKS["padding"].fill
TEXT_DARK, TEXT_LIGHT = "#1f2328", "#ffffff"
MAX_LISTED = 100    # marked cells listed in words under a drawn map


def _luminance(colour: str) -> float:
    """WCAG 2's relative luminance of a #rrggbb colour."""
    def channel(v: int) -> float:
        c = v / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: str, b: str) -> float:
    """WCAG 2's contrast ratio of two #rrggbb colours (1 to 21)."""
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def label_colour(fill: str) -> str:
    """The text colour that reads best on a fill (black or white)."""
    return max((TEXT_DARK, TEXT_LIGHT), key=lambda t: contrast(fill, t))


def _cell_px(panels: tuple[Panel, ...]) -> int:
    cols = max(len(p.col_labels) for p in panels) * len(panels)
    return 28 if cols <= 20 else max(12, 560 // cols)


def _svg_cell(c: Cell, x: float, y: float, s: int, outside: bool) -> str:
    mark = MARKS[c.mark]
    dash = ' stroke-dasharray="3 2"' if outside else ""
    out = [f'<g><title>{escape(c.title)}</title>',
           f'<rect x="{x:g}" y="{y:g}" width="{s}" height="{s}" fill="{mark.fill}" stroke="#6e7781"{dash}/>']
    vr, vc = c.valid
    if vr < 1:
        out.append(f'<rect x="{x:g}" y="{y + vr * s:g}" width="{s}" height="{(1 - vr) * s:g}" fill="{PAD}" '
                   'fill-opacity="0.6"/>')
    if vc < 1:
        out.append(f'<rect x="{x + vc * s:g}" y="{y:g}" width="{(1 - vc) * s:g}" height="{s}" fill="{PAD}" '
                   'fill-opacity="0.6"/>')
    label = c.label or (mark.char if c.mark not in ("ok", "step") else "")
    if label and len(label) * CHAR_PX * 0.85 <= s + 2:
        out.append(f'<text x="{x + vc * s / 2:g}" y="{y + vr * s / 2 + 4:g}" text-anchor="middle" font-size="11" '
                   f'fill="{label_colour(mark.fill)}">{escape(label)}</text>')
    return "".join(out) + "</g>"


def _svg_panel(p: Panel, x0: float, y0: float, s: int) -> tuple[list[str], float, float]:
    """One panel at (x0, y0): caption, labels, cells, the array's edge. Returns its
    elements, width and height."""
    out, y = [], y0
    if p.caption:
        out.append(f'<text x="{x0:g}" y="{y + 12:g}" font-weight="600">{escape(p.caption)}</text>')
        y += 18
    left = x0 + max(len(v) for v in p.row_labels) * CHAR_PX + 6
    for c, label in enumerate(p.col_labels):
        out.append(f'<text x="{left + c * s + s / 2:g}" y="{y + 11:g}" text-anchor="middle" font-size="10" '
                   f'fill="#57606a">{escape(label)}</text>')
    y += 15
    for r, label in enumerate(p.row_labels):
        out.append(f'<text x="{left - 5:g}" y="{y + r * s + s / 2 + 4:g}" text-anchor="end" font-size="10" '
                   f'fill="#57606a">{escape(label)}</text>')
    r0, r1, c0, c1 = p.inside
    for cell in p.cells:
        outside = not (r0 <= cell.row < r1 and c0 <= cell.col < c1)
        out.append(_svg_cell(cell, left + cell.col * s, y + cell.row * s, s, outside))
    edge = {(cell.row, cell.col): cell.valid for cell in p.cells}
    h = (r1 - r0 - 1 + edge.get((r1 - 1, c0), (1.0, 1.0))[0]) * s
    w = (c1 - c0 - 1 + edge.get((r0, c1 - 1), (1.0, 1.0))[1]) * s
    out.append(f'<rect x="{left + c0 * s:g}" y="{y + r0 * s:g}" width="{w:g}" height="{h:g}" fill="none" '
               'stroke="#1f2328" stroke-width="2"><title>the array\'s extent</title></rect>')
    width = max(left - x0 + len(p.col_labels) * s, len(p.caption) * CHAR_PX)
    return out, width, y - y0 + len(p.row_labels) * s


def marked_counts(m: BlockMap) -> list[tuple[Legend, int]]:
    """Each legend entry that marks something, with how many cells it marks."""
    cells = [c for p in m.panels for c in p.cells]
    return [(e, sum(c.mark == e.mark for c in cells)) for e in m.legend if e.mark not in PLAIN]


def accessible_name(m: BlockMap) -> str:
    """What the drawing shows, in words: its title, its panels and how many cells
    each mark marks (the legend, the notes and each marked cell follow as text)."""
    parts = [m.title]
    if len(m.panels) > 1:
        parts.append("Panels, left to right: " + "; ".join(p.caption for p in m.panels))
    marked = [f"{e.meaning}: {n} cell{'' if n == 1 else 's'}" for e, n in marked_counts(m) if n]
    parts.append("Marked: " + "; ".join(marked) if marked else "Nothing marked")
    return ". ".join(parts) + ". The legend, the notes and each marked cell follow as text."


def marked_cells(m: BlockMap) -> list[str]:
    """Each marked cell's hover text (a mouse shows it; a keyboard, a screen reader
    or a touch screen never does), its panel named where there are several."""
    return [(f"{p.caption}: " if len(m.panels) > 1 and p.caption else "") + c.title
            for p in m.panels for c in p.cells if c.mark not in PLAIN]


def svg(m: BlockMap) -> str:
    """The map's panels as one self-contained <svg> element: every text escaped, no
    script, no external reference; an image whose accessible name says what is
    marked, each cell's <title> its hover text. The title, legend and notes are
    HTML text beside it (``figure``), where they reflow and every reader gets them."""
    s = _cell_px(m.panels)
    parts, x, height = [], 8.0, 0.0
    for p in m.panels:
        els, w, h = _svg_panel(p, x, 4, s)
        parts += els
        x, height = x + w + 40, max(height, h)
    width, total = x - 40 + 8, height + 10
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="blockmap" role="img" '
            f'aria-label="{escape(accessible_name(m))}" width="{width:.0f}" height="{total:.0f}" '
            f'viewBox="0 0 {width:.0f} {total:.0f}" font-family="system-ui, sans-serif" font-size="12">'
            f'<title>{escape(m.title)}</title>')
    return head + "".join(parts) + "</svg>"


def _legend_item(e: Legend) -> str:
    fill = MARKS[e.mark].fill
    style = f"background:{fill};color:{label_colour(fill)}" + (";opacity:.6" if e.mark == "padding" else "")
    return (f'<li><span class="swatch" style="{style}" aria-hidden="true">{escape(e.symbol)}</span>'
            f'{escape(e.meaning)}</li>')


def figure(m: BlockMap, lead: str = "") -> str:
    """The map as an HTML <figure>: the title as its caption (``lead`` before it),
    the drawing, then the legend, the notes and every marked cell in words, as
    text that reflows and that a keyboard and a screen reader reach."""
    cells = marked_cells(m)
    listed = "".join(f"<li>{escape(t)}</li>" for t in cells[:MAX_LISTED])
    if len(cells) > MAX_LISTED:
        listed += f"<li>and {len(cells) - MAX_LISTED} more</li>"
    caption = (f'<span class="lead">{escape(lead)}</span> ' if lead else "") + escape(m.title)
    legend = "".join(_legend_item(e) for e in m.legend)
    notes = "".join(f"<p>{escape(n)}</p>" for n in m.notes)
    details = (f'<details class="map-cells"><summary>Each marked cell in words ({len(cells)})</summary>'
               f"<ul>{listed}</ul></details>" if cells else "")
    return (f'<figure class="blockmap"><figcaption>{caption}</figcaption>{svg(m)}'
            f'<ul class="map-legend" aria-label="Legend">{legend}</ul>'
            f'<div class="map-notes">{notes}</div>{details}</figure>')
