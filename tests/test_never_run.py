"""An output store under a ``pl.when`` that no grid point runs (``k == nk`` for
``k == nk - 1``): ``unroll.never_run`` walks the kernel's integer arithmetic over the
grid, and the fix names the condition, at its line. No JAX for the walk (equations
written in the document's form), then the seventh read's kernel through the real CLI."""
import pytest
from conftest import corpus, run_cli

from autograder.feedback import evidence, fixes
from autograder.findings import Finding
from autograder.grading import assignments
from autograder.grading.identity.sources import KernelSource, Place, Sources
from autograder.pallas_surface.program import unroll

K, NK, EQ, IDX, OUT, ACC = 20, 21, 22, 23, 1, 2


def _eq(p, ins, out, src=None, **params):
    return {"p": p, "in": ins, "out": [{"v": out}] if out is not None else [],
            "params": [[k, v] for k, v in params.items()], "src": src}


def _v(n):
    return {"v": n}


def _when(cmp, last):
    """``@pl.when(k <cmp> nk - last)`` around ``o_ref[...] = acc_ref[...]`` on a (2, 3) grid."""
    store = _eq("swap", [_v(30), _v(31)], 32, src=21)
    branch = {"cjx": {"jaxpr": {"invars": [_v(30), _v(31)], "eqns": [store], "outvars": []}, "consts": []}}
    empty = {"cjx": {"jaxpr": {"invars": [_v(30), _v(31)], "eqns": [], "outvars": []}, "consts": []}}
    cond = {"p": "cond", "in": [_v(IDX), _v(OUT), _v(ACC)], "out": [], "src": 19,
            "params": [["branches", {"t": [empty, branch]}]]}
    return {"invars": [_v(OUT), _v(ACC)], "eqns": [
        _eq("program_id", [], K, axis=1), _eq("num_programs", [], NK, axis=1),
        _eq("sub", [_v(NK), {"lit": last, "aval": {"sa": [[], {"dt": "int32"}, True]}}], 24),
        _eq(cmp, [_v(K), _v(24)], EQ),
        _eq("convert_element_type", [_v(EQ)], IDX, new_dtype={"dt": "int32"}), cond]}, store, cond


def test_a_store_no_grid_point_reaches_is_found_with_its_condition():
    kernel, store, cond = _when("eq", 0)            # k == nk: never
    assert unroll.never_run(kernel, (2, 3)) == [(store, cond)]
    for cmp, last in (("eq", 1), ("lt", 0), ("ge", 2)):      # k == nk - 1, k < nk, k >= nk - 2: some step stores
        assert unroll.never_run(_when(cmp, last)[0], (2, 3)) == []
    # No grid (program_id unknown), or a grid past the walk's bound: no fact.
    assert unroll.never_run(kernel, ()) is None and unroll.never_run(kernel, (unroll.POINTS + 1,)) is None


def test_the_fix_names_the_condition_and_its_line():
    store, when = Place("m.py:21", "o_ref[...] = acc_ref[...]"), Place("m.py:19", "@pl.when(k == nk)")
    where = Sources((KernelSource("m.py:28", "matmul", "matmul_kernel", "m.py:9-21", stores=(store,), grid=(2, 2, 3),
                                  never_run=((store, when),)),), file="m.py")
    f = Finding.make("uninitialized-memory", "generic", "65536 outputs hold the fill", case="f32-256x384x256",
                     check="correctness", never_written=65536, first_never=[0, 0], wrong_unwritten=65536)
    said = fixes.fix(f, assignments.find("matmul"), sources=where)
    assert said.what == ("the store at line 21 runs only under `@pl.when(k == nk)` (line 19), whose condition is "
                         "false at every step of the grid (2, 2, 3): no step stores the output. Make it true at the "
                         "step that should store (the last step along an axis is pl.num_programs(axis) - 1)")
    assert evidence.fault(f, where).place == when
    # A store that runs (no never_run fact): the store itself, with the general words.
    runs = Sources((KernelSource("m.py:28", "matmul", "matmul_kernel", "m.py:9-21", stores=(store,)),), file="m.py")
    assert evidence.fault(f, runs).place == store and "never stores 65536" in fixes.fix(f, sources=runs).what


@pytest.mark.jax
@pytest.mark.grading
def test_a_store_whose_condition_is_never_true_is_fixed_at_the_condition():
    path = corpus("matmul") / "store_condition_never_true.py"
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "@pl.when(k == nk)" in text)
    proc = run_cli("grade", str(path), "-a", "matmul", "--run-key", "5", "--case", "f32-256x384x256",
                   "--rung", "generic")
    said = " ".join(proc.stdout.split())
    assert proc.returncode == 0 and "[FAIL] 1.1 f32-256x384x256 · generic interpreter (0/1.5)" in said
    assert "Depends on uninitialized memory [uninitialized-memory], problem 1:" in said
    assert "Problems found: 1 " in said
    assert f"At store_condition_never_true.py:{line}: @pl.when(k == nk)" in said
    assert (f"runs only under `@pl.when(k == nk)` (line {line}), whose condition is false at every step of the grid "
            "(2, 2, 3)") in said
