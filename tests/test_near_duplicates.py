"""Near-duplicate pairs: the canonical listing and pieces of a program
(``grading.likeness``), the index and exact scores (``review.similar``), on
hand-made programs (no JAX); then a generated class of matmul kernels, seven
designs with renamed, reordered, padded and re-blocked copies of each, traced
in this process the way the tracer child traces a submission (jax)."""
import importlib.util
import itertools
import json
import random
from pathlib import Path

import pytest
from lookalikes.variants import variant

from autograder.grading.identity import canonical, likeness
from autograder.review import similar

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DESIGNS = sorted((HERE / "lookalikes" / "matmul").glob("*.py"))
F32 = {"sa": [[8, 128], {"dt": "float32"}, False]}


def _eqn(prim: str, ins: list, out: int | None, **params) -> dict:
    return {"p": prim, "in": [{"v": v} if isinstance(v, int) else {"lit": {"f": v}, "aval": F32} for v in ins],
            "out": [] if out is None else [{"v": out, "aval": F32}],
            "params": [[k, v] for k, v in params.items()], "src": None}


def _program(eqns: list[dict], out: int, n_in: int = 2) -> dict:
    return {"format": 1, "program": {"consts": [], "jaxpr": {
        "constvars": [], "invars": [{"v": i, "aval": F32} for i in range(n_in)], "eqns": eqns,
        "outvars": [{"v": out}]}}}


def program_one() -> dict:
    """sin(x) and cos(y), independent; their sum scaled; an unused exp; a print."""
    return _program([_eqn("sin", [0], 2), _eqn("cos", [1], 3), _eqn("add", [2, 3], 4),
                     _eqn("mul", [4, 2.0], 5), _eqn("exp", [0], 6),
                     _eqn("debug_print", [5], None, fmt="<script>alert(1)</script> {}")], 5)


def program_one_disguised() -> dict:
    """The same, variables renumbered, the two independent lines swapped, the
    constant changed, another unused line instead of the unused exp."""
    doc = _program([_eqn("cos", [11], 20), _eqn("sin", [10], 21), _eqn("neg", [11], 22),
                    _eqn("add", [21, 20], 30), _eqn("mul", [30, 3.0], 31),
                    _eqn("debug_print", [31], None, fmt="<script>alert(1)</script> {}")], 31)
    doc["program"]["jaxpr"]["invars"] = [{"v": 10, "aval": F32}, {"v": 11, "aval": F32}]
    return doc


def program_two() -> dict:
    """One operation changed (a difference for a product): a near, not an identical, program."""
    return _program([_eqn("sin", [0], 2), _eqn("cos", [1], 3), _eqn("sub", [2, 3], 4),
                     _eqn("mul", [4, 2.0], 5),
                     _eqn("debug_print", [5], None, fmt="<script>alert(1)</script> {}")], 5)


# --- without JAX ----------------------------------------------------------------------------

def test_a_disguised_program_lists_and_scores_as_the_original():
    one, disguised, two = (likeness.of(d) for d in (program_one(), program_one_disguised(), program_two()))
    assert one.listing == disguised.listing and one.shingles == disguised.shingles
    assert one.listing == (
        "cos_1 = cos(in1)", "sin_1 = sin(in0)", "add_1 = add(cos_1, sin_1)", "mul_1 = mul(add_1, #)",
        'debug_print(mul_1)  [fmt="<script>alert(1)</script> {}"]', "return mul_1")
    assert 0.3 < likeness.jaccard(one.shingles, two.shingles) < 0.8
    assert likeness.jaccard(frozenset(), frozenset()) == 0.0


