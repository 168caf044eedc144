"""An input whose value reaches nothing the kernel writes (``identity.dataflow``): with a
wrong result, the fix names it and the store that computes without it. Pure logic
without JAX (equations in the document's form), then the sixth read's add kernel
through the real CLI."""
import pytest
from conftest import corpus, tags

from autograder.feedback import evidence, fixes
from autograder.findings import Finding
from autograder.grading import assignments
from autograder.grading.identity import dataflow
from autograder.grading.identity.sources import KernelSource, Place, Sources

X, Y, OUT = 1, 2, 3      # the kernel's refs: two inputs and the output


def _eq(p, ins, outs, src=None, **params):
    return {"p": p, "in": [{"v": v} for v in ins], "out": [{"v": v} for v in outs],
            "params": [[k, v] for k, v in params.items()], "src": src}


def _kernel(*eqns):
    return {"invars": [{"v": X}, {"v": Y}, {"v": OUT}], "eqns": list(eqns), "outvars": []}


def test_an_input_read_and_dropped_or_never_read_is_unused_and_one_used_is_not():
    # a = x[...]; b = y[...]; o[...] = a + a: y's read reaches nothing.
    dropped = _kernel(_eq("get", [X], [10], src=0), _eq("get", [Y], [11], src=1), _eq("add", [10, 10], [12]),
                      _eq("swap", [OUT, 12], [13], src=2))
    assert dataflow.unused_inputs(dropped, 0, 2) == [(1, [1])]
    # y's value through a chain of equations into the store: used.
    used = _kernel(_eq("get", [X], [10]), _eq("get", [Y], [11]), _eq("mul", [11, 11], [14]),
                   _eq("add", [10, 14], [12]), _eq("swap", [OUT, 12], [13]))
    assert dataflow.unused_inputs(used, 0, 2) == []
    # y never read at all.
    never = _kernel(_eq("get", [X], [10]), _eq("swap", [OUT, 10], [13]))
    assert dataflow.unused_inputs(never, 0, 2) == [(1, [])]


def test_whatever_the_pass_cannot_follow_counts_as_used():
    # The ref handed whole to a loop, a DMA or a call; its value into a branch: used.
    loop = _kernel(_eq("get", [X], [10]), _eq("scan", [Y, 10], [15], jaxpr={"jx": {"eqns": []}}),
                   _eq("swap", [OUT, 10], [13]))
    dma = _kernel(_eq("get", [X], [10]), _eq("dma_start", [Y, OUT], []), _eq("swap", [OUT, 10], [13]))
    branch = _kernel(_eq("get", [X], [10]), _eq("get", [Y], [11]),
                     _eq("cond", [10, 11], [16], branches={"t": []}), _eq("swap", [OUT, 10], [13]))
    for k in (loop, dma, branch):
        assert dataflow.unused_inputs(k, 0, 2) == [], k
    # A document of another form reads as nothing.
    for junk in (None, {}, {"eqns": 3}, {"eqns": [], "invars": [{"v": 1}]}, {"eqns": [7], "invars": []}):
        assert dataflow.unused_inputs(junk, 0, 2) == []


def _finding(**facts) -> Finding:
    return Finding.make("wrong-result", "generic", "4096 of 4096 outputs are wrong", case="small",
                        check="correctness", first_mismatches=[[0, 0]], **facts)


def test_the_fix_names_the_input_and_the_store_and_is_placed_at_its_read():
    store, read = Place("k.py:12", "out_ref[...] = a + a_ref[...]"), Place("k.py:11", "b = b_ref[...]")
    add = assignments.find("add")
    for at, words, place in ((None, "nothing the kernel writes depends on b_ref", store),
                             (read, "the kernel reads b_ref at line 11, but nothing it writes depends on that "
                                    "value", read)):
        where = Sources((KernelSource("k.py:20", "add", "_add_tile", "k.py:9-12", stores=(store,),
                                      unused_inputs=(("b_ref", at),)),), file="k.py")
        f = _finding(unused_input="b_ref")
        assert fixes.fix(f, add, sources=where).what == (
            f"{words} (the store at line 12 computes without it): the formula needs b_ref; use it where the "
            "output is computed")
        assert evidence.fault(f, where).place == place
    # Without the fact (another signature's program, a secret case): the general fix.
    assert "b_ref" not in fixes.fix(_finding(), add, sources=where).what


@pytest.mark.jax
@pytest.mark.grading
def test_an_input_the_kernel_computes_without_is_named_through_the_cli(grade_cli):
    doc, out = grade_cli(corpus("add") / "second_input_unused.py", "add", "--run-key", "5")
    assert doc["score"] == 6.0 and tags(doc) == [["wrong-result"]] * 8
    first = " ".join(doc["tests"][0]["output"].split())
    assert "At second_input_unused.py:16: ``` out_ref[...] = a + a_ref[...] ```" in first
    assert ("Fix: nothing the kernel writes depends on b_ref (the store at line 16 computes without it): the "
            "formula needs b_ref; use it where the output is computed.") in first
    assert "Problems found: 1 " in " ".join(out.split())
