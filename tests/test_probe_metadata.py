"""Every probe's metadata lives in its own module (grading/probes/*.py): its glossary
note and what a run of it that hangs or raises exposes; the registry, the spec's
vocabulary and the handout's glossary read them from there. No JAX."""
import pytest

from autograder import spec
from autograder.feedback import glossary
from autograder.findings import CATALOGUE
from autograder.grading.probes import REGISTRY, Exposes, Probe


def test_every_probe_has_a_note_and_exposes_only_what_it_can_find():
    for name, probe in REGISTRY.items():
        assert probe.note.endswith(".") and "{" not in probe.note, name
        assert set(probe.terms.ids) <= set(CATALOGUE), name
        for e in probe.exposes:
            assert e.finding in probe.terms.ids and e.changed, (name, e)
    # The static checks run nothing that can hang; every dynamic one says what a hang of it means.
    assert {name for name, p in REGISTRY.items() if p.exposes} == {
        name for name, p in REGISTRY.items() if p.dynamic}


def test_what_a_hang_exposes_is_the_variants_own_entry_else_the_probes():
    races = REGISTRY["races"]
    assert races.exposed_by("races-2core") == Exposes("grid-order-dependence", "on two simulated cores",
                                                       "races-2core")
    assert races.exposed_by("dma-eager").finding == "dma-protocol"
    assert races.exposed_by("races-1core").finding == "data-race"
    assert REGISTRY["grid-order"].exposed_by("seed-2-2cores").finding == "grid-order-dependence"
    assert REGISTRY["index-maps"].exposed_by("index-maps") is None


@pytest.mark.parametrize("slug", ["add", "matmul", "softmax", "dma_scale", "flash_attention"])
def test_every_variant_a_probe_names_is_one_it_plans(slug):
    a = spec.find(slug)
    for rubric in a.probes:
        probe = REGISTRY[rubric.name]
        planned = {v.name for case in a.cases for v in probe.plan(a, case, rubric, 1)}
        assert {e.variant for e in probe.exposes} - {""} <= planned, (slug, rubric.name, planned)


def test_a_probe_is_validated_when_it_is_made():
    terms = REGISTRY["poisoning"].terms
    with pytest.raises(ValueError, match="needs a glossary note"):
        Probe(terms, REGISTRY["poisoning"].plan, REGISTRY["poisoning"].judge, note="")
    with pytest.raises(ValueError, match="can only expose an ID the probe produces"):
        Probe(terms, REGISTRY["poisoning"].plan, REGISTRY["poisoning"].judge, note="x.",
              exposes=(Exposes("data-race", "on two cores"),))


def test_the_glossary_gives_each_enabled_probe_its_modules_note():
    a = spec.find("matmul")
    text = " ".join(glossary.text(a).split())
    for i, rubric in enumerate(a.probes, 1):
        probe = REGISTRY[rubric.name]
        assert f"**P{i}, {probe.title}**: {' '.join(probe.note.split())}" in text, rubric.name
