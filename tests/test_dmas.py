"""A DMA wait on another semaphore than its copy's start, read from the program
document (pallas_surface/program/dmas.py), and the fault line and fix the feedback
draws from it (feedback/evidence.py). No JAX: equations written here in the
document's form, and the real documents of tests/documents (the solution's, and
issue 45's k09: assignments/dma_scale/corpus/dma_wrong_semaphore.py)."""
import copy
import json
from pathlib import Path

from autograder.feedback import evidence, fixes
from autograder.findings import Finding
from autograder.grading import assignments
from autograder.grading.identity import sources
from autograder.grading.identity.sources import KernelSource, Sources
from autograder.pallas_surface.program import dmas, unroll

DOCUMENTS = Path(__file__).resolve().parent / "documents"
CORPUS = Path(__file__).resolve().parent.parent / "assignments" / "dma_scale" / "corpus"
X, BUF, SEM, DYN = 2, 4, 5, 9     # the kernel's variable ids: x_hbm, buf, sem, a traced int


def _slice(start, size, stride=1):
    return {"dc": ["Slice", [["start", start], ["size", size], ["stride", stride]]]}


def _ref(leaf, indices, shape):
    nd = {"dc": ["NDIndexer", [["indices", {"t": indices}], ["shape", {"t": shape}],
                               ["int_indexer_shape", {"t": []}], ["validate", False]]]}
    return {"dc": ["TransformedRef", [["ref", {"leaf": leaf}], ["transforms", {"t": [nd]}]]]}


def _lit(n):
    return {"lit": n, "aval": {"sa": [[], {"dt": "int32"}, True]}}


def _dma(p, chunk, slot, sem, src=0, dynamic=False, remote=None, **params):
    """x_hbm.at[chunk*64:+64] -> buf.at[slot] on sem.at[sem], as both releases write it."""
    operands = [{"v": X}, {"v": BUF}, {"v": DYN} if dynamic else _lit(slot), {"v": SEM}, _lit(sem)]
    tree = {"t": [_ref(0, [_slice(chunk * 64, 64), _slice(0, 256)], [192, 256]),
                  _ref(1, [{"leaf": 2}, _slice(0, 64), _slice(0, 256)], [2, 64, 256]),
                  _ref(3, [{"leaf": 4}], [2]), remote, None]}
    return {"p": p, "in": operands, "out": [],
            "params": [[k, v] for k, v in params.items()] + [["tree", {"tree": ["tracing", tree]}]], "src": src}


def _start(chunk, slot, sem, **kw):
    return _dma("dma_start", chunk, slot, sem, add=False, priority=0, **kw)


def _wait(chunk, slot, sem, **kw):
    return _dma("dma_wait", chunk, slot, sem, **{"is_wait_send": False, **kw})


def _found(*eqns):
    return dmas.copies({"eqns": list(eqns)})


NAMES = {X: "x_hbm", BUF: "buf", SEM: "sem"}


def _amiss(found):
    """The waits amiss (a semaphore or a slot), not the copies a partial sequence leaves unwaited."""
    return tuple(m for m in dmas.mismatches(found) if m.kind != "unwaited")


def test_a_wait_on_the_other_slots_semaphore_is_a_mismatch_with_both_semaphores():
    found = _found(_start(0, 0, 0, src=0), _start(1, 1, 1, src=1), _wait(0, 0, 1, src=2))
    (m,) = dmas.mismatches(found)
    assert (m.wait.at, m.start.at) == (2, 0)
    assert [dmas.written(r, NAMES) for r in (m.wait.sem, m.start.sem, m.wait.dst, m.wait.src)] == \
        ["sem[1]", "sem[0]", "buf[0]", "x_hbm[0:64]"]


def test_a_wait_on_its_copys_own_semaphore_is_no_mismatch():
    assert dmas.mismatches(_found(_start(0, 0, 0), _start(1, 1, 1), _wait(0, 0, 0), _wait(1, 1, 1))) == ()
    # 0.10.2 writes insert_dummy_device=False where 0.12 writes is_wait_send=False.
    assert dmas.mismatches(_found(_start(0, 0, 0), _dma("dma_wait", 0, 0, 1, insert_dummy_device=False))) != ()