def test_the_order_follows_effects_on_a_ref_and_data_never_the_source():
    ref = {"ref": [F32, {"e": ["MemorySpace", "DEFAULT"]}]}
    eqns = [_eqn("get", [0], 2), _eqn("sin", [2], 3), _eqn("swap", [0, 3], 4), _eqn("get", [1], 5),
            _eqn("cos", [5], 6), _eqn("swap", [1, 6], 7)]
    doc = {"program": {"jaxpr": {"constvars": [], "invars": [{"v": 0, "aval": ref}, {"v": 1, "aval": ref}],
                                 "eqns": eqns, "outvars": []}}}
    lines = likeness.of(doc).listing
    # Two independent chains of effects, each whole and in its order; the chains in
    # the order of their canonical keys.
    assert lines == ("get_1 = get(in1)", "cos_1 = cos(get_1)", "swap_1 = swap(in1, cos_1)",
                     "get_2 = get(in0)", "sin_1 = sin(get_2)", "swap_2 = swap(in0, sin_1)")
    swapped = {"program": {"jaxpr": dict(doc["program"]["jaxpr"], eqns=eqns[3:] + eqns[:3])}}
    assert likeness.of(swapped).listing == lines
    # Within one chain, the order is the program's: a read after a write is not a read before it.
    after = {"program": {"jaxpr": dict(doc["program"]["jaxpr"], eqns=[eqns[0], eqns[1], eqns[2],
                                                                       _eqn("get", [0], 8), _eqn("swap", [1, 8], 9)])}}
    assert likeness.of(after).listing[:3] == ("get_1 = get(in0)", "sin_1 = sin(get_1)", "swap_1 = swap(in0, sin_1)")


def test_the_index_finds_what_scoring_every_pair_finds():
    rng = random.Random(7)
    sets = {}
    for family in range(40):                 # 40 designs of 30 pieces, 5 copies of each, a few pieces changed
        base = [f"f{family}-{i}" for i in range(30)]
        for copy in range(5):
            s = set(base)
            for _ in range(rng.randrange(0, 6)):
                s.discard(rng.choice(base))
                s.add(f"x{rng.random()}")
            sets[f"{family}-{copy}"] = likeness.Likeness(frozenset(s), (f"{family}-{copy}",))
    for threshold in (0.5, 0.8, 0.9):
        indexed, exact = similar.find(sets, threshold), similar.find(sets, threshold, exact=True)
        assert indexed.submission_pairs() == exact.submission_pairs() != {}
        assert indexed.scored < exact.scored / 10        # the index spares most comparisons
        assert all(a.split("-")[0] == b.split("-")[0] for a, b in indexed.submission_pairs())


