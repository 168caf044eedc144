"""Mistakes an instructor declares beside the reference (``MISTAKES`` in reference.py,
``spec.mistakes``): a failing kernel whose output on a visible case is what one computes
gets the instructor's fix, at the line the mistake's ``at`` names
(``judge.compare.mistake_fit``). Evidence for the fix, never a charge. Pure logic
without JAX (the bundled flash_attention's own declarations), then two corpus kernels
through the real CLI."""
import shutil
from types import ModuleType

import numpy as np
import pytest
from conftest import corpus, run_cli, tags

from autograder.feedback import evidence, fixes
from autograder.findings import Finding
from autograder.grading import assignments
from autograder.grading.identity import sources
from autograder.grading.identity.sources import KernelSource, Place, Sources
from autograder.grading.judge.compare import mistake_fit
from autograder.grading.run.draws import load_reference
from autograder.instructor import check
from autograder.spec import SpecError, mistakes
from autograder.spec.model import Tolerance

FLASH = assignments.find("flash_attention")
TOL = Tolerance(rtol=1e-4, atol=1e-5)
BLOCKS = {"q": (1, 128, 64), "k": (1, 128, 64), "v": (1, 128, 64)}
CAUSAL, DIVIDED = "a causal mask", "the accumulator divided at every key block"


def _qkv(s=384):
    rng = np.random.default_rng(0)
    return [rng.standard_normal((2, s, 64)) for _ in range(3)]


def _by_name():
    return {m.name: m for m in mistakes.of(FLASH)}


def test_the_bundled_declarations_load_with_their_line_and_tiling():
    found = _by_name()
    assert [(n, m.at, m.tiled) for n, m in found.items()] == [
        (CAUSAL, "where", False), (DIVIDED, "division", True), ("the accumulator never rescaled", "accumulator", True)]
    assert found[CAUSAL].fix.startswith("this assignment's attention is not causal")


@pytest.mark.parametrize("raw, key, rule", [
    ([1], "MISTAKES", "must be a dict"),
    ({"": {"compute": abs, "fix": "f"}}, "MISTAKES['']", "non-empty string"),
    ({"m": {"compute": abs}}, "MISTAKES['m']['fix']", "non-empty string of at most 600"),
    ({"m": {"compute": 3, "fix": "f"}}, "MISTAKES['m']['compute']", "must be a function"),
    ({"m": {"compute": abs, "fix": "f", "at": "the mask"}}, "MISTAKES['m']['at']", "must be one of where"),
    ({"m": {"compute": abs, "fix": "f", "line": 3}}, "MISTAKES['m']", "keys compute, fix and (optional) at"),
    ({"m": {"compute": abs, "fix": "x" * 601}}, "MISTAKES['m']['fix']", "at most 600"),
])
def test_a_broken_declaration_names_the_file_the_key_the_rule_and_the_value(raw, key, rule):
    module = ModuleType("reference")
    module.MISTAKES = raw
    with pytest.raises(SpecError) as e:
        mistakes.of(FLASH, module)
    assert e.value.key == key and rule in e.value.rule and e.value.file.endswith("flash_attention/reference.py")


def test_the_kernels_output_is_matched_to_the_mistake_it_computes_and_to_no_other():
    args, found = _qkv(), _by_name()
    ref = load_reference(FLASH)(*args)
    declared = tuple(found.values())
    unscaled = found["the accumulator never rescaled"](args, BLOCKS).astype(np.float32)
    assert mistake_fit(unscaled, declared, args, BLOCKS, TOL, 384, ref)["at"] == "accumulator"
    causal = found[CAUSAL](args, BLOCKS).astype(np.float32)
    divided = found[DIVIDED](args, BLOCKS).astype(np.float32)
    assert mistake_fit(causal, declared, args, BLOCKS, TOL, 384, ref)["name"] == CAUSAL
    assert mistake_fit(divided, declared, args, BLOCKS, TOL, 384, ref) == {
        "name": DIVIDED, "fix": found[DIVIDED].fix, "at": "division"}
    # The right output, another wrong one, a NaN: no mistake.
    other = ref.copy()
    other[0, 0, 0] += 1
    nan = causal.copy()
    nan[0, 0, 0] = np.nan
    for out in (ref.astype(np.float32), other, nan):
        assert mistake_fit(out, declared, args, BLOCKS, TOL, 384, ref) is None
    # A tiled mistake given no blocks does not apply; at one key block it is the reference: neither names it.
    assert mistake_fit(divided, declared, args, {}, TOL, 384, ref) is None
    whole = {"k": (1, 384, 64)}
    assert mistake_fit(found[DIVIDED](args, whole).astype(np.float32), (found[DIVIDED],), args, whole, TOL, 384,
                       ref) is None