def test_no_fact_without_a_start_of_the_same_copy_or_with_one_on_the_waits_semaphore():
    # A wait through a descriptor of another chunk (the same size: the semaphore counts bytes).
    assert _amiss(_found(_start(0, 0, 0), _wait(1, 0, 1))) == ()
    # The same copy started on both semaphores: the wait's own start exists.
    assert _amiss(_found(_start(0, 0, 0), _start(0, 0, 1), _wait(0, 0, 1))) == ()
    # Started on two other semaphores: which one it meant is not the grader's guess.
    assert _amiss(_found(_start(0, 0, 0), _start(0, 0, 1), _wait(0, 0, 2))) == ()


def test_a_copy_started_into_another_slot_than_its_wait_names_is_a_slot_mismatch():
    # The prefetch of chunk 1 goes into slot 0 (still being read); its wait names slot 1.
    found = _found(_start(0, 0, 0, src=0), _start(1, 0, 0, src=1), _wait(0, 0, 0, src=2), _wait(1, 1, 1, src=3))
    (m,) = _amiss(found)
    assert (m.kind, m.wait.at, m.start.at) == ("slot", 3, 1)
    assert [dmas.written(r, NAMES) for r in (m.start.dst, m.wait.dst, m.wait.src)] == \
        ["buf[0]", "buf[1]", "x_hbm[64:128]"]
    # Started into both slots, or never started at all: which one it meant is not the grader's guess.
    assert _amiss(_found(_start(1, 0, 0), _start(1, 1, 0), _wait(1, 2, 1))) == ()
    assert _amiss(_found(_start(0, 0, 0), _wait(1, 1, 1))) == ()


def test_the_slot_mismatch_is_fixed_at_the_copys_start_in_the_students_names():
    where = sources.Sources((sources.KernelSource(
        "k.py:30", "dma_scale", "_kernel", "k.py:11-24",
        sem_mismatches=(sources.SemMismatch(sources.Place("k.py:23", "dma(c, slot).wait()"),
                                            sources.Place("k.py:22", "dma(c + 1, slot).start()"), "sem[1]",
                                            "sem[0]", "buf[1]", "slot", "buf[0]", "x_hbm[64:128]"),)),))
    found = evidence.fault(_hang(), where)
    assert (found.what, found.place.where) == ("the copy's start", "k.py:22")
    assert evidence.fix(_hang(), where) == (
        "start each copy into the slot its wait names: the copy of x_hbm[64:128] is started into buf[0] at k.py:22, "
        "but the .wait() at k.py:23 waits for it in buf[1], where it was never started; start it into buf[1] (the "
        "slot the wait and the reads after it use, not the one still being read)")


def test_a_dynamic_index_a_remote_copy_a_nested_dma_or_a_malformed_one_reads_as_no_copies():
    assert _found(_start(0, 0, 0, dynamic=True), _wait(0, 0, 1)) is None
    assert _found(_start(0, 0, 0, remote=_ref(3, [{"leaf": 4}], [2])), _wait(0, 0, 1)) is None
    assert _found(_start(0, 0, 0), _wait(0, 0, 1, is_wait_send=True)) is None
    # A loop whose form is not a loop's (no length, no body's invars) is not guessed at.
    loop = {"p": "scan", "in": [], "out": [], "params": [["jaxpr", {"jx": {"eqns": [_start(0, 0, 0)]}}]]}
    assert _found(loop, _wait(0, 0, 1)) is None
    # A DMA under an equation the reader does not enter, or a branch chosen by a value read from memory.
    other = {"p": "custom_thing", "in": [], "out": [], "params": [["jaxpr", {"jx": {"eqns": [_start(0, 0, 0)]}}]]}
    assert _found(other, _wait(0, 0, 1)) is None
    assert _found(_cond({"v": 77}, [_start(0, 0, 0)]), _wait(0, 0, 1)) is None
    broken = _wait(0, 0, 1)
    broken["params"][-1][1]["tree"][1]["t"] = [None] * 5
    assert _found(_start(0, 0, 0), broken) is None
    for junk in (None, 7, [], {"eqns": [3]}, {"eqns": [{"p": "dma_wait", "in": 3}]}):
        assert dmas.copies(junk) is None or dmas.copies(junk) == ()
    assert dmas.copies({"eqns": []}) == ()


