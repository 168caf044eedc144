"""An index map that sends a grid axis to another block axis (``lambda i, j: (j, i)`` for a
grid laid out (rows, columns)): the fault is the map's line, not the grid's, and its fix
says so in the case's numbers where the case is visible, in the grader's words alone
where it is secret (no JAX)."""
import re

from autograder.feedback import evidence, fixes
from autograder.findings import Finding
from autograder.grading import assignments
from autograder.grading.identity import calls
from autograder.grading.identity.sources import KernelSource, Place, Sources
from autograder.grading.judge import secrecy
from autograder.grading.judge.regions import crossed_axes

ADD = assignments.find("add")
HIDDEN = next(c.name for c in ADD.cases if not c.visible)

# The student's kernel (a student's read): the grid is right, the map's axes are swapped.
SWAPPED = '''\
def add(x, y):
    m, n = x.shape
    spec = pl.BlockSpec((BM, BN), lambda i, j: (j, i))
    return pl.pallas_call(
        add_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(m // BM, n // BN),
        in_specs=[spec, spec],
        out_specs=spec,
    )(x, y)
'''


def _sources(text: str, call_line: int) -> Sources:
    lines = text.splitlines()
    got = calls.of_call(calls.parse(text), call_line)
    at = lambda n: Place(f"add.py:{n}", lines[n - 1].strip()) if n else None
    k = KernelSource(f"add.py:{call_line}", "add", "add_kernel", "add.py:1-2", at(call_line), at(got.grid),
                     None, tuple(at(n) for n in got.in_maps), tuple(at(n) for n in got.out_maps),
                     refs=("x_ref", "y_ref", "o_ref"), inputs=2)
    return Sources((k,), file="add.py", text=tuple(lines), where=lambda f, n: f"{f}:{n}")


def _oob(case: str, shape, block, grid, pairs, operand="input 0") -> Finding:
    """The index-map scan's finding (``probes.static``): its first examples, in row-major order."""
    examples = [{"grid_point": p, "block_index": b, "array_shape": list(shape),
                 "element_range": [[i * s, i * s + s] for i, s in zip(b, block)]} for p, b in pairs]
    first = examples[0]
    return Finding.make("out-of-bounds", "static", "...", case=case, check="index-maps", operand=operand,
                        grid_point=first["grid_point"], block_index=first["block_index"],
                        element_range=first["element_range"], array_shape=list(shape), block_shape=list(block),
                        grid=list(grid), examples=examples)


# The tall secret case (M = 264, N = 256; blocks 8 x 128): grid (33, 2) fits the array's
# (33, 2) blocks; the map (j, i) asks grid point (2, 0) for block (0, 2), past N's 2 blocks.
TALL = dict(shape=(264, 256), block=(8, 128), grid=(33, 2),
            pairs=[([2, 0], [0, 2]), ([2, 1], [1, 2]), ([3, 0], [0, 3])])


def test_the_decision_names_the_grid_axis_the_map_sends_to_another_block_axis():
    assert crossed_axes(_oob(HIDDEN, **TALL).facts()) == (0, 1)
    # A grid one step too long (grid_one_step_too_long.py): grid axis 1's own step runs past.
    long = _oob("small", (16, 256), (8, 128), (2, 3), [([0, 2], [0, 2]), ([1, 2], [1, 2])])
    assert crossed_axes(long.facts()) is None and evidence.grid_too_long(long.facts()) == 1
    # The grid's axes swapped (grid_axes_swapped.py: grid (N blocks, M blocks), map (i, j)).
    swapped_grid = _oob(HIDDEN, (264, 256), (8, 128), (2, 33), [([0, 2], [0, 2]), ([0, 3], [0, 3])])
    assert crossed_axes(swapped_grid.facts()) is None and evidence.grid_too_long(swapped_grid.facts()) == 1
    # A crossed map whose grid is also too long along the axis it walks: not the map's fault alone.
    both = _oob(HIDDEN, (264, 256), (8, 128), (34, 2), TALL["pairs"])
    assert crossed_axes(both.facts()) is None
    # One example that happens to match and one that does not: the map is no plain swap.
    mixed = _oob(HIDDEN, (264, 256), (8, 128), (33, 2), [([2, 0], [0, 2]), ([2, 1], [1, 3])])
    assert crossed_axes(mixed.facts()) is None
    # TPU interpret mode's error: one window, the grid from the program (``evidence.with_grid``).
    window = {"element_range": [[0, 8], [256, 384]], "array_shape": [264, 256], "block_index": [0, 2],
              "grid_point": [2, 0], "operand": 'input "x_ref"'}
    assert crossed_axes({"window": window, "grid": [33, 2]}) == (0, 1)
    assert crossed_axes({"window": window}) is None and crossed_axes({"grid": "x"}) is None


