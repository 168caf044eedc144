"""The finding catalogue is each finding ID's one home (autograder/findings/catalogue.py):
every ID has every field, its explanation template beside it, and every other table
keyed by finding ID reads the catalogue or names only IDs it holds. No JAX."""
import dataclasses
import re

import pytest

from autograder.findings import CATALOGUE, PRECEDENCE, TEMPLATES, Finding, FindingKind, fix_line
from autograder.findings.catalogue import FindingKind as Kind


def test_every_id_has_a_title_a_summary_a_fix_and_its_template():
    assert FindingKind is Kind
    for fid, kind in CATALOGUE.items():
        assert kind.id == fid and re.fullmatch(r"[a-z]+(-[a-z]+)*", fid), fid
        assert kind.title and kind.summary and kind.fix and kind.detected_by.strip(), fid
        assert kind.template == TEMPLATES / f"{fid}.j2" and kind.template.is_file(), fid
        assert all(isinstance(k, str) and v for k, v in kind.fixes.items()), fid
    assert sorted(PRECEDENCE) == sorted(CATALOGUE)


def test_every_template_beside_the_catalogue_is_an_ids_or_a_shared_part():
    for path in TEMPLATES.glob("*.j2"):
        assert path.stem in CATALOGUE or path.stem.startswith("_"), path.name


def test_a_kind_is_immutable_and_validated():
    kind = CATALOGUE["compile-reject"]
    with pytest.raises(TypeError):
        kind.fixes["block-tiling"] = "x"
    assert len({kind, CATALOGUE["compile-reject"], CATALOGUE["vmem-overflow"]}) == 2
    with pytest.raises(ValueError, match="needs an id, a title, a summary and a fix"):
        FindingKind("x", "X", "x", fix="", detected_by="z")
    with pytest.raises(ValueError, match="detected_by must say which checks report it"):
        FindingKind("x", "X", "x", fix="y")


def test_a_finer_fix_by_the_findings_problem_or_rule_else_the_general_one():
    def f(fid, **facts):
        return Finding.make(fid, "static", "m", **facts)
    assert fix_line(f("submission-error", problem="wrong-arity")) == "give the function exactly the handout's arguments"
    assert fix_line(f("submission-error", problem="no-such")) == CATALOGUE["submission-error"].fix
    assert fix_line(f("compile-reject", rule_id="1d-block")).startswith("give a 1-D block the whole array")
    assert fix_line(f("compile-reject", rule_id="block-tiling")) == CATALOGUE["compile-reject"].fix
    assert fix_line(f("padding-dependence", problem="input-padding")).startswith("mask the padding of an input")
    assert fix_line(f("padding-dependence")) == CATALOGUE["padding-dependence"].fix
    assert fix_line(f("numerics", problem="input-padding")) == CATALOGUE["numerics"].fix


def test_where_a_fix_points_is_what_the_problem_list_says_for_every_kind():
    # No pinned set of IDs (a new finding would have to edit it): every kind's fix_at is
    # one of the values its field allows, and the place the problem list names follows
    # from it for every kind: "call" the pl.pallas_call's line, "body" the kernel body's
    # lines, "" no place (what only a spatial, drawn finding's evidence would give).
    import typing

    from autograder.feedback import fixes
    from autograder.grading.identity.sources import KernelSource, Sources
    allowed = typing.get_args(typing.get_type_hints(FindingKind)["fix_at"])
    assert set(allowed) == {"call", "body", ""}
    one = Sources(kernels=(KernelSource("add.py:14", "add", body="kernel", lines="add.py:3-9"),))
    said = {"call": "in the pl.pallas_call at add.py:14", "body": "in kernel, add.py:3-9", "": ""}
    for fid, kind in CATALOGUE.items():
        assert kind.fix_at in allowed, fid
        assert fixes.where(Finding.make(fid, "static", "m"), one) == said[kind.fix_at], fid
        # Evidence drawn on the grid is a place in the kernel: its fix points at one.
        assert not (kind.drawn and kind.fix_at == ""), fid
    with pytest.raises(ValueError, match="fix_at must be"):
        FindingKind("x", "X", "x", fix="y", detected_by="z", fix_at="kernel")


