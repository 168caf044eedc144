"""A block map as text: the terminal and Markdown code blocks (monospace, at most 76
columns, a one-line legend)."""
from __future__ import annotations

from .model import MARKS, WIDTH, BlockMap, Cell, Panel

# ---- text (terminal, Markdown code block) ------------------------------------

def _wrap(text: str, width: int = WIDTH) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + ([line] if line else [])


def _symbol(cell: Cell) -> str:
    return cell.label or MARKS[cell.mark].char


def _panel_lines(p: Panel) -> list[str]:
    """One panel: a column header, a row per cell row, the array's edge drawn
    where blocks outside it are (| between columns, - between rows)."""
    grid = {(c.row, c.col): _symbol(c) for c in p.cells}
    w = max([2, *(len(v) for v in grid.values()), *(len(v) for v in p.col_labels)]) + 1
    rl = max(len(v) for v in p.row_labels)
    r0, r1, c0, c1 = p.inside

    def row(values: list[str], lead: str) -> str:
        out = lead.rjust(rl) + " "
        for c, v in enumerate(values):
            edge = "|" if (c == c0 and c0 > 0) or (c == c1 and c1 < len(values)) else " "
            out += edge + v.rjust(w - 1)
        return out.rstrip()

    def rule() -> str:
        return " " * (rl + 1 + c0 * w) + "-" * (w * (c1 - c0))

    lines = [p.caption] if p.caption else []
    lines.append(row(list(p.col_labels), ""))
    for r, label in enumerate(p.row_labels):
        if (r == r0 and r0 > 0) or (r == r1 and r1 < len(p.row_labels)):
            lines.append(rule())
        lines.append(row([grid.get((r, c), "") for c in range(len(p.col_labels))], label))
    return lines


def _beside(blocks: list[list[str]], gap: int = 4) -> list[str] | None:
    widths = [max(len(line) for line in b) for b in blocks]
    if sum(widths) + gap * (len(blocks) - 1) > WIDTH:
        return None
    height = max(len(b) for b in blocks)
    return ["".join(line.ljust(wd + gap) for line, wd in
                    zip((b[i] if i < len(b) else "" for b in blocks), widths)).rstrip() for i in range(height)]


def legend_line(m: BlockMap) -> str:
    """The legend in one line (a mark drawn only as a shade has no symbol: SVG only)."""
    return "; ".join(f"{e.symbol} {e.meaning}" for e in m.legend if e.symbol)


def text(m: BlockMap) -> str:
    """The map as monospace lines of at most WIDTH columns: title, panels, legend, notes."""
    panels = [_panel_lines(p) for p in m.panels]
    body = _beside(panels) if len(panels) > 1 else None
    if body is None:
        body = [line for i, p in enumerate(panels) for line in ([""] if i else []) + p]
    lines = _wrap(m.title) + body + _wrap("Legend: " + legend_line(m))
    for note in m.notes:
        lines += _wrap(note)
    return "\n".join(line[:WIDTH] for line in lines)
