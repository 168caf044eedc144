"""Block maps: a finding's spatial evidence drawn as the operand's array cut
into the kernel's blocks, with what went wrong marked. Pure Python: no JAX,
no numpy; the checks computed every fact (``grading.regions``), this only draws.

``build(finding_id, facts, case)`` turns a finding's evidence into a typed
``BlockMap`` (None when the evidence holds nothing to draw); ``text`` renders
it for the terminal and Markdown (monospace, at most 76 columns and about 16
lines, large grids downsampled and saying so, a one-line legend); ``figure``
as an HTML <figure> for the HTML report and the TA site: the title, the cells as
a self-contained inline SVG (``svg``: an image named by what it marks, a hover
title on every cell, no script), then the legend, the notes and every marked
cell in words. ``encode``/``decode`` carry a map through results.json to the TA site.
"""
from .makers import MAKERS, SPATIAL, build  # noqa: F401
from .model import (  # noqa: F401
    MARKS,
    MAX_COLS,
    MAX_ROWS,
    PLAIN,
    WIDTH,
    Block,
    BlockMap,
    Cell,
    Field,
    Index,
    Legend,
    Mark,
    Panel,
    blocks_along,
    compact,
    decode,
    elements,
    encode,
    overlapping,
    project,
)
from .svg import MAX_LISTED, accessible_name, contrast, figure, label_colour, marked_cells, marked_counts, svg  # noqa: F401
from .text import legend_line, text  # noqa: F401
