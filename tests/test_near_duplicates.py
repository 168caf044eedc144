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

from autograder.grading import likeness
from autograder.review import similar

HERE = Path(__file__).resolve().parent
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
        "sin_1 = sin(in0)", "cos_1 = cos(in1)", "add_1 = add(sin_1, cos_1)", "mul_1 = mul(add_1, #)",
        'debug_print(mul_1)  [fmt="<script>alert(1)</script> {}"]', "return mul_1")
    assert 0.3 < likeness.jaccard(one.shingles, two.shingles) < 0.8
    assert likeness.jaccard(frozenset(), frozenset()) == 0.0


def test_the_order_follows_effects_on_a_ref_and_data_never_the_source():
    ref = {"ref": [F32, {"e": ["MemorySpace", "DEFAULT"]}]}
    eqns = [_eqn("get", [0], 2), _eqn("sin", [2], 3), _eqn("swap", [0, 3], 4), _eqn("get", [1], 5),
            _eqn("swap", [1, 5], 6)]
    doc = {"program": {"jaxpr": {"constvars": [], "invars": [{"v": 0, "aval": ref}, {"v": 1, "aval": ref}],
                                 "eqns": eqns, "outvars": []}}}
    lines = likeness.of(doc).listing
    # Two independent chains of effects, each whole and in its order; the chains in
    # the order of their canonical keys.
    assert lines == ("get_1 = get(in1)", "swap_1 = swap(in1, get_1)",
                     "get_2 = get(in0)", "sin_1 = sin(get_2)", "swap_2 = swap(in0, sin_1)")
    swapped = {"program": {"jaxpr": dict(doc["program"]["jaxpr"], eqns=eqns[3:] + eqns[:3])}}
    assert likeness.of(swapped).listing == lines
    # Within one chain, the order is the program's: a read after a write is not a read before it.
    after = {"program": {"jaxpr": dict(doc["program"]["jaxpr"], eqns=[eqns[0], eqns[1], eqns[2],
                                                                       _eqn("get", [0], 7), _eqn("swap", [1, 7], 8)])}}
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
    found = similar.find({"a": one, "b": likeness.of(program_one_disguised()), "c": two, "d": two}, 0.3)
    assert [p.ids for p in found.programs] == [("a", "b"), ("c", "d")]
    score = likeness.jaccard(one.shingles, two.shingles)
    assert found.submission_pairs() == {("a", "b"): 1.0, ("c", "d"): 1.0, ("a", "c"): score, ("a", "d"): score,
                                        ("b", "c"): score, ("b", "d"): score}
    assert similar.find({"a": one, "c": two}, 0.9).pairs == ()


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

def _trace(path: Path) -> dict:
    """The checked program document of ``path``'s matmul on the first case, as
    the parent checks what the tracer child sends (``rung.trace``, ``serial.encode``,
    ``schema.loads``)."""
    import jax.numpy as jnp

    from autograder import spec
    from autograder.grading import inputs
    from autograder.pallas_surface import rung, schema, serial
    a = spec.find("matmul")
    module_spec = importlib.util.spec_from_file_location(f"lookalike_{path.stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    args = [jnp.asarray(v.array, jnp.dtype(v.dtype)) for v in inputs.make(a, a.cases[0])]
    traced = rung.trace(getattr(module, a.entry_function), args, [])
    return schema.loads(json.dumps(serial.encode(traced, {str(path.resolve())})).encode())


COPIES = {"renamed": ("rename",), "reordered": ("reorder",), "padded": ("pad",), "reblocked": ("blocks",),
          "all": ("pad", "blocks", "reorder", "rename")}


@pytest.mark.jax
def test_a_generated_class_finds_every_planted_pair_and_no_other(tmp_path):
    from autograder.pallas_surface import hooks
    hooks.install()
    class_ = {}
    for design in DESIGNS:
        source = design.read_text()
        class_[f"{design.stem}/original"] = design
        for name, steps in COPIES.items():
            path = tmp_path / f"{design.stem}__{name}.py"
            path.write_text(variant(source, *steps, salt=name))
            class_[f"{design.stem}/{name}"] = path
    likes = {sid: likeness.of(_trace(path)) for sid, path in class_.items()}
    found = similar.find(likes, similar.DEFAULT_THRESHOLD).submission_pairs()
    planted = {tuple(sorted(p)) for p in itertools.combinations(class_, 2) if p[0].split("/")[0] == p[1].split("/")[0]}
    assert len(DESIGNS) == 8 and len(planted) == 8 * 15
    assert set(found) == planted, (sorted(set(found) - planted), sorted(planted - set(found)))
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
