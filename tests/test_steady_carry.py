"""A wrong result that is right when every block of the reduction is alike
(``draws.steady``, the steady rerun of a failing visible test): the fault is in what
each step does with what earlier steps carried, named by the stores into the
kernel's scratch outside its first-step reset (``Sources.carried_writes``). Pure
logic without JAX, then one flash kernel through the real CLI."""
import shutil

import pytest
from conftest import corpus, tags

from autograder.feedback import evidence, fixes
from autograder.findings import Finding
from autograder.grading import assignments
from autograder.grading.identity.sources import KernelSource, Sources
from autograder.grading.run import draws, inputs

FLASH = assignments.find("flash_attention")
CORPUS = corpus("flash_attention")


def test_the_period_is_the_size_every_block_divides_and_each_input_repeats_it_along_the_reduction():
    case = FLASH.cases[0]
    assert case.dim_map["S"] == 384 and draws.steady_period(FLASH, case) == ("S", 128)
    softmax = assignments.find("softmax")        # no reduction dimension named
    assert all(draws.steady_period(softmax, c) is None for c in softmax.cases)
    made = inputs.make(FLASH, case, [1, 2, 3])
    alike = draws.steady(made, FLASH, case)
    for before, after in zip(made, alike):
        a = after.array
        assert a.shape == before.array.shape
        assert (a[:, :128] == before.array[:, :128]).all()
        assert (a[:, 128:256] == a[:, :128]).all() and (a[:, 256:] == a[:, :128]).all()
    assert not (made[0].array[:, 128:256] == made[0].array[:, :128]).all()   # the draw's own untouched


def _sources() -> tuple[Sources, KernelSource]:
    text = (CORPUS / "acc_not_rescaled.py").read_text()
    k = KernelSource("acc_not_rescaled.py:47", "flash_attention", "flash_attention_kernel",
                     "acc_not_rescaled.py:21-41", refs=("refs[0]", "refs[1]", "refs[2]", "refs[3]"), inputs=3,
                     scratch_refs=("refs[4]", "refs[5]", "refs[6]"))
    return Sources((k,), file="acc_not_rescaled.py", text=tuple(text.splitlines()),
                   where=lambda f, n: f"{f}:{n}"), k


def test_a_lambda_wrappers_scratch_is_named_by_the_kernel_function_and_the_reset_is_not_carried():
    src, k = _sources()
    assert src.scratch_names(k) == ("m_sc", "l_sc", "acc_sc")
    carried = src.carried_writes(src.scratch_names(k))
    assert [(name, p.where) for name, p in carried] == [
        ("l_sc", "acc_not_rescaled.py:34"), ("acc_sc", "acc_not_rescaled.py:35"), ("m_sc", "acc_not_rescaled.py:36")]
    assert carried[1][1].text.startswith("acc_sc[...] = acc_sc[...] + jnp.dot(")


def _wrong(steady) -> Finding:
    return Finding.make("wrong-result", "generic", "32785 of 49152 outputs are wrong", case="f32-b2-s384-d64",
                        first_mismatches=[[0, 0, 0]], steady=steady)


def test_the_fix_names_every_carried_update_and_one_update_holds_the_fault():
    src, k = _sources()
    f = _wrong({"dim": "S", "period": 128, "size": 384})
    fix = fixes.fix(f, FLASH, sources=src)
    assert fix.specific and fix.at is None          # three updates: no one line to point at
    assert fix.what == (
        "the output is right when every block of S is alike (its first 128 repeated to 384: nothing carried "
        "between steps of the reduction changes) and wrong on this case's own inputs: the fault is in what each "
        "step does with what earlier steps carried (l_sc at line 34, acc_sc at line 35, m_sc at line 36); when a "
        "later block changes one carried value (a running maximum, say), everything computed from its old value "
        "must follow")
    one = Sources((KernelSource("k.py:9", "f", "kernel", "k.py:1-6", scratch_refs=("acc",)),), file="k.py",
                  text=("def kernel(x_ref, o_ref, acc):", "    @pl.when(pl.program_id(1) == 0)",
                        "    def _():", "        acc[...] = 0", "    acc[...] = acc[...] * 2 + x_ref[...]",
                        "    o_ref[...] = acc[...]"), where=lambda f, n: f"{f}:{n}")
    fault = evidence.fault(f, one)
    assert fault is not None and fault.place.where == "k.py:5" and fault.what == "what the step carries"
    # No scratch: the fix says what the evidence shows, without lines; facts of another shape: the general line.
    bare = Sources((KernelSource("k.py:9", "f", "kernel", "k.py:1-6"),), file="k.py", text=("x = 1",),
                   where=lambda f, n: f"{f}:{n}")
    assert fixes.fix(f, FLASH, sources=bare).what.endswith("what earlier steps carried")
    assert "alike" not in fixes.fix(_wrong({"dim": "S"}), FLASH, sources=bare).what


@pytest.mark.grading
@pytest.mark.releases
def test_an_accumulator_not_rescaled_names_what_the_steps_carry_through_the_cli(grade_cli, tmp_path):
    # The bundled assignment declares this mistake beside its reference (``test_known_mistakes``):
    # a course that does not gets the steady rerun's words, from the evidence alone.
    shutil.copytree(FLASH.folder, tmp_path / "flash_attention", ignore=shutil.ignore_patterns("corpus"))
    with (tmp_path / "flash_attention" / "reference.py").open("a") as f:
        f.write("\nMISTAKES = {}\n")
    doc, out = grade_cli(CORPUS / "acc_not_rescaled.py", "flash_attention", "--run-key", "5",
                         "--assignments", str(tmp_path))
    assert tags(doc) == [["wrong-result"]] * 10 and doc["score"] == 8.0      # the score is the comparison's
    first = " ".join(doc["tests"][0]["output"].split())
    assert ("Fix: the output is right when every block of S is alike (its first 128 repeated to 384: nothing "
            "carried between steps of the reduction changes) and wrong on this case's own inputs: the fault is in "
            "what each step does with what earlier steps carried (l_sc at line 34, acc_sc at line 35, m_sc at line "
            "36);") in first
    assert "first wrong output is at" not in first
    assert "Problems found: 1 " in " ".join(out.split())


def test_a_running_value_stored_only_at_the_first_step_is_named():
    # The ninth read's flash: ``m_ref[...] = m_new`` left out; m is stored only in the reset.
    text = ("def kernel(q_ref, o_ref, m_ref, l_ref):", "    @pl.when(pl.program_id(2) == 0)", "    def _():",
            "        m_ref[...] = -inf", "        l_ref[...] = 0", "    m_new = jnp.maximum(m_ref[...], 1)",
            "    l_ref[...] = l_ref[...] * jnp.exp(m_ref[...] - m_new) + 1", "    o_ref[...] = l_ref[...]")
    src = Sources((KernelSource("k.py:12", "f", "kernel", "k.py:1-8", scratch_refs=("m_ref", "l_ref")),),
                  file="k.py", text=text, where=lambda f, n: f"{f}:{n}")
    what = fixes.fix(_wrong({"dim": "S", "period": 128, "size": 384}), FLASH, sources=src).what
    assert what.endswith("(l_ref at line 7); when a later block changes one carried value (a running maximum, say), "
                         "everything computed from its old value must follow. m_ref is stored only at the first step "
                         "(line 4) and no later step stores its new value, though each step reads it: store it "
                         "every step")