def test_a_ref_is_written_as_the_student_would_and_an_odd_name_is_not_shown():
    ref = dmas.Ref(1, (((64, 64, 1), (0, 256, 1)),), ((192, 256),))
    assert dmas.written(ref, {1: "x_hbm"}) == "x_hbm[64:128]"
    assert dmas.written(dmas.Ref(1, (((0, 8, 2),),), ((16,),)), {1: "x"}) == "x[0:16:2]"
    assert dmas.written(dmas.Ref(1, ((3,),), ((4,),)), {1: "<b>sem</b>"}) == "a ref[3]"
    assert dmas.written(dmas.Ref(1, (), ()), {}) == "a ref"


def _doc(name):
    return json.loads((DOCUMENTS / name).read_text())


def _sources(name, file):
    text = (CORPUS / file).read_text() if (CORPUS / file).exists() else ""
    return sources.of_program(_doc(name), lambda f, line: f"{f}:{line}", text, file)


def _hang():
    return Finding.make("dma-protocol", "tpu-interpret", "hung", case="f32-192x256", check="races",
                        problem="hang", mode="on_wait")


def _mode_dependent():
    return Finding.make("dma-protocol", "tpu-interpret", "wrong when late", case="f32-256x128", check="races",
                        problem="mode-dependent", variant="dma-eager", mode_passing="eager",
                        mode_failing="on_wait")


FIX = ("wait on the semaphore the copy was started with: the .wait() waits on sem[1] for the copy into buf[0], "
       "which was started on sem[0] at dma_wrong_semaphore.py:30")


def test_the_traced_k09_points_every_dma_problem_at_its_wait_with_the_semaphore_fix():
    where = _sources("dma_scale-dma_wrong_semaphore.json", "dma_wrong_semaphore.py")
    (m,) = where.kernels[0].sem_mismatches
    assert (m.wait.where, m.start.where, m.waits_on, m.started_on, m.copy) == \
        ("dma_wrong_semaphore.py:35", "dma_wrong_semaphore.py:30", "sem[1]", "sem[0]", "buf[0]")
    assert m.wait.text.endswith("sem.at[1 - slot]).wait()")
    a = assignments.find("dma_scale")
    for f in (_hang(), _mode_dependent()):
        found = evidence.fault(f, where)
        assert (found.what, found.place) == ("the wait", m.wait)
        said = fixes.fix(f, a, sources=where)
        assert (said.what, said.where, said.specific) == (FIX, "at dma_wrong_semaphore.py:35", True)
    # A secret case's finding speaks in the grader's words only (no ref names).
    assert fixes.fix(_hang(), a, visible=False, sources=where).what.startswith("a .wait() that no .start()")


def test_the_solution_and_a_kernel_without_the_document_keep_their_fixes():
    where = _sources("dma_scale-dma_scale.json", "dma_scale.py")
    assert where.kernels[0].sem_mismatches == ()
    assert evidence.fix(_hang(), where).startswith("a .wait() that no .start() satisfies")
    assert evidence.fix(_mode_dependent(), where).startswith("a buffer is read before its copy is waited on")
    assert evidence.fix(_hang(), None).startswith("a .wait() that no .start() satisfies")


def test_the_solutions_document_with_one_wait_moved_to_the_other_semaphore_is_caught():
    """The solution's own document, its first wait's semaphore index changed: the
    document alone (no run, no JAX) shows the mismatch, at the solution's lines."""
    doc = copy.deepcopy(_doc("dma_scale-dma_scale.json"))
    waits = [e for e in sources._eqns(doc["program"]) if e["p"] == "dma_wait"]
    waits[0]["in"][4]["lit"] = 1 - waits[0]["in"][4]["lit"]
    where = sources.of_program(doc, lambda f, line: f"{f}:{line}")
    (m,) = where.kernels[0].sem_mismatches
    assert (m.waits_on, m.started_on, m.copy) == ("sem[1]", "sem[0]", "buf[0]")
    assert m.wait.where == "dma_scale.py:{}".format(doc["sources"][waits[0]["src"]][1])


# ---- loops, branches and the grid, evaluated on integers (pallas_surface/program/unroll.py) -------

C, SLOT, NEXT, PRED = 30, 31, 32, 33     # a loop body's counter and the values computed from it


