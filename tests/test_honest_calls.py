"""Honest kernels that use a JAX call the grader once refused keep every point, through
the real CLI, on both releases (issue 44 §1): jnp.stack and jnp.tile as glue outside a
kernel, a base-2 log-sum-exp (jnp.log2, jnp.exp2) in a softmax kernel, k and v stacked
for a flash kernel, and a student's own pl.debug_check in the add kernel. A check that
fails is the finding, in the student's words, at their line."""
import pytest
from conftest import corpus, tags

pytestmark = [pytest.mark.jax, pytest.mark.grading, pytest.mark.releases]


@pytest.mark.parametrize("slug,name", [
    ("add", "stack_and_tile_glue.py"),          # 0/16 before: 'stack' was not rebuilt (0.12 and 0.10.2)
    ("add", "debug_check.py"),                  # 0/16 before: 'check'
    ("softmax", "base2_logsumexp.py"),          # 0/19 before: 'log2' (0.12)
    ("flash_attention", "stacked_kv.py"),       # 0/21 before: 'stack'
])
def test_honest_kernels_with_once_refused_calls_keep_every_point(grade_cli, slug, name):
    doc, _ = grade_cli(corpus(slug) / name, slug)
    assert all(t["tags"] == [] for t in doc["tests"]), [(t["number"], t["tags"]) for t in doc["tests"]]
    assert doc["score"] == sum(t["max_score"] for t in doc["tests"]) > 0


def test_a_failed_debug_check_is_the_students_words_at_their_line(grade_cli):
    doc, out = grade_cli(corpus("add") / "debug_check_fails.py", "add")
    assert tags(doc) == [["wrong-result"]] * 8
    # Every correctness test fails (the check fires on both interpreters); the probes,
    # which saw the same failure, are not charged again.
    assert doc["score"] == 6.0
    first = next(t for t in doc["tests"] if t["number"] == "1.1")
    assert "your check at debug_check_fails.py:14 failed: adding y never makes an element smaller" in first["output"]
    # A secret case shows neither the line nor the message (the student chose them).
    secret = [t for t in doc["tests"] if "secret" in t["name"]]
    assert secret and not any("adding y" in t["output"] or ":14" in t["output"] for t in secret)