def test_how_findings_relate_in_scoring_is_each_kinds_and_names_only_catalogue_ids():
    from autograder.findings import RUNGS
    explaining = {fid: k.explains for fid, k in CATALOGUE.items() if k.explains}
    assert explaining == {
        "out-of-bounds": ("generic", "tpu-interpret"), "output-block-revisit": ("generic", "tpu-interpret"),
        "dma-protocol": ("generic", "tpu-interpret"), "data-race": ("tpu-interpret",),
        "uninitialized-memory": ("generic", "tpu-interpret"), "padding-dependence": ("generic", "tpu-interpret"),
        "grid-order-dependence": ("tpu-interpret",)}
    assert {fid for fid, k in CATALOGUE.items() if k.symptom} == {"wrong-result", "numerics"}
    assert {fid for fid, k in CATALOGUE.items() if k.hang_explains_timeout} == {"dma-protocol",
                                                                               "grid-order-dependence"}
    for fid, k in CATALOGUE.items():
        assert set(k.explains) <= set(RUNGS) and set(k.same_bug + k.same_bug_on_case) <= set(CATALOGUE), fid
        assert fid not in k.same_bug + k.same_bug_on_case, fid
        # A symptom is what a correctness comparison says; it explains no test itself.
        assert not (k.symptom and k.explains), fid
    assert CATALOGUE["output-block-revisit"].same_bug == ("grid-order-dependence", "data-race")
    assert CATALOGUE["output-block-revisit"].same_bug_on_case == ("uninitialized-memory",)
    with pytest.raises(ValueError, match="explains must name rungs"):
        FindingKind("x", "X", "x", fix="y", detected_by="z", explains=("gpu",))


def test_a_secret_cases_words_for_a_finding_are_its_kinds():
    assert CATALOGUE["wrong-result"].hidden_message("padding-read") == "the output is wrong"
    assert CATALOGUE["data-race"].hidden_message() == "data race"
    assert CATALOGUE["submission-error"].hidden_message("memory-limit") == "submission cannot be graded (memory limit)"
    assert CATALOGUE["submission-error"].titled(None) == "submission cannot be graded"
    for k in CATALOGUE.values():
        # The grader's own words: a sentence fragment, never a value a submission chose.
        assert k.hidden_message() and "{" not in k.hidden_message(), k.id


def test_the_scans_claims_a_run_must_confirm_are_the_kinds_with_a_claim():
    from autograder.findings.catalogue import Claim
    claims = {fid: k.claim for fid, k in CATALOGUE.items() if k.claim is not None}
    assert set(claims) == {"output-block-revisit", "uninitialized-memory"}
    assert all(isinstance(c, Claim) and c.saw and c.why for c in claims.values())


def test_every_kind_that_draws_has_a_block_map_maker_and_no_other():
    from autograder.feedback import blockmaps
    assert set(blockmaps.MAKERS) == set(blockmaps.SPATIAL) == {fid for fid, k in CATALOGUE.items() if k.drawn}


def test_every_other_table_that_names_finding_ids_names_catalogue_ids():
    import tomllib
    from pathlib import Path

    from autograder.grading.probes import TERMS
    from autograder.pallas_surface import release
    for terms in TERMS.values():
        assert terms.ids and set(terms.ids) <= set(CATALOGUE), terms.name
    assert {fid for _type, _pattern, fid, _words in release.ERROR_RULES} <= set(CATALOGUE)
    # Why a charged bug ran right on a one-core chip (docs/chip-outcomes.md's column).
    from benchmarks.chip import report
    assert set(report.LATENT) <= set(CATALOGUE)
    # Every bundled corpus's expectations name a finding ID (or "clean").
    files = sorted(Path(__file__).resolve().parents[1].glob("assignments/*/corpus/expectations.toml"))
    assert files
    for path in files:
        wanted = tomllib.loads(path.read_text(encoding="utf-8"))["files"].values()
        assert set(wanted) - {"clean"} <= set(CATALOGUE), path


def test_a_corpus_expectation_that_names_no_finding_id_is_a_failed_row_that_says_so(tmp_path):
    from autograder.grading import assignments
    from autograder.instructor import check
    a = assignments.find("add")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "expectations.toml").write_text('[files]\n"x.py" = "out-of-bound"\n')
    a = dataclasses.replace(a, folder=tmp_path)
    [row] = check._corpus_rows(a)
    assert not row.ok and "expected 'out-of-bound': must be 'clean' or a finding ID" in row.detail
    assert "out-of-bounds" in row.detail and str(corpus / "expectations.toml") in row.detail