def test_the_crossed_map_is_the_index_maps_fault_not_the_grids():
    src = _sources(SWAPPED, 4)
    f = _oob(HIDDEN, **TALL)
    spec = Place("add.py:3", "spec = pl.BlockSpec((BM, BN), lambda i, j: (j, i))")
    assert evidence.fault(f, src) == evidence.Fault("the index map of input 0", spec)
    assert evidence.grid_too_long(f.facts()) is None
    # Blocks the grid never visits on the same case (the swapped map leaves them) do not make it the grid's.
    unvisited = Finding.make("uninitialized-memory", "static", "...", case=HIDDEN, check="index-maps",
                             problem="unwritten-blocks", unwritten_count=62)
    assert evidence.fault(f, src, [unvisited]).place == spec
    # The grid one step too long keeps its grid= line.
    long = _oob("small", (16, 256), (8, 128), (2, 3), [([0, 2], [0, 2])])
    assert evidence.fault(long, src).place == Place("add.py:7", "grid=(m // BM, n // BN),")


def test_a_secret_case_places_and_names_it_in_the_graders_words_alone():
    src = _sources(SWAPPED, 4)
    raw = _oob(HIDDEN, **TALL).with_facts(map_axes="input 0")      # as the static scan marks it
    shown = secrecy.shown(raw)
    assert shown.facts()["map_axes"] == "input 0" and shown.facts()["grid"] is None
    # Where: the map's line, from the kept word alone (every number is withheld).
    assert evidence.fault(shown, src).place.where == "add.py:3"
    got = fixes.fix(shown, ADD, visible=False, sources=src)
    assert got.specific and got.where == "at add.py:3" and got.what == ADD_LINE
    assert not re.search(r"\d", got.what)       # no shape, block count, grid length or axis number
    assert evidence.seen(shown, src, (), visible=False) == ("map-axes", {})
    # The problem's line from every finding of it, none shown: the same words, at the map.
    runtime = secrecy.shown(Finding.make("out-of-bounds", "tpu-interpret", "IndexError", case=HIDDEN,
                                         window={"grid_point": [2, 0]}))
    best = fixes.best([runtime, shown], ADD, shows=lambda f: False, sources=src)
    assert (best.what, best.where) == (ADD_LINE, "at add.py:3")
    # Without the scan's word, a secret finding says nothing of a crossed map.
    plain = secrecy.shown(_oob(HIDDEN, **TALL))
    assert evidence.seen(plain, src, (), visible=False) is None


ADD_LINE = ("the grid fits the array, but the index map puts a grid axis's step on another block axis than the "
            "one that grid axis counts blocks along, so where the array has more blocks along one axis than the "
            "other it asks for blocks past the end: return the block index in the array's axis order (each grid "
            "axis's step on the block axis it counts)")


def test_a_visible_case_says_it_in_its_own_numbers():
    # Case small (M = 16, N = 256) with blocks of 8 x 64: 2 x 4 blocks, grid (2, 4), map (j, i).
    f = _oob("small", (16, 256), (8, 64), (2, 4), [([0, 2], [2, 0]), ([0, 3], [3, 0]), ([1, 2], [2, 1])])
    got = fixes.fix(f, ADD, sources=_sources(SWAPPED, 4))
    assert got.text == (
        "the index map sends grid axis 1 to block axis 0: grid point (0, 2) asks x for block (2, 0) on case "
        "small, but grid axis 1 runs 4 steps, which fit the pl.cdiv(N, 64) = 4 blocks along N, while x has "
        "pl.cdiv(M, 8) = 2 blocks along M: keep the grid and return the block index in the array's axis order "
        "(grid axis 1's step as block index 1) (at add.py:3)")
