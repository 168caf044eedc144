"""Block maps (no JAX): each spatial finding ID's map drawn from the evidence a
real grading of a corpus kernel recorded (tests/blockmaps/*.json, written by
tests/blockmaps/regenerate.py), against its golden text, and its SVG's
structure: the blocks, the marked cells, the legend, a hover title per cell."""
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from autograder.feedback import blockmaps

FIXTURES = Path(__file__).resolve().parent / "blockmaps"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.json"))
SVG = "{http://www.w3.org/2000/svg}"


def _fixture(name: str) -> tuple[dict, blockmaps.BlockMap]:
    doc = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    m = blockmaps.build(doc["finding"], doc["facts"], doc["case"])
    assert m is not None, f"{name}: the recorded evidence draws no map"
    return doc, m


def test_every_spatial_finding_id_has_a_golden_map_from_a_corpus_kernel():
    ids = {json.loads((FIXTURES / f"{n}.json").read_text())["finding"] for n in NAMES}
    assert ids == set(blockmaps.SPATIAL)
    for name in NAMES:
        kernel = json.loads((FIXTURES / f"{name}.json").read_text())["kernel"]
        assert (FIXTURES.parents[1] / kernel).is_file(), kernel


@pytest.mark.parametrize("name", NAMES)
def test_text_map_matches_its_golden_and_fits_a_terminal(name):
    _doc, m = _fixture(name)
    text = blockmaps.text(m)
    assert text + "\n" == (FIXTURES / f"{name}.txt").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= blockmaps.WIDTH     # 80 columns once indented by 4
    assert len(lines) <= 16
    assert sum(line.startswith("Legend: ") for line in lines) == 1


def _cells(root) -> list:
    return [g for g in root.iter(f"{SVG}g") if g.find(f"{SVG}rect") is not None]


@pytest.mark.parametrize("name", NAMES)
def test_svg_has_every_block_marked_cells_hover_titles_and_a_name_that_says_what_is_marked(name):
    _doc, m = _fixture(name)
    out = blockmaps.svg(m)
    root = ET.fromstring(out)                               # well-formed XML
    assert root.tag == f"{SVG}svg" and root.get("class") == "blockmap"
    assert "<script" not in out and "href" not in out and "url(" not in out   # self-contained, inert
    cells = _cells(root)
    assert len(cells) == sum(len(p.cells) for p in m.panels)
    # Every cell says what it is on hover: its block (or grid point) and elements.
    titles = [g.find(f"{SVG}title").text for g in cells]
    assert all(titles) and all(("block" in t or "grid point" in t or "elements" in t) for t in titles)
    marked = [c for p in m.panels for c in p.cells if c.mark not in ("ok", "step")]
    fills = [g.find(f"{SVG}rect").get("fill") for g in cells]
    assert sum(f != blockmaps.MARKS["ok"].fill for f in fills) == len(marked) > 0
    assert root.find(f"{SVG}title").text == m.title
    # An image (WCAG 1.1.1) named by its title and how many cells each mark marks.
    assert root.get("role") == "img"
    name = root.get("aria-label")
    assert name.startswith(m.title + ". ")
    for entry, n in blockmaps.marked_counts(m):
        if n:
            assert f"{entry.meaning}: {n} cell" in name, entry


@pytest.mark.parametrize("name", NAMES)
def test_the_figure_gives_title_legend_notes_and_every_marked_cell_as_text(name):
    _doc, m = _fixture(name)
    out = blockmaps.figure(m)
    root = ET.fromstring(out.replace('xmlns="http://www.w3.org/2000/svg" ', ""))   # well-formed too
    assert root.tag == "figure" and root.find("figcaption").text == m.title
    legend = [li.find("span").tail for li in root.find("ul[@class='map-legend']")]
    assert legend == [e.meaning for e in m.legend]
    assert [p.text for p in root.find("div[@class='map-notes']")] == list(m.notes)
    listed = [li.text for li in root.find("details/ul")]
    assert listed == blockmaps.marked_cells(m)[:blockmaps.MAX_LISTED]
    assert len(listed) == sum(c.mark not in blockmaps.PLAIN for p in m.panels for c in p.cells) > 0


def test_marks_stand_out_from_plain_blocks_and_their_symbols_read():
    """WCAG 1.4.11 and 1.4.3: a mark's fill against a plain (white) block at 3:1 or
    more, so a cell too small for its symbol is still seen; the symbol on it at 4.5:1.
    The grid-order highlight was 1.13:1."""
    white = blockmaps.MARKS["ok"].fill
    assert blockmaps.contrast("#fff1c2", white) < 1.2 and round(blockmaps.contrast("#000000", white)) == 21
    for key, mark in blockmaps.MARKS.items():
        if key not in blockmaps.PLAIN:
            assert blockmaps.contrast(mark.fill, white) >= 3, key
        colour = blockmaps.label_colour(mark.fill)
        assert blockmaps.contrast(mark.fill, colour) >= 4.5, key
    assert blockmaps.contrast("#6e7781", white) >= 3       # the cells' borders