def _eq(p, ins, out, src=None, **params):
    return {"p": p, "in": ins, "out": [{"v": out}] if out is not None else [],
            "params": [[k, v] for k, v in params.items()], "src": src}


def _v(n):
    return {"v": n}


def _body_dma(p, chunk_var, slot_var, sem_var, src):
    """x_hbm.at[chunk*64:+64] -> buf.at[slot] on sem.at[sem], every index a variable."""
    e = _dma(p, 0, 0, 0, src=src, **({"add": False} if p == "dma_start" else {"is_wait_send": False}))
    tree = e["params"][-1][1]["tree"][1]["t"]
    tree[0]["dc"][1][1][1]["t"][0]["dc"][1][0][1]["t"][0] = _slice({"leaf": 5}, 64)
    e["in"] = [_v(X), _v(BUF), _v(slot_var), _v(SEM), _v(sem_var), _v(chunk_var)]
    return e


def _cond(index, eqns, operands=()):
    branch = {"cjx": {"jaxpr": {"invars": list(operands), "eqns": eqns, "outvars": []}, "consts": []}}
    return {"p": "cond", "in": [index, *operands], "out": [], "params": [["branches", {"t": [
        {"cjx": {"jaxpr": {"invars": list(operands), "eqns": [], "outvars": []}, "consts": []}}, branch]}]]}


def _rem2(src_var, out):
    """``c % 2`` as jnp writes it: a jit whose inner jaxpr holds the rem (a literal as a 0-d array)."""
    two = {"lit": {"a": ["int32", [], "AgAAAA=="]}}
    inner = {"invars": [{"v": 90}], "eqns": [_eq("rem", [_v(90), two], 91)], "outvars": [_v(91)]}
    return _eq("jit", [_v(src_var)], out, jaxpr={"cjx": {"jaxpr": inner, "consts": []}})


def _loop(n, wait_sem_var):
    """fori_loop(0, n): start chunk c + 1 into the other slot (on its semaphore) when c + 1 < n,
    then wait for chunk c in its slot on ``wait_sem_var``; after a first start of chunk 0."""
    start = _body_dma("dma_start", 40, NEXT, NEXT, src=1)
    body = {"invars": [_v(X), _v(BUF), _v(SEM), _v(C)], "outvars": [_v(39)], "eqns": [
        _eq("add", [_v(C), _lit(1)], 39),
        _rem2(C, SLOT),
        _eq("sub", [_lit(1), _v(SLOT)], NEXT),
        _eq("lt", [_v(39), _lit(n)], PRED),
        _eq("convert_element_type", [_v(PRED)], 34, new_dtype={"dt": "int32"}),
        _eq("mul", [_v(39), _lit(64)], 40),
        _cond(_v(34), [start], [_v(X), _v(BUF), _v(SEM), _v(40), _v(NEXT)]),
        _eq("mul", [_v(C), _lit(64)], 41),
        _body_dma("dma_wait", 41, SLOT, wait_sem_var, src=2)]}
    return [_start(0, 0, 0, src=0),
            {"p": "scan", "in": [_v(X), _v(BUF), _v(SEM), _lit(0)], "out": [{"v": 50}],
             "params": [["jaxpr", {"cjx": {"jaxpr": body, "consts": []}}], ["length", n], ["reverse", False]]}]


def test_a_loops_waits_are_read_step_by_step_and_a_wait_on_the_next_slots_semaphore_is_caught():
    kernel = {"invars": [_v(X), _v(BUF), _v(SEM)], "eqns": _loop(3, NEXT)}
    found = dmas.copies(kernel)
    assert [(c.started, c.src.index[0][0][0], c.dst.index[0][0], c.sem.index[0][0]) for c in found] == [
        (True, 0, 0, 0), (True, 64, 1, 1), (False, 0, 0, 1), (True, 128, 0, 0), (False, 64, 1, 0),
        (False, 128, 0, 1)]
    first = dmas.mismatches(found)[0]
    assert (first.kind, first.wait.at, first.start.at) == ("semaphore", 2, 0)
    assert [dmas.written(r, NAMES) for r in (first.wait.sem, first.start.sem, first.wait.dst)] == \
        ["sem[1]", "sem[0]", "buf[0]"]
    # The same loop waiting on its own slot's semaphore: every copy read, no mismatch.
    right = dmas.copies({"invars": [_v(X), _v(BUF), _v(SEM)], "eqns": _loop(3, SLOT)})
    assert len(right) == 6 and dmas.mismatches(right) == ()


