"""The finding type and catalogue (pure logic, no JAX)."""
import dataclasses

import pytest

from autograder.findings import CATALOGUE, PRECEDENCE, Finding, primary


def test_catalogue_holds_every_documented_id():
    assert set(CATALOGUE) == {
        "submission-error", "wrong-result", "numerics", "out-of-bounds", "output-block-revisit",
        "uninitialized-memory", "grid-order-dependence", "padding-dependence", "data-race",
        "dma-protocol", "compile-reject", "vmem-overflow", "not-a-kernel", "chip-reject",
        "chip-divergence"}


def test_finding_is_immutable_and_evidence_is_frozen():
    f = Finding.make("wrong-result", "generic", "bad", case="c", indices=[[0, 1]], nested={"a": [1]})
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.id = "numerics"
    assert hash(f)  # frozen all the way down
    assert f.facts() == {"indices": [[0, 1]], "nested": {"a": [1]}}
    assert f.as_dict()["evidence"]["nested"] == {"a": [1]}


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


def test_a_dma_hang_explains_a_timeout_on_its_rung_only():
    from autograder import scoring, spec
    a = spec.find("dma_scale")
    case = a.cases[0].name
    timeout = [Finding.make("submission-error", rung, "did not finish", case=c.name, problem="timeout")
               for c in a.cases for rung in a.rungs]
    hang = Finding.make("dma-protocol", "tpu-interpret", "hung", case=case, check="races",
                        problem="hang")
    mode = Finding.make("dma-protocol", "tpu-interpret", "modes differ", case=case, check="races",
                        problem="mode-dependent")
    by_rung = lambda tests: [t.finding.id for t in tests if t.probe is None]
    # The hang seen on TPU interpret mode explains that rung's timeouts on every case.
    assert by_rung(scoring.score(a, timeout + [hang], a.rungs, a.cases)) == \
        ["submission-error", "dma-protocol"] * len(a.cases)
    # A DMA finding that is not a hang does not explain a timeout.
    assert by_rung(scoring.score(a, timeout + [mode], a.rungs, a.cases)) == \
        ["submission-error"] * 2 * len(a.cases)
    # Nor does a hang explain any other submission error.
    crash = [Finding.make("submission-error", "tpu-interpret", "raised", case=case, problem="exception")]
    tests = scoring.score(a, crash + [hang], a.rungs, a.cases)
    assert tests[1].finding.id == "submission-error"
