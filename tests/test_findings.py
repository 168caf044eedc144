"""The finding type and catalogue (pure logic, no JAX)."""
import dataclasses

import pytest

from autograder.findings import CATALOGUE, PRECEDENCE, Finding, primary


def test_catalogue_still_holds_every_published_id():
    # IDs are a public contract (results.json tags): one published is never removed or renamed.
    assert set(CATALOGUE) >= {
        "submission-error", "wrong-result", "numerics", "out-of-bounds", "output-block-revisit",
        "uninitialized-memory", "grid-order-dependence", "padding-dependence", "data-race",
        "dma-protocol", "compile-reject", "vmem-overflow", "not-a-kernel", "inconsistent-kernel",
        "chip-reject", "chip-divergence"}


def test_finding_is_immutable_and_evidence_is_frozen():
    f = Finding.make("wrong-result", "generic", "bad", case="c", indices=[[0, 1]], nested={"a": [1]})
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.id = "numerics"
    # Frozen all the way down: equal findings hash equal, and nested evidence is a tuple.
    same = Finding.make("wrong-result", "generic", "bad", case="c", indices=[[0, 1]], nested={"a": [1]})
    assert f == same and hash(f) == hash(same) and len({f, same}) == 1
    assert isinstance(dict(f.evidence)["indices"], tuple)
    assert f.facts() == {"indices": [[0, 1]], "nested": {"a": [1]}}


def test_unknown_id_or_rung_is_rejected_with_the_value_seen():
    with pytest.raises(ValueError, match="'bogus'"):
        Finding.make("bogus", "generic", "x")
    with pytest.raises(ValueError, match="'gpu'"):
        Finding.make("wrong-result", "gpu", "x")


def test_evidence_must_be_json_like():
    with pytest.raises(TypeError, match="JSON-like"):
        Finding.make("wrong-result", "generic", "x", thing=object())


def test_primary_follows_root_cause_precedence():
    wrong = Finding.make("wrong-result", "generic", "w", case="c")
    oob = Finding.make("out-of-bounds", "tpu-interpret", "o", case="c")
    sub = Finding.make("submission-error", "static", "s")
    assert primary([wrong, oob]) is oob
    assert primary([wrong, oob, sub]) is sub
    assert primary([]) is None
    assert PRECEDENCE.index("uninitialized-memory") < PRECEDENCE.index("wrong-result")
