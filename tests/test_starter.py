"""Starters generated from solutions, the public spec and its TOML (pure logic, no JAX)."""
import tomllib

import pytest
from conftest import REPO

from autograder.grading import assignments
from autograder.instructor import public_spec, starter, toml_text

SLUGS = ["add", "matmul", "softmax", "dma_scale", "flash_attention"]


@pytest.mark.parametrize("slug", SLUGS)
def test_every_bundled_starter_comes_from_its_solution(slug):
    solution = (REPO / "solutions" / f"{slug}.py").read_text()
    text = starter.starter_for(REPO / "solutions" / f"{slug}.py")
    assert "BEGIN SOLUTION" not in text and "# STUB" not in text and "raise NotImplementedError" in text
    # Nothing only the solution has is left in the starter (stub hints aside).
    kept = [ln for ln in starter.solution_lines(solution) if ln in text]
    assert all(ln.startswith(("#", "in_specs=")) or len(ln) < 12 for ln in kept), kept
    compile(text, f"{slug}.py", "exec")


def test_regions_stubs_and_their_errors():
    solution = '''"""Doc."""
import jax

# BEGIN SOLUTION
BLOCK = 8
# END SOLUTION


def f(x):
    # BEGIN SOLUTION
    return x * BLOCK
    # STUB: # TODO: scale x.
    # STUB: return x
    # END SOLUTION


def g(x):
    # BEGIN SOLUTION
    return x
    # END SOLUTION
'''
    text = starter.starter_text(solution)
    assert text == ('"""Doc."""\nimport jax\n\n\ndef f(x):\n    # TODO: scale x.\n    return x\n\n\n'
                    'def g(x):\n    raise NotImplementedError("write this part")\n')
    assert starter.solution_lines(solution) == ["BLOCK = 8", "return x * BLOCK", "return x"]
    with pytest.raises(starter.StarterError, match="line 2: '# END SOLUTION' without"):
        starter.starter_text("x = 1\n# END SOLUTION\n", "s.py")
    with pytest.raises(starter.StarterError, match="line 1: '# BEGIN SOLUTION' never closed"):
        starter.starter_text("# BEGIN SOLUTION\nx = 1\n", "s.py")
    with pytest.raises(starter.StarterError, match="no regions"):
        starter.starter_text("x = 1\n", "s.py")
    with pytest.raises(starter.StarterError, match="valid Python"):
        starter.starter_text("if True:\n# BEGIN SOLUTION\n    x = 1\n# END SOLUTION\n", "s.py")


def test_toml_text_reads_back_as_the_same_data():
    data = {"title": "a \"quoted\" title", "rungs": ["generic"], "n": 3, "x": 1e-06, "flag": True,
            "dims": {"M": {"multiple_of": 8}, "N": {"min": 1}},
            "probes": {"grid-order": {"seeds": [1, 2]}},
            "cases": [{"name": "a b/ü", "dims": {"M": 8}, "params": {"alpha": -2.0}}, {"name": "c"}]}
    text = toml_text.dumps(data, "header line")
    assert text.startswith("# header line\n") and tomllib.loads(text) == data
    assert "[dims]" not in text and "[dims.M]" in text


@pytest.mark.parametrize("slug", SLUGS)
def test_the_public_spec_drops_every_secret_case(slug, tmp_path):
    a = assignments.find(slug)
    public = public_spec.write(a, tmp_path / slug)
    assert [c.name for c in public.cases] == [c.name for c in a.cases if c.visible]
    assert all(c.visible for c in public.cases) and public.probes == a.probes
    text = (tmp_path / slug / "spec.toml").read_text()
    assert not any(c.name in text for c in a.cases if not c.visible)