def test_the_grid_a_while_loop_and_the_budget():
    # program_id on a (2,) grid: one start and one wait per grid point, in order.
    kernel = {"invars": [_v(X), _v(BUF), _v(SEM)], "eqns": [
        _eq("program_id", [], C, axis=0), _eq("mul", [_v(C), _lit(64)], 40), _eq("rem", [_v(C), _lit(2)], SLOT),
        _body_dma("dma_start", 40, SLOT, SLOT, src=0), _body_dma("dma_wait", 40, SLOT, SLOT, src=1)]}
    found = dmas.copies(kernel, (2,))
    assert [(c.started, c.src.index[0][0][0], c.sem.index[0][0]) for c in found] == \
        [(True, 0, 0), (False, 0, 0), (True, 64, 1), (False, 64, 1)]
    assert dmas.copies(kernel, ()) is None              # no grid: program_id is unknown, so is the index
    assert dmas.copies(kernel, (unroll.POINTS + 1,)) is None
    # A while loop counting to 2 around a start and its wait.
    cond = {"invars": [_v(60)], "eqns": [_eq("lt", [_v(60), _lit(2)], 61)], "outvars": [_v(61)]}
    body = {"invars": [_v(X), _v(BUF), _v(SEM), _v(C)], "outvars": [_v(39)], "eqns": [
        _eq("add", [_v(C), _lit(1)], 39), _eq("mul", [_v(C), _lit(64)], 40),
        _body_dma("dma_start", 40, C, C, src=0), _body_dma("dma_wait", 40, C, C, src=1)]}
    loop = {"p": "while", "in": [_v(X), _v(BUF), _v(SEM), _lit(0)], "out": [{"v": 70}], "params": [
        ["cond_jaxpr", {"cjx": {"jaxpr": cond, "consts": []}}], ["body_jaxpr", {"cjx": {"jaxpr": body, "consts": []}}],
        ["cond_nconsts", 0], ["body_nconsts", 3]]}
    assert len(dmas.copies({"invars": [_v(X), _v(BUF), _v(SEM)], "eqns": [loop]})) == 4
    # A loop that never ends (or runs past the budget) reads as no fact, quickly.
    endless = copy.deepcopy(loop)
    endless["params"][0][1]["cjx"]["jaxpr"]["eqns"][0] = _eq("ge", [_v(60), _lit(0)], 61)
    assert dmas.copies({"invars": [_v(X), _v(BUF), _v(SEM)], "eqns": [endless]}) is None
    long = {"invars": [_v(X), _v(BUF), _v(SEM)], "eqns": _loop(unroll.STEPS, SLOT)}
    assert dmas.copies(long) is None
    # A counter squared every step stays a bounded number (unknown past 2**40), never a huge int.
    assert unroll._bounded(2 ** 41) is None and unroll._bounded(-5) == -5


def test_a_stand_in_wait_says_nothing_of_slots():
    """A wait needs only its semaphore and its copy's size: one naming chunk 0 for every slot
    (a loop's stand-in), or the last chunk in another slot after its own wait, is no slot fact."""
    stand_in = _found(_start(0, 0, 0), _start(1, 1, 1), _wait(0, 0, 0, src=5), _wait(0, 1, 1, src=5))
    assert dmas.mismatches(stand_in) == ()
    balanced = _found(_start(0, 0, 0), _start(1, 1, 1), _wait(0, 0, 0), _wait(1, 1, 1), _start(2, 0, 0),
                      _wait(2, 0, 0), _start(3, 1, 1), _wait(2, 1, 1, src=9))
    assert dmas.mismatches(balanced) == ()


def test_the_traced_loop_kernel_is_fixed_at_its_wait():
    """The fifth read's kernel (a fori_loop; corpus fori_wait_on_next_slot_semaphore.py), as the
    tracer wrote it: the wait at line 38 on sems[1] for buf[0], started on sems[0] at line 28."""
    where = _sources("dma_scale-fori_wait_on_next_slot_semaphore.json", "fori_wait_on_next_slot_semaphore.py")
    (m,) = where.kernels[0].sem_mismatches
    assert (m.wait.where, m.start.where, m.waits_on, m.started_on, m.copy) == \
        ("fori_wait_on_next_slot_semaphore.py:38", "fori_wait_on_next_slot_semaphore.py:28", "sems[1]",
         "sems[0]", "buf[0]")
    assert m.wait.text == "fetch(c, slot, sems.at[next_slot]).wait()"
    assert evidence.fix(_hang(), where) == (
        "wait on the semaphore the copy was started with: the .wait() waits on sems[1] for the copy into buf[0], "
        "which was started on sems[0] at fori_wait_on_next_slot_semaphore.py:28")