def _finding(**facts) -> Finding:
    return Finding.make("wrong-result", "generic", "48808 of 49152 outputs are wrong", case="f32-b2-s384-d64",
                        check="correctness", first_mismatches=[[0, 0, 0]], **facts)


def test_the_fix_is_the_instructors_at_the_line_the_mistake_names_said_once():
    mask = Place("k.py:28", "s = jnp.where(col <= row, s, -1e30)")
    exp = Place("k.py:31", "p = jnp.exp(s - m_new)")
    where = Sources((KernelSource("k.py:50", "flash_attention", "kernel", "k.py:18-40",
                                  ops=(("exp", exp), ("select_n", mask))),), file="k.py")
    m = _by_name()[CAUSAL]
    f = _finding(mistake={"name": m.name, "fix": m.fix, "at": m.at})
    said = fixes.fix(f, FLASH, sources=where)
    assert said.what == ("your kernel's output is what the reference computes with a causal mask, within this case's "
                         "tolerance (the jnp.where at line 28). This assignment's attention is not causal: every "
                         "query attends to every key, the later ones too. Remove the mask that hides keys after the "
                         "query's position")
    assert evidence.fault(f, where).place == mask
    assert said.text == said.what           # the problem list does not name line 28 again
    # The accumulator's update: the one scratch store outside the reset that adds a product.
    text = ["def kernel(acc_ref, l_ref, p, v, alpha):"] + ["    pass"] * 39
    text[29] = "    acc_ref[...] = acc_ref[...] + jnp.dot(p, v)"
    text[30] = "    l_ref[...] = alpha * l_ref[...] + p.sum(-1)"
    carried = Sources((KernelSource("k.py:50", "flash_attention", "kernel", "k.py:18-40",
                                    scratch_refs=("l_ref", "acc_ref")),), file="k.py", text=tuple(text),
                      where=lambda f, n: f"{f}:{n}")
    acc = _finding(mistake={"name": "the accumulator never rescaled", "fix": "rescale it", "at": "accumulator"})
    assert evidence.fault(acc, carried).place.where == "k.py:30"
    assert "(the accumulator's update at line 30). Rescale it" in fixes.fix(acc, FLASH, sources=carried).what
    # Two jnp.where lines: the instructor's fix, no line named.
    two = Sources((KernelSource("k.py:50", "flash_attention", "kernel", "k.py:18-40",
                                ops=(("select_n", mask), ("select_n", exp))),), file="k.py")
    assert "(the jnp.where" not in fixes.fix(f, FLASH, sources=two).what and evidence.fault(f, two) is None


def test_a_primitive_inside_a_nested_jit_takes_its_enclosing_line():
    # jnp.where is a jit of select_n: the inner equation records no source of its own.
    inner = {"p": "select_n", "params": [], "src": None}
    node = {"eqns": [{"p": "jit", "params": [["jaxpr", {"eqns": [inner]}]], "src": 8}]}
    assert [(e["p"], src) for e, src in sources._sourced(node)] == [("jit", 8), ("select_n", 8)]


def test_check_says_the_declarations_load_and_refuses_one_that_is_the_reference(tmp_path):
    row = next(r for r in check.quick(FLASH) if r.claim.startswith("declared mistakes"))
    assert row.ok and "a causal mask (differs on 'f32-b2-s384-d64')" in row.detail
    folder = tmp_path / "flash_attention"
    shutil.copytree(FLASH.folder, folder, ignore=shutil.ignore_patterns("corpus"))
    with (folder / "reference.py").open("a") as f:
        f.write('\nMISTAKES["no mistake"] = {"compute": flash_attention, "fix": "nothing"}\n')
    row = next(r for r in check.quick(assignments.load(folder)) if r.claim.startswith("declared mistakes"))
    assert not row.ok and "no mistake (is the reference on 'f32-b2-s384-d64')" in row.detail


