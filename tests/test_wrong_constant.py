"""A number the kernel computes with, made from another size of the case than the
reference's (1/√S where the formula has 1/√D): ``judge.compare.constant_fit`` finds
the reference computed with that number gives the kernel's output, and the fix is
placed at the line that uses it (``KernelSource.constants``, read from the traced
kernel's literals). Pure logic without JAX (numpy references, a real document), then
one flash kernel through the real CLI."""
import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import corpus, run_cli, tags

from autograder.feedback import evidence, fixes
from autograder.findings import Finding
from autograder.grading import assignments
from autograder.grading.identity import sources
from autograder.grading.identity.sources import KernelSource, Place, Sources
from autograder.grading.judge.compare import constant_fit
from autograder.spec.model import Tolerance

FLASH = assignments.find("flash_attention")
DOCUMENTS = Path(__file__).resolve().parent / "documents"


def _attention(q, k, v, scale=None):
    s = q @ k.transpose(0, 2, 1) * (1 / np.sqrt(q.shape[-1]) if scale is None else scale)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def _qkv(b=2, s=256, d=64):
    rng = np.random.default_rng(0)
    return [rng.standard_normal((b, s, d)) for _ in range(3)]


TOL = Tolerance(rtol=1e-4, atol=1e-5)
DIMS = {"B": 2, "S": 256, "D": 64}


def test_a_scale_made_from_the_wrong_size_is_found_with_the_size_the_formula_names():
    args = _qkv()
    out = _attention(*args, scale=1 / math.sqrt(256)).astype(np.float32)
    found = constant_fit(out, _attention, args, [0, 1, 2], TOL, 256, [1 / math.sqrt(256), 0.3], DIMS, ["q", "k", "v"])
    assert found == {"value": 1 / math.sqrt(256), "form": "1/√S", "dim": "S", "size": 256, "meant": "1/√D",
                     "meant_value": 0.125, "meant_dim": "D", "input": "q"}


def test_no_fit_for_the_right_scale_another_bug_a_number_of_no_size_or_a_nan():
    args = _qkv()
    right = _attention(*args).astype(np.float32)
    wrong = right.copy()
    wrong[:, :, 0] += 1.0            # another bug: the scale is the right one
    for out, numbers in ((wrong, [0.125]), (wrong, [1 / math.sqrt(256)]), (right * 2, [0.3])):
        assert constant_fit(out, _attention, args, [0, 1, 2], TOL, 256, numbers, DIMS, ["q", "k", "v"]) is None
    nan = _attention(*args, scale=1 / 16).astype(np.float32)
    nan[0, 0, 0] = np.nan
    assert constant_fit(nan, _attention, args, [0, 1, 2], TOL, 256, [1 / 16], DIMS, ["q", "k", "v"]) is None


def test_the_kernels_numbers_are_read_from_its_literals_with_their_lines():
    doc = json.loads((DOCUMENTS / "flash_attention-flash_attention.json").read_text())
    (k,) = sources.of_program(doc, lambda f, line: f"{f}:{line}").kernels
    assert [(c, p.where) for c, p in k.constants] == [(0.125, "flash_attention.py:40")]
    # Plain numbers (a half, a two) are no scale to check.
    half = {"lit": 0.5, "aval": {"sa": [[], {"dt": "float32"}, True]}}
    assert sources._constants({"eqns": [{"p": "mul", "in": [half], "params": []}]}) == []


def _finding(**facts) -> Finding:
    return Finding.make("wrong-result", "generic", "49152 of 49152 outputs are wrong", case="f32-b2-s384-d64",
                        check="correctness", first_mismatches=[[0, 0, 0]], **facts)


def test_the_fix_names_the_number_its_line_and_the_size_the_formula_names():
    use = Place("k.py:27", "s = jnp.dot(q_ref[0], k_ref[0].T) * scale")
    where = Sources((KernelSource("k.py:45", "flash_attention", "kernel", "k.py:18-40",
                                  constants=((0.05103103630798288, use),)),), file="k.py")
    fact = {"value": 0.05103103630798288, "form": "1/√S", "dim": "S", "size": 384, "meant": "1/√D",
            "meant_value": 0.125, "meant_dim": "D", "input": "q"}
    f = _finding(constant=fact)
    found = evidence.fault(f, where)
    assert (found.what, found.place) == ("the number it computes with", use)
    said = fixes.fix(f, FLASH, sources=where)
    assert said.what == ("the kernel computes with 0.05103 at line 27, which is 1/√S (S = 384 on this case), where "
                         "the formula has 1/√D (0.125 here): the reference computed with 0.05103 in its place gives "
                         "your kernel's output. Make the number from D, not S")
    # A number the kernel does not hold (another signature's), or no fact: a general fix.
    other = Sources((KernelSource("k.py:45", "flash_attention", "kernel", "k.py:18-40"),), file="k.py")
    assert "computes with" not in fixes.fix(f, FLASH, sources=other).what
    assert evidence.fault(f, other) is None
    assert fixes.fix(_finding(), FLASH, sources=where).what.startswith("check the kernel's formula")