def test_a_copy_started_and_never_waited_on_is_named_only_where_no_wait_is_amiss():
    # Chunk 2 into slot 0 is started after the last wait: nothing waits for it.
    found = _found(_start(0, 0, 0, src=0), _start(1, 1, 1, src=1), _wait(0, 0, 0, src=2), _start(2, 0, 0, src=3),
                   _wait(1, 1, 1, src=2))
    assert [c.at for c in dmas.unwaited(found)] == [3]
    (m,) = dmas.mismatches(found)
    assert (m.kind, m.wait.at, m.start.at) == ("unwaited", 3, 3)
    assert [dmas.written(r, NAMES) for r in (m.start.src, m.start.dst)] == ["x_hbm[128:192]", "buf[0]"]
    # A wait before any start (its own bug: a hang) leaves the leftovers unnamed.
    assert dmas.unwaited(_found(_wait(0, 0, 0), _start(0, 0, 0))) == ()
    # Every copy waited on: nothing left over.
    assert dmas.unwaited(_found(_start(0, 0, 0), _wait(0, 0, 0))) == ()


def test_the_never_waited_copy_is_the_fix_of_a_mode_dependent_result_not_of_a_hang():
    start = sources.Place("k.py:24", "dma(c + 1, nxt).start()")
    where = sources.Sources((sources.KernelSource(
        "k.py:30", "dma_scale", "_kernel", "k.py:11-26",
        sem_mismatches=(sources.SemMismatch(start, start, "sems[0]", "sems[0]", "bufs[0]", "unwaited", "bufs[0]",
                                            "x_hbm[128:192]"),)),))
    found = evidence.fault(_mode_dependent(), where)
    assert (found.what, found.place) == ("the copy never waited on", start)
    assert evidence.fix(_mode_dependent(), where) == (
        "wait on every copy you start, once, before its destination is read: the copy of x_hbm[128:192] into "
        "bufs[0] started at k.py:24 is never waited on")
    # A hang is a wait nothing satisfies: the copy left over is not what stopped it.
    assert evidence.fix(_hang(), where).startswith("a .wait() that no .start() satisfies")
    assert evidence.fault(_hang(), where) is None or evidence.fault(_hang(), where).what != "the copy never waited on"


def test_a_buffer_read_before_its_wait_is_placed_at_the_read_and_one_refilled_at_the_start():
    """The race detector names both accesses: wrong only when copies land late ('on_wait'
    fails), the read that comes before its wait is the fault (the seventh read's kernel);
    wrong only when they land early ('eager' fails), the copy's start that refills it."""
    text = ["x = 1"] * 30
    text[16], text[25] = "copy(0, 0).start()", "x = buf[slot]"
    where = Sources((KernelSource("dma_scale.py:40", "dma_scale", "dma_kernel", "dma_scale.py:12-32"),),
                    file="dma_scale.py", text=tuple(text), where=lambda f, line: f"{f}:{line}")
    race = Finding.make("data-race", "tpu-interpret", "race", case="f32-256x128", check="races",
                        accesses=[{"access": "write", "where": "dma_scale.py:17:4 (kernel)"},
                                  {"access": "read", "where": "dma_scale.py:26:8 (kernel)"}])
    found = evidence.fault(_mode_dependent(), where, [race])
    assert (found.what, found.place.where, found.place.text) == ("the read before its wait", "dma_scale.py:26",
                                                                 "x = buf[slot]")
    eager = Finding.make("dma-protocol", "tpu-interpret", "wrong when early", case="f32-256x128", check="races",
                         problem="mode-dependent", mode_passing="on_wait", mode_failing="eager")
    found = evidence.fault(eager, where, [race])
    assert (found.what, found.place.where) == ("the copy's start", "dma_scale.py:17")