def _line_of(path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line and "``" not in line)


@pytest.mark.jax
@pytest.mark.grading
def test_a_causal_mask_left_in_gets_the_instructors_fix_at_its_where(grade_cli):
    path = corpus("flash_attention") / "causal_mask.py"
    doc, out = grade_cli(path, "flash_attention", "--run-key", "5")
    assert doc["score"] == 8.0 and tags(doc) == [["wrong-result"]] * 10
    line = _line_of(path, "jnp.where(")
    first = " ".join(doc["tests"][0]["output"].split())
    assert f"At causal_mask.py:{line}: ``` s = jnp.where(col <= row, s, -1e30)" in first
    assert (f"Fix: your kernel's output is what the reference computes with a causal mask, within this case's "
            f"tolerance (the jnp.where at line {line}). This assignment's attention is not causal") in first
    said = " ".join(out.split())
    assert "Problems found: 1 " in said and f"(at causal_mask.py:{line})" not in said


@pytest.mark.jax
@pytest.mark.grading
def test_an_accumulator_divided_every_block_gets_the_fix_at_the_division():
    path = corpus("flash_attention") / "accumulator_divided_each_block.py"
    proc = run_cli("grade", str(path), "-a", "flash_attention", "--run-key", "5", "--case", "f32-b2-s384-d64",
                   "--rung", "generic")
    said = " ".join(proc.stdout.split())
    assert proc.returncode == 0 and "[FAIL] 1.1 f32-b2-s384-d64 · generic interpreter (0/1.5)" in said
    assert "Wrong result [wrong-result], problem 1:" in said and "Problems found: 1 " in said
    assert (f"computes with the accumulator divided at every key block, within this case's tolerance (the "
            f"division at line {_line_of(path, '/ l_new')}). The accumulator is divided by the running sum") in said


def test_matmuls_declared_mistake_is_the_product_with_each_block_of_y_transposed():
    matmul = assignments.find("matmul")
    m, last = mistakes.of(matmul)
    assert [(d.name, d.at, d.tiled) for d in (m, last)] == [
        ("each block of y transposed", "dot", True), ("the last K block's product only", "accumulator", True)]
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((256, 384)), rng.standard_normal((384, 256))
    blocks = {"x": (128, 128), "y": (128, 128)}
    want = sum(x[:, k:k + 128] @ np.hstack([y[k:k + 128, j:j + 128].T for j in (0, 128)]) for k in (0, 128, 256))
    got = m([x, y], blocks)
    assert np.allclose(got, want)
    ref = load_reference(matmul)(x, y)
    tol = matmul.tolerance(matmul.cases[0])
    assert mistake_fit(got.astype(np.float32), (m,), [x, y], blocks, tol, 384, ref)["name"] == m.name
    # The accumulator overwritten at every K step: the last K block's product alone.
    alone = (x[:, 256:] @ y[256:]).astype(np.float32)
    assert mistake_fit(alone, (m, last), [x, y], blocks, tol, 384, ref)["name"] == "the last K block's product only"
    # Blocks that are not square make no such product: the mistake does not apply.
    assert mistake_fit(got.astype(np.float32), (m,), [x, y], {"x": (128, 128), "y": (128, 256)}, tol, 384,
                       ref) is None


@pytest.mark.jax
@pytest.mark.grading
def test_a_transposed_y_block_gets_the_fix_at_the_product():
    path = corpus("matmul") / "y_block_transposed.py"
    proc = run_cli("grade", str(path), "-a", "matmul", "--run-key", "5", "--case", "f32-256x384x256",
                   "--rung", "generic")
    said = " ".join(proc.stdout.split())
    assert proc.returncode == 0 and "[FAIL] 1.1 f32-256x384x256 · generic interpreter (0/1.5)" in said
    assert "Wrong result [wrong-result], problem 1:" in said and "Problems found: 1 " in said
    assert (f"computes with each block of y transposed, within this case's tolerance (the matrix product at line "
            f"{_line_of(path, 'y_ref[...].T')}). The product multiplies") in said
