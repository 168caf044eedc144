"""Every finding's "real TPU" ladder line says what a chip did with its class of bug
(each kind's ``chip`` in findings/catalogue.py, from the chip check's outcomes:
docs/chip-outcomes.md), or that no chip was asked; never an assumption. No JAX."""
import pytest
from test_finding_templates import CASES, _finding

from autograder.feedback import render
from autograder.findings import CATALOGUE, RUNGS
from autograder.findings.catalogue import CHIP_SOURCE


def test_every_class_a_ladder_can_show_has_a_chip_line_or_says_none_was_asked():
    for fid, kind in CATALOGUE.items():
        line = kind.chip_line()
        assert line.endswith(f"({CHIP_SOURCE})") or line.startswith("not run on a real TPU"), fid
    # What the chip showed, in its own words, for the classes it stopped on.
    assert "RuntimeUnexpectedCoreHalt" in CATALOGUE["out-of-bounds"].chip
    assert "nonzero value upon exit" in CATALOGUE["dma-protocol"].chip
    assert "latent" in CATALOGUE["data-race"].chip and "megacore" in CATALOGUE["data-race"].chip
    # The chip's own findings have no line of what a chip did with them: they are what it did.
    assert {fid for fid, k in CATALOGUE.items() if not k.chip} == {"chip-reject", "chip-divergence"}


@pytest.mark.parametrize("finding_id", sorted({fid for fid, _problem in CASES if CATALOGUE[fid].chip}))
def test_the_ladder_prints_the_chips_line_for_the_real_tpu(finding_id):
    problem = next(p for fid, p in CASES if fid == finding_id)
    out = render.render(f"findings/{finding_id}.j2", "text",
                        fd=render._finding_view(_finding(finding_id, problem, marker=False), True))
    if "Which rung catches it:" not in out:
        pytest.skip(f"{finding_id}'s explanation has no ladder")
    assert f"{RUNGS['tpu']}: {CATALOGUE[finding_id].chip}" in " ".join(out.split())
