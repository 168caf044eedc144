"""Where a kernel resets what it accumulates (``identity.resets``) and the fix a reset
keyed to a parallel axis calls for (``feedback.evidence.reset_axis``): pure logic on
program documents, no JAX."""
from __future__ import annotations

from autograder.feedback import evidence
from autograder.findings import Finding
from autograder.grading.identity import resets
from autograder.grading.identity.sources import KernelSource, Place

ZERO = {"lit": {"a": ["int32", [], "AAAAAA=="]}, "aval": {"sa": [[], {"dt": "int32"}, False]}}
ONE = {"lit": {"a": ["int32", [], "AQAAAA=="]}, "aval": {"sa": [[], {"dt": "int32"}, False]}}


def _kernel(axis: int, compared=ZERO, stores: bool = True) -> dict:
    """program_id(axis) == compared, cast, then a cond whose second branch stores (or not)."""
    body = [{"p": "swap", "in": [{"v": 40}], "out": [], "params": [], "src": 3}] if stores else []
    branches = {"t": [{"cjx": {"jaxpr": {"eqns": []}}}, {"cjx": {"jaxpr": {"eqns": body}}}]}
    return {"eqns": [
        {"p": "program_id", "in": [], "out": [{"v": 25}], "params": [["axis", axis]], "src": 0},
        {"p": "eq", "in": [{"v": 25}, compared], "out": [{"v": 27}], "params": [], "src": 2},
        {"p": "convert_element_type", "in": [{"v": 27}], "out": [{"v": 28}], "params": [], "src": 2},
        {"p": "cond", "in": [{"v": 28}, {"v": 22}], "out": [], "params": [["branches", branches]], "src": 2}]}


def test_a_reset_is_a_stored_when_at_an_axis_first_step():
    assert resets.resets(_kernel(1)) == [(1, 2)]
    assert resets.resets(_kernel(2)) == [(2, 2)]
    assert resets.resets(_kernel(1, compared=ONE)) == []        # the last step, or any other: not a reset
    assert resets.resets(_kernel(1, stores=False)) == []
    assert resets.resets({"eqns": [{"p": "cond", "in": ["x"], "params": 7}]}) == []   # a forged form: none
    assert resets.resets(None) == []


def test_semantics_are_read_from_the_compiler_params():
    params = {"dc": ["TPUCompilerParams", [["dimension_semantics", {"t": ["parallel", "arbitrary"]}]]]}
    assert resets.semantics(params) == ("parallel", "arbitrary")
    assert resets.semantics({"mosaic": params}) == ("parallel", "arbitrary")
    assert resets.semantics(None) == () and resets.semantics({"dc": "x"}) == ()


def _source(axis: int, semantics=("parallel", "parallel", "arbitrary")) -> KernelSource:
    return KernelSource("fa.py:40", "flash", "kernel", "fa.py:13-36",
                        resets=((axis, Place("fa.py:16", "@pl.when(qi == 0)")),), dimension_semantics=semantics)


def test_a_reset_on_a_parallel_axis_is_the_fault_of_memory_read_first():
    poisoned = Finding.make("uninitialized-memory", "tpu-interpret", "changes with the fill", case="c",
                            check="poisoning", differing=10, total=100)
    assert evidence.reset_axis(poisoned, _source(1)) == (1, Place("fa.py:16", "@pl.when(qi == 0)"), 2)
    assert evidence.reset_axis(poisoned, _source(2)) is None                 # at the reduction's first step
    assert evidence.reset_axis(poisoned, _source(1, ("parallel", "arbitrary", "arbitrary"))) is None
    assert evidence.reset_axis(poisoned, _source(1, ())) is None             # no semantics given: unknown
    unvisited = Finding.make("uninitialized-memory", "static", "never visited", case="c",
                             problem="unwritten-blocks", unwritten_count=3)
    assert evidence.reset_axis(unvisited, _source(1)) is None
