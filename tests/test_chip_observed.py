"""Every finding's "real TPU" ladder line says what a chip did with its class of bug
(feedback/chip_observed.py, from the chip check's outcomes: docs/chip-outcomes.md), or that
no chip was asked; never an assumption. No JAX."""
import pytest
from test_finding_templates import CASES, _finding

from autograder.feedback import chip_observed, render
from autograder.findings import CATALOGUE, RUNGS


def test_every_class_a_ladder_can_show_has_a_chip_line_or_says_none_was_asked():
    for fid in CATALOGUE:
        line = chip_observed.line(fid)
        assert line.endswith(f"({chip_observed.SOURCE})") or line.startswith("not run on a real TPU"), fid
    assert set(chip_observed.TPU) <= set(CATALOGUE)
    # What the chip showed, in its own words, for the classes it stopped on.
    assert "RuntimeUnexpectedCoreHalt" in chip_observed.TPU["out-of-bounds"]
    assert "nonzero value upon exit" in chip_observed.TPU["dma-protocol"]
    assert "latent" in chip_observed.TPU["data-race"] and "megacore" in chip_observed.TPU["data-race"]


@pytest.mark.parametrize("finding_id", sorted({fid for fid, _problem in CASES if fid in chip_observed.TPU}))
def test_the_ladder_prints_the_chips_line_for_the_real_tpu(finding_id):
    problem = next(p for fid, p in CASES if fid == finding_id)
    out = render.render(f"findings/{finding_id}.j2", "text",
                        fd=render._finding_view(_finding(finding_id, problem, marker=False), True))
    if "Which rung catches it:" not in out:
        pytest.skip(f"{finding_id}'s explanation has no ladder")
    assert f"{RUNGS['tpu']}: {chip_observed.TPU[finding_id]}" in " ".join(out.split())