@pytest.mark.jax
@pytest.mark.grading
def test_a_scale_from_the_sequence_length_is_fixed_at_the_line_that_uses_it(grade_cli):
    doc, out = grade_cli(corpus("flash_attention") / "scale_from_sequence_length.py", "flash_attention",
                         "--run-key", "5")
    assert doc["score"] == 9.0 and tags(doc) == [["wrong-result"]] * 10
    first = " ".join(doc["tests"][0]["output"].split())
    assert "At scale_from_sequence_length.py:27: ``` s = jnp.dot(q_ref[0], k_ref[0].T, " in first
    assert ("Fix: the kernel computes with 0.05103 at line 27, which is 1/√S (S = 384 on this case), where the "
            "formula has 1/√D (0.125 here)") in first
    assert "Problems found: 1 " in " ".join(out.split())


def test_a_scale_applied_twice_is_found_with_every_line_that_applies_it():
    args = _qkv()
    out = _attention(*args, scale=1 / 64).astype(np.float32)        # (1/√D)², D = 64
    found = constant_fit(out, _attention, args, [0, 1, 2], TOL, 256, [0.125], DIMS, ["q", "k", "v"])
    assert found == {"value": 0.125, "form": "1/√D", "dim": "D", "size": 64, "twice": True, "input": "q"}
    # Applied once (the right output with another bug), or a number of no size: not twice.
    wrong = _attention(*args).astype(np.float32)
    wrong[:, :, 0] += 1.0
    assert constant_fit(wrong, _attention, args, [0, 1, 2], TOL, 256, [0.125], DIMS, ["q", "k", "v"]) is None
    q, s = Place("k.py:21", "q = q_ref[0] * scale"), Place("k.py:24", "s = jnp.dot(q, k.T) * scale")
    where = Sources((KernelSource("k.py:45", "flash_attention", "kernel", "k.py:13-35",
                                  constants=((0.125, q), (0.125, s))),), file="k.py")
    f = _finding(constant=found)
    said = fixes.fix(f, FLASH, sources=where)
    assert said.what == ("the kernel computes with 0.125, which is 1/√D (D = 64 on this case), at lines 21 and 24: the "
                         "reference computed with 0.125 applied twice gives your kernel's output, where the formula "
                         "applies it once. Apply it in one place")
    assert evidence.fault(f, where).place == q and said.text == said.what      # (the lines are said once)


@pytest.mark.jax
@pytest.mark.grading
def test_a_scale_applied_twice_is_fixed_at_both_lines():
    path = corpus("flash_attention") / "scale_applied_twice.py"
    proc = run_cli("grade", str(path), "-a", "flash_attention", "--run-key", "5", "--case", "f32-b2-s384-d64",
                   "--rung", "generic")
    said = " ".join(proc.stdout.split())
    lines = [n for n, line in enumerate(path.read_text().splitlines(), 1) if "* scale" in line and "``" not in line]
    assert proc.returncode == 0 and "[FAIL] 1.1 f32-b2-s384-d64 · generic interpreter (0/1.5)" in said
    assert "Wrong result [wrong-result], problem 1:" in said and "Problems found: 1 " in said
    assert (f"Fix: the kernel computes with 0.125, which is 1/√D (D = 64 on this case), at lines {lines[0]} and "
            f"{lines[1]}: the reference computed with 0.125 applied twice") in said


def test_a_number_made_from_a_shape_read_is_placed_at_the_line_that_reads_it():
    # The eighth read's flash: ``sm_scale = 1.0 / math.sqrt(q.shape[1])`` outside the kernel.
    text = ["def flash_attention(q, k, v):"] + ["    pass"] * 37 + ["    sm_scale = 1.0 / math.sqrt(q.shape[1])"]
    use = Place("k.py:20", "s = jnp.dot(q, k.T) * sm_scale")
    where = Sources((KernelSource("k.py:45", "flash_attention", "kernel", "k.py:13-35",
                                  constants=((0.05103103630798288, use),)),), file="k.py", text=tuple(text),
                    where=lambda f, n: f"{f}:{n}")
    fact = {"value": 0.05103103630798288, "form": "1/√S", "dim": "S", "size": 384, "meant": "1/√D",
            "meant_value": 0.125, "meant_dim": "D", "input": "q", "axis": 1, "rank": 3}
    f = _finding(constant=fact)
    assert evidence.fault(f, where).place.where == "k.py:39"
    assert ("which is 1/√S (S = 384 on this case), made from q.shape[1] at line 39, where the formula has 1/√D"
            in fixes.fix(f, FLASH, sources=where).what)