def test_bands_leave_a_pair_at_the_threshold_out_rarely():
    for t in (0.1, 0.5, 0.8, 0.9, 0.99, 1.0):
        b, r = similar.bands(t)
        assert b * r <= similar.NUM_PERM and (1 - t ** r) ** b < similar.MISS
        assert r == similar.NUM_PERM or (1 - t ** (r + 1)) ** (similar.NUM_PERM // (r + 1)) >= similar.MISS


def test_identical_programs_group_and_pairs_expand_to_submissions():
    one, two = likeness.of(program_one()), likeness.of(program_two())
    # Four submissions: too few to say what the class shares, so nothing is set aside.
    found = similar.find({"a": one, "b": likeness.of(program_one_disguised()), "c": two, "d": two}, 0.3)
    assert [p.ids for p in found.programs] == [("a", "b"), ("c", "d")] and found.common == 0
    score = likeness.jaccard(one.shingles, two.shingles)
    assert found.submission_pairs() == {("a", "b"): 1.0, ("c", "d"): 1.0, ("a", "c"): score, ("a", "d"): score,
                                        ("b", "c"): score, ("b", "d"): score}
    assert similar.find({"a": one, "c": two}, 0.9).pairs == ()
    # Five: what more than half of them have is set aside (as MOSS sets aside a base file), so
    # the two designs share nothing that is theirs alone and do not pair; each group stays one.
    found = similar.find({"a": one, "b": likeness.of(program_one_disguised()), "c": two, "d": two, "e": two}, 0.3)
    assert [p.ids for p in found.programs] == [("a", "b"), ("c", "d", "e")]
    assert found.common == len(two.shingles) and set(found.submission_pairs().values()) == {1.0}


I32 = {"sa": [[], {"dt": "int32"}, False]}
REF = {"ref": [{"sa": [[8, 128], {"dt": "float32"}, False]}, {"e": ["MemorySpace", "DEFAULT"]}]}


def _int(value: int) -> dict:
    return {"lit": value, "aval": I32}


def _op(prim: str, ins: list, out: int | None, aval=I32, **params) -> dict:
    return {"p": prim, "in": [{"v": v} if isinstance(v, int) else v for v in ins],
            "out": [] if out is None else [{"v": out, "aval": aval}], "params": [[k, v] for k, v in params.items()],
            "src": None}


def _kernel(eqns: list[dict], invars: list[tuple[int, dict]], outs: list[int] = ()) -> dict:
    return {"format": 1, "program": {"consts": [], "jaxpr": {
        "constvars": [], "invars": [{"v": v, "aval": a} for v, a in invars], "eqns": eqns,
        "outvars": [{"v": v} for v in outs]}}}


def _same(a: dict, b: dict) -> bool:
    """One fingerprint, one listing, every piece shared."""
    la, lb = likeness.of(a), likeness.of(b)
    return canonical.of(a).fingerprint == canonical.of(b).fingerprint and la.listing == lb.listing \
        and la.shingles == lb.shingles


def _index(*slices) -> dict:
    """A ref access's transforms: one NDIndexer of (start, size) slices over an (8, 128) ref."""
    return {"tree": ["default", {"t": [{"dc": ["NDIndexer", [
        ["indices", {"t": [{"dc": ["Slice", [["start", a], ["size", n], ["stride", 1]]]} for a, n in slices]}],
        ["shape", {"t": [8, 128]}], ["int_indexer_shape", {"t": []}], ["validate", False]]]}]}]}


WHOLE = {"tree": ["default", {"t": []}]}


def _copy_kernel(index: dict, extra: list[dict] = ()) -> dict:
    """o[...] = sin(x[...]) with ``index`` for both accesses (refs 0 and 1), ``extra`` first."""
    return _kernel([*extra, _op("get", [0], 2, F32, tree=index), _op("sin", [2], 3, F32),
                    _op("swap", [1, 3], 4, F32, tree=index)], [(0, REF), (1, REF)])


def test_the_normal_form_sets_aside_what_does_not_change_the_computation():
    plain = _copy_kernel(WHOLE)
    # ref[:, :] (full slices) is ref[...]; ref[0:4, :] is not.
    assert _same(_copy_kernel(_index((0, 8), (0, 128))), plain)
    assert not _same(_copy_kernel(_index((0, 4), (0, 128))), plain)
    # A jax.jit around the work: its body counts, the call does not.
    body = _copy_kernel(WHOLE)["program"]["jaxpr"]
    jitted = _kernel([_op("pjit", [0, 1], None, jaxpr={"cjx": {"jaxpr": body, "consts": []}})], [(10, REF), (11, REF)])
    jitted["program"]["jaxpr"]["eqns"][0]["in"] = [{"v": 10}, {"v": 11}]
    assert _same(jitted, plain)
    # A dead lax.cond(False, ...) that would zero the output: the branch taken is the empty one;
    # with a literal True the other branch runs, so it is a different program.
    zero = {"cjx": {"jaxpr": {"constvars": [], "invars": [{"v": 20, "aval": REF}], "outvars": [], "eqns": [
        _op("broadcast_in_dim", [{"lit": 0.0, "aval": F32}], 21, F32, shape={"t": [8, 128]}),
        _op("swap", [20, 21], 22, F32, tree=WHOLE)]}, "consts": []}}
    keep = {"cjx": {"jaxpr": {"constvars": [], "invars": [{"v": 23, "aval": REF}], "outvars": [], "eqns": []},
                    "consts": []}}
    dead = [_op("cond", [_int(0), 1], None, branches={"t": [keep, zero]})]
    assert _same(_copy_kernel(WHOLE, dead), plain)
    live = [_op("cond", [_int(1), 1], None, branches={"t": [keep, zero]})]
    assert not _same(_copy_kernel(WHOLE, live), plain)
    # A branch that keeps a value writes back what it read: r[...] = r[...] is nothing.
    noop = [_op("get", [1], 30, F32, tree=WHOLE), _op("swap", [1, 30], 31, F32, tree=WHOLE)]
    assert _same(_copy_kernel(WHOLE, noop), plain)


def _last_step(*eqns: dict, n_in: int = 3) -> dict:
    """A kernel that stores when its comparison (variable 9) holds: pl.when(...)."""
    store = {"cjx": {"jaxpr": {"constvars": [], "invars": [{"v": 40, "aval": REF}], "outvars": [], "eqns": [
        _op("broadcast_in_dim", [{"lit": 1.0, "aval": F32}], 41, F32, shape={"t": [8, 128]}),
        _op("swap", [40, 41], 42, F32, tree=WHOLE)]}, "consts": []}}
    skip = {"cjx": {"jaxpr": {"constvars": [], "invars": [{"v": 43, "aval": REF}], "outvars": [], "eqns": []},
                    "consts": []}}
    return _kernel([_op("program_id", [], 5, axis=2), *eqns,
                    _op("convert_element_type", [9], 10, new_dtype={"dt": "int32"}),
                    _op("cond", [10, 0], None, branches={"t": [skip, store]})],
                   [(0, REF), *[(v, I32) for v in range(1, n_in)]])


def test_simple_integer_identities_meet():
    # k == n - 1 and k + 1 == n, with n known when tracing (a literal) ...
    first = _last_step(_op("eq", [5, _int(3)], 9, {"sa": [[], {"dt": "bool"}, False]}))
    plus = _last_step(_op("add", [5, _int(1)], 6), _op("eq", [6, _int(4)], 9, {"sa": [[], {"dt": "bool"}, False]}))
    mirrored = _last_step(_op("add", [_int(1), 5], 6), _op("eq", [_int(4), 6], 9, {"sa": [[], {"dt": "bool"}, False]}))
    assert _same(plus, first) and _same(mirrored, first)
    # ... or only when it runs (an input): k == n - 1 against k + 1 == n, and k - 1 == n - 2.
    minus = _last_step(_op("sub", [1, _int(1)], 6), _op("eq", [5, 6], 9, {"sa": [[], {"dt": "bool"}, False]}))
    plus = _last_step(_op("add", [5, _int(1)], 6), _op("eq", [6, 1], 9, {"sa": [[], {"dt": "bool"}, False]}))
    both = _last_step(_op("sub", [5, _int(1)], 6), _op("sub", [1, _int(2)], 7),
                      _op("eq", [6, 7], 9, {"sa": [[], {"dt": "bool"}, False]}))
    assert _same(plus, minus) and _same(both, minus)
    # k <= n - 2 is k < n - 1 on integers; k < n - 1 is not k == n - 1.
    le = _last_step(_op("le", [5, _int(2)], 9, {"sa": [[], {"dt": "bool"}, False]}))
    lt = _last_step(_op("lt", [5, _int(3)], 9, {"sa": [[], {"dt": "bool"}, False]}))
    assert _same(le, lt) and not _same(lt, first)
    # x + 0 and x * 1 are x; x * 2 is not.
    zero = _last_step(_op("add", [5, _int(0)], 6), _op("mul", [6, _int(1)], 7),
                      _op("eq", [7, _int(3)], 9, {"sa": [[], {"dt": "bool"}, False]}))
    two = _last_step(_op("mul", [5, _int(2)], 7), _op("eq", [7, _int(3)], 9, {"sa": [[], {"dt": "bool"}, False]}))
    assert _same(zero, first) and not _same(two, first)


def test_a_float_comparison_keeps_its_constant_and_a_broken_document_is_left_as_it_is():
    from autograder.grading.identity import normal
    f = {"sa": [[], {"dt": "float32"}, False]}
    b = {"sa": [[], {"dt": "bool"}, False]}
    moved = _last_step(_op("add", [1, {"lit": 1.0, "aval": f}], 6, f), _op("eq", [6, 2], 9, b), n_in=3)
    kept = normal.program(moved["program"]["jaxpr"])
    assert [e["p"] for e in kept["eqns"]][:3] == ["program_id", "add", "eq"]
    broken = {"eqns": [{"p": "cond", "in": [{"lit": 0, "aval": I32}], "out": [], "params": [["branches", 7]]}]}
    assert normal.program({"eqns": "nonsense"}) == {"eqns": "nonsense"}
    assert normal.program(broken)["eqns"][0]["p"] == "cond"


def test_side_by_side_marks_lines_and_characters():
    rows = similar.side_by_side(("a = sin(x)", "b = add(a, y)", "return b"),
                                ("a = sin(x)", "b = sub(a, y)", "c = neg(b)", "return b"))
    assert [r.kind for r in rows] == ["same", "changed", "only-b", "same"]
    assert rows[1].a.parts == (("b = ", False), ("add", True), ("(a, y)", False))
    assert rows[1].b.parts == (("b = ", False), ("sub", True), ("(a, y)", False))
    assert rows[2].a is None and rows[2].b.number == 3 and rows[3].a.number == 3
    # One side a call deeper (a jax.jit around it): the lines still match; a line
    # replaced by an unlike one is one removed and one added, not a sea of marks.
    rows = similar.side_by_side(("k = pallas_call(in0)", "  get_1 = get(in0)", "return k"),
                                ("j = jit(in0)", "  k = pallas_call(in0)", "    get_1 = get(in0)", "  return k",
                                 "return j"))
    assert [r.kind for r in rows] == ["only-b", "same", "same", "same", "only-b"]
    rows = similar.side_by_side(("x = sin(a)",), ("broadcast_in_dim_1 = broadcast_in_dim(#)",))
    assert [r.kind for r in rows] == ["only-a", "only-b"]
    rows = similar.side_by_side(("  b = add(a, y)",), ("b = add(a, z)",))
    assert rows[0].a.parts == (("  ", False), ("b = add(a, ", False), ("y", True), (")", False))


# --- a generated class, traced (jax) ----------------------------------------------------------

def _trace(path: Path, slug: str = "matmul") -> dict:
    """The checked program document of ``path``'s kernel on the first case, as
    the parent checks what the tracer child sends (``rung.trace``, ``serial.encode``,
    ``schema.loads``)."""
    import jax.numpy as jnp

    from autograder.grading import assignments
    from autograder.grading.run import inputs
    from autograder.pallas_surface.program import schema, serial
    from autograder.pallas_surface.rungs import rung
    a = assignments.find(slug)
    module_spec = importlib.util.spec_from_file_location(f"lookalike_{path.stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    args = [jnp.asarray(v.array, jnp.dtype(v.dtype)) for v in inputs.make(a, a.cases[0])]
    traced = rung.trace(getattr(module, a.entry_function), args, [])
    return schema.loads(json.dumps(serial.encode(traced, {str(path.resolve())})).encode())


COPIES = {"renamed": ("rename",), "reordered": ("reorder",), "padded": ("pad",), "reblocked": ("blocks",),
          # Re-spelled without changing what it computes (grading.normal): jax.jit on or off,
          # ref[:, :] for ref[...], a dead lax.cond(False, ...), k + 1 == n for k == n - 1.
          "respelled": ("dead", "jit", "indexers", "arith"),
          "all": ("dead", "jit", "indexers", "arith", "pad", "blocks", "reorder", "rename")}


@pytest.mark.jax
def test_a_generated_class_finds_every_planted_pair_and_no_other(tmp_path):
    from autograder.pallas_surface.rungs import hooks
    hooks.install()
    class_ = {}
    for design in DESIGNS:
        source = design.read_text()
        class_[f"{design.stem}/original"] = design
        for name, steps in COPIES.items():
            path = tmp_path / f"{design.stem}__{name}.py"
            path.write_text(variant(source, *steps, salt=name))
            class_[f"{design.stem}/{name}"] = path
    docs = {sid: _trace(path) for sid, path in class_.items()}
    likes = {sid: likeness.of(doc) for sid, doc in docs.items()}
    found = similar.find(likes, similar.DEFAULT_THRESHOLD).submission_pairs()
    planted = {tuple(sorted(p)) for p in itertools.combinations(class_, 2) if p[0].split("/")[0] == p[1].split("/")[0]}
    assert len(DESIGNS) == 8 and len(planted) == 8 * 21
    assert set(found) == planted, (sorted(set(found) - planted), sorted(planted - set(found)))
    # The TA site's clusters: a copy that only renames, reorders, pads or re-spells keeps
    # its source's fingerprint; no two designs share one.
    prints = {sid: canonical.of(doc).fingerprint for sid, doc in docs.items()}
    for design in DESIGNS:
        assert all(prints[f"{design.stem}/{name}"] == prints[f"{design.stem}/original"]
                   for name in ("renamed", "reordered", "padded", "respelled")), design.stem
    assert len({prints[f"{d.stem}/original"] for d in DESIGNS}) == len(DESIGNS)
    assert all(likes[f"{d.stem}/respelled"].listing == likes[f"{d.stem}/original"].listing for d in DESIGNS)
    # Independent designs stay well apart: the closest two (the two textbook accumulators) score under 0.75.
    across = max(likeness.jaccard(likes[a].shingles, likes[b].shingles)
                 for a, b in itertools.combinations(likes, 2) if a.split("/")[0] != b.split("/")[0])
    assert across < 0.75
    # Renaming, reordering and padding change nothing in the listing a person reads;
    # new block sizes change it only where a loop unrolls a size-dependent number of times.
    for design in DESIGNS:
        original = likes[f"{design.stem}/original"].listing
        assert all(likes[f"{design.stem}/{name}"].listing == original
                   for name in ("renamed", "reordered", "padded")), design.stem
        assert (likes[f"{design.stem}/all"].listing == original) == (design.stem != "unrolled_k"), design.stem


@pytest.mark.jax
def test_the_matmul_solution_re_spelled_clusters_with_it(tmp_path):
    # Issue 37's two copies of the solution: without @jax.jit and with [:, :] for [...]
    # (0.30 against its source before the normal form), and with a dead
    # lax.cond(False, ...) and k + 1 == n for k == n - 1 (0.57): one program now.
    from autograder.pallas_surface.rungs import hooks
    hooks.install()
    source = (REPO / "solutions" / "matmul.py").read_text()
    copies = {"source": source, "unjitted": variant(source, "jit", "indexers"),
              "dead-branch": variant(source, "dead", "arith")}
    assert "@jax.jit" not in copies["unjitted"] and "[:, :]" in copies["unjitted"]
    assert "jax.lax.cond(False" in copies["dead-branch"] and "k + 1 == pl.num_programs(2)" in copies["dead-branch"]
    docs = {}
    for name, text in copies.items():
        (tmp_path / f"{name}.py").write_text(text)
        docs[name] = _trace(tmp_path / f"{name}.py")
    forms = {name: canonical.of(doc) for name, doc in docs.items()}
    likes = {name: likeness.of(doc) for name, doc in docs.items()}
    for name in ("unjitted", "dead-branch"):
        assert forms[name].fingerprint == forms["source"].fingerprint, name
        assert likeness.jaccard(likes[name].shingles, likes["source"].shingles) == 1.0, name
        assert likes[name].listing == likes["source"].listing, name


def _add_copies() -> dict[str, str]:
    """Issue 45's class: the add solution, four copies that compute the same thing
    spelled otherwise, and two different bugs."""
    lines = (REPO / "solutions" / "add.py").read_text().splitlines()
    source = "\n".join(ln for ln in lines if "STUB" not in ln and "SOLUTION" not in ln) + "\n"
    grid, spec = "grid=(m // BLOCK[0], n // BLOCK[1]),", "spec = pl.BlockSpec(BLOCK, lambda i, j: (i, j))"
    body = "o_ref[...] = x_ref[...] + y_ref[...]"
    copies = {
        "solution": source,
        "axes-swapped": source.replace(spec, spec.replace("lambda i, j", "lambda j, i")).replace(
            grid, "grid=(n // BLOCK[1], m // BLOCK[0]),"),
        "store-split": source.replace(body, "o_ref[:4] = x_ref[:4] + y_ref[:4]\n    o_ref[4:] = x_ref[4:] + y_ref[4:]"),
        "grid-flattened": source.replace(spec, "nj = n // BLOCK[1]\n    spec = pl.BlockSpec(BLOCK, lambda t: (t // nj, "
                                         "t % nj))").replace(grid, "grid=(m // BLOCK[0] * nj,),"),
        "minus-minus": source.replace("x_ref[...] + y_ref[...]", "x_ref[...] - (-y_ref[...])"),
        "one-step-too-long": source.replace(grid, "grid=(m // BLOCK[0], n // BLOCK[1] + 1),"),
        "one-step-too-short": source.replace(grid, "grid=(m // BLOCK[0], n // BLOCK[1] - 1),"),
    }
    assert len(set(copies.values())) == len(copies)
    return copies


@pytest.mark.jax
def test_copies_that_compute_the_same_pair_and_different_bugs_do_not(tmp_path):
    # Before: axes swapped 0.73, store split 0.25, grid flattened 0.10, x - (-y) 0.47 against the
    # solution (none paired), and the two bugs 1.00 (numbers set aside).
    from autograder.pallas_surface.rungs import hooks
    hooks.install()
    docs = {}
    for name, text in _add_copies().items():
        (tmp_path / f"{name}.py").write_text(text)
        docs[name] = _trace(tmp_path / f"{name}.py", "add")
    likes = {name: likeness.of(doc) for name, doc in docs.items()}
    copies = ("axes-swapped", "store-split", "grid-flattened", "minus-minus")
    for name in copies:
        assert likes[name].listing == likes["solution"].listing, name
        assert canonical.of(docs[name]).fingerprint == canonical.of(docs["solution"]).fingerprint, name
    found = similar.find(likes, similar.DEFAULT_THRESHOLD)
    assert sorted(p.ids for p in found.programs) == [
        ("one-step-too-long",), ("one-step-too-short",), ("solution", *copies)]
    pairs = found.submission_pairs()
    assert {k for k, v in pairs.items() if v == 1.0} == {tuple(sorted(p)) for p in
                                                          itertools.combinations(("solution", *copies), 2)}
    # The bugs differ in the grid's length against the blocks; what the class shares is set
    # aside, so they pair with nothing (plain Jaccard would still give them 0.87).
    assert not [k for k in pairs if "one-step-too-long" in k or "one-step-too-short" in k]
    assert likes["one-step-too-long"].listing[0].endswith("grid steps per output block=(=, +1)]")
    assert likes["one-step-too-short"].listing[0].endswith("grid steps per output block=(=, -1)]")
    assert likeness.jaccard(likes["one-step-too-long"].shingles, likes["one-step-too-short"].shingles) < 0.9
    assert found.common > 0 and similar.common(dict(list(likes.items())[:4])) == frozenset()