def test_out_of_bounds_marks_the_block_outside_and_the_clamped_window():
    _doc, m = _fixture("out-of-bounds")
    cells = {(c.row, c.col): c for c in m.panels[0].cells}
    assert [k for k, c in cells.items() if c.mark == "outside"] == [(0, 3), (1, 3), (2, 3)]
    assert [k for k, c in cells.items() if c.mark == "clamped"] == [(0, 2)]
    assert m.panels[0].inside == (0, 3, 0, 3)                 # the array's extent: 3 x 3 blocks
    assert "grid point (0, 3) asks for block (0, 3)" in cells[(0, 3)].title
    assert "reads elements 0:8, 256:384" in cells[(0, 2)].title


def test_a_never_written_row_is_a_row_of_unwritten_blocks():
    _doc, m = _fixture("uninitialized-memory")
    unwritten = sorted((c.row, c.col) for c in m.panels[0].cells if c.mark == "unwritten")
    assert unwritten == [(2, 0), (2, 1), (2, 2)]


def test_grid_order_numbers_each_grid_point_beside_row_major_order():
    doc, m = _fixture("grid-order-dependence")
    row_major, broken = m.panels
    assert [c.label for c in row_major.cells] == [str(i) for i in range(len(row_major.cells))]
    order = [tuple(p) for p, _core in doc["facts"]["order"]]
    for c in broken.cells:
        point = (*map(int, broken.row_labels[c.row].split(",")), c.col)
        assert int(c.label.rstrip("*")) == order.index(point)


def test_wrong_elements_are_counted_per_block_and_a_pattern_is_named():
    facts = {"wrong_by_block": {"operand": "output 0", "array_shape": [24, 1024], "block_shape": [8, 128],
                                "grid": [3, 8], "cells": [3, 8], "group": [1, 1],
                                "counts": ([0] * 7 + [1024]) * 3}, "nonfinite": 0}
    m = blockmaps.build("wrong-result", facts, "wide")
    text = blockmaps.text(m)
    assert "Only block column 7 (of 8) has wrong elements." in text
    assert [c.label for c in m.panels[0].cells if c.mark == "wrong"] == ["1k"] * 3


def test_a_large_grid_is_downsampled_and_the_map_says_so():
    facts = {"wrong_by_block": {"operand": "output 0", "array_shape": [4096, 4096], "block_shape": [8, 128],
                                "grid": [512, 32], "cells": [256, 16], "group": [2, 2], "counts": [1] * 4096}}
    m = blockmaps.build("numerics", facts, "big")
    text = blockmaps.text(m)
    assert len(m.panels[0].row_labels) <= blockmaps.MAX_ROWS and len(text.splitlines()) <= 16
    assert "Each cell is 64 x 2 blocks (the array has 512 x 32)" in " ".join(text.split())
    assert "wrong elements in the cell" in text


def test_student_text_is_escaped_in_the_svg_and_the_figure():
    facts = {"window": {"element_range": [[0, 8], [256, 384]], "array_shape": [16, 256],
                        "read_instead": [[0, 8], [128, 256]], "access": "read", "block_index": [0, 2],
                        "grid_point": [0, 2], "operand": 'input "<script>alert(1)</script>"'}}
    m = blockmaps.build("out-of-bounds", facts, "small")
    for out in (blockmaps.svg(m), blockmaps.figure(m, "<b>lead</b>")):
        assert "<script>" not in out and "&lt;script&gt;" in out and "<b>" not in out
        ET.fromstring(out)


def test_evidence_without_where_draws_no_map():
    assert blockmaps.build("wrong-result", {"mismatches": 3, "total": 4}, "small") is None
    assert blockmaps.build("out-of-bounds", {"rule": "x", "window": None}, "small") is None
    assert blockmaps.build("vmem-overflow", {"bytes": 1}, "small") is None
    assert blockmaps.build("grid-order-dependence", {"order": [[[0], 0]], "order_length": 2, "grid": [2]},
                           "small") is None                 # a partial order is not drawn


@pytest.mark.parametrize("name", NAMES)
def test_a_map_survives_results_json_and_bad_data_is_refused(name):
    _doc, m = _fixture(name)
    assert blockmaps.decode(json.loads(json.dumps(blockmaps.encode(m)))) == m
    bad = blockmaps.encode(m)
    bad["panels"][0]["cells"][0]["mark"] = "<b>"
    assert blockmaps.decode(bad) is None
    assert blockmaps.decode({"title": 1}) is None and blockmaps.decode("x") is None
