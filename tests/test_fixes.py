"""Fix lines in the student's own terms (no JAX): the axis, operand, block and
semantics a finding's facts name, and the line of the student's file."""
from dataclasses import replace

from autograder.feedback import fixes
from autograder.findings import Finding, fix_line
from autograder.grading import assignments
from autograder.grading.identity.sources import KernelSource, Place, Sources, of_program

MATMUL = assignments.find("matmul")
ADD = assignments.find("add")
FLASH = assignments.find("flash_attention")
CALL = Sources((KernelSource("k_axis_parallel.py:29", "matmul", "kernel", "k_axis_parallel.py:14-22"),))


def _shared(axis, semantics, grid=(2, 2, 3)):
    return Finding.make("output-block-revisit", "static", "block (0, 0) is written ...", case="f32-256x384x256",
                        check="index-maps", operand="output 0", block_index=[0, 0],
                        grid_points=[[0, 0, 0], [0, 0, 1]], axis=axis, grid=list(grid), kind="parallel-shared",
                        dimension_semantics=list(semantics))


def test_a_k_axis_already_last_needs_only_its_semantics():
    # k_axis_parallel.py: K is grid axis 2, already innermost, marked "parallel".
    f = _shared(2, ("parallel", "parallel", "parallel"))
    assert fixes.fix(f, MATMUL, sources=CALL).text == (
        'grid axis 2 is already last: mark it "arbitrary", dimension_semantics=("parallel", "parallel", '
        '"arbitrary") (in the pl.pallas_call at k_axis_parallel.py:29)')


def test_an_axis_that_is_not_last_is_moved_last_with_its_semantics():
    f = _shared(0, ("parallel", "parallel", "arbitrary"))
    assert fixes.fix(f, MATMUL).text == (
        'make grid axis 0 (the output block stays the same along it) the last grid axis and mark it "arbitrary": '
        'dimension_semantics=("parallel", "arbitrary", "arbitrary"), with the grid\'s order (1, 2, 0) of the axes '
        "and the index maps' arguments reordered to match")
    # Revisited non-consecutively along an axis already "arbitrary" (k_axis_outermost.py): only the order.
    outer = Finding.make("output-block-revisit", "static", "written again", case="f32-256x384x256",
                         check="index-maps", grid=[3, 2, 2], kind="non-consecutive",
                         dimension_semantics=["arbitrary"] * 3, writers=[[0, 0, 0], [1, 0, 0], [2, 0, 0]])
    assert fixes.fix(outer, MATMUL).text.startswith(
        'make grid axis 0 (the output block stays the same along it) the last grid axis (it is "arbitrary" '
        "already) with the grid's order (1, 2, 0)")


def _static_oob(case="small"):
    return Finding.make("out-of-bounds", "static", "input 0 at grid point (0, 2) addresses block (0, 2)",
                        case=case, check="index-maps", operand="input 0", grid_point=[0, 2], block_index=[0, 2],
                        element_range=[[0, 8], [256, 384]], array_shape=[16, 256], block_shape=[8, 128],
                        grid=[2, 3], count=2)


def test_a_grid_one_step_too_long_names_the_axis_the_input_and_its_dimension():
    where = Sources((KernelSource("add.py:14", "add", "kernel", "add.py:9"),))
    assert fixes.fix(_static_oob(), ADD, sources=where).text == (
        "grid axis 1 runs 3 steps on case small, but x has pl.cdiv(N, 128) = 2 blocks along N: make that "
        "axis pl.cdiv(N, 128) long (in the pl.pallas_call at add.py:14)")


def test_the_runtime_error_alone_names_the_block_and_the_index_map():
    window = {"element_range": [[0, 8], [256, 384]], "array_shape": [16, 256], "access": "read",
              "block_index": [0, 2], "grid_point": [0, 2], "operand": 'input "x_ref"'}
    f = Finding.make("out-of-bounds", "tpu-interpret", "IndexError: ...", case="small", window=window)
    assert fixes.fix(f, ADD).text == ('grid point (0, 2) asks input "x_ref" for block 2 along N, which has '
                                 "pl.cdiv(N, 128) = 2 blocks (0 to 1): keep that index map below 2")
    # The problem's line takes the static scan's (it knows the grid) before the runtime error's.
    assert fixes.best([f, _static_oob()], ADD).text.startswith("grid axis 1 runs 3 steps on case small")


def test_a_secret_case_gets_the_general_line_and_numerics_the_assignments_hint():
    hidden = next(c.name for c in ADD.cases if not c.visible)
    f = _static_oob(hidden)
    assert fixes.fix(f, ADD, visible=False) == fixes.Fix(fix_line(f), specific=False)
    n = Finding.make("numerics", "generic", "47791 of 49152 outputs are NaN or Inf", case="logits-f32-b2-s384-d64")
    body = Sources((KernelSource("fa.py:37", "flash_attention", "flash_attention_kernel", "fa.py:14-29"),))
    assert fixes.fix(n, FLASH, sources=body).text == FLASH.numerics_hint.rstrip(".") + \
        " (in flash_attention_kernel, fa.py:14-29)"
    # Blocks the grid never visits are the pallas_call's doing, even shown in general terms.
    unwritten = Finding.make("uninitialized-memory", "static", "2 blocks never visited", case=hidden,
                             check="index-maps", operand="output 0", unwritten_count=2, unwritten_blocks=[[3, 0]],
                             block_grid=[4, 2])
    fills = Finding.make("uninitialized-memory", "generic", "changes with the fill", case=hidden, fills_failing=["x"])
    where = Sources((KernelSource("add.py:14", "add", "kernel", "add.py:9"),))
    assert fixes.best([fills, unwritten], ADD, shows=lambda f: False, sources=where).text == \
        fix_line(fills) + " (in the pl.pallas_call at add.py:14)"
    # Several pallas_calls and a finding that does not say which: no line is named.
    assert fixes.fix(n, FLASH, sources=Sources(body.kernels * 2)).text == FLASH.numerics_hint.rstrip(".")


def test_the_program_document_names_each_pallas_call_and_its_kernel_lines():
    eqn = lambda p, src, **params: {"p": p, "in": [], "out": [], "params": [[k, v] for k, v in params.items()],
                                    "src": src}
    kernel = {"jaxpr": {"eqns": [eqn("get", 0), eqn("add", 1), eqn("swap", 1)]}}
    doc = {"sources": [["add.py", 9, "kernel"], ["add.py", 11, "kernel"], ["add.py", 14, "add"]],
           "program": {"jaxpr": {"eqns": [eqn("pjit", None, jaxpr={"jaxpr": {"eqns": [
               eqn("pallas_call", 2, jaxpr=kernel)]}})]}}}
    assert of_program(doc, lambda f, line: f"{f}:{line}").kernels == (
        KernelSource("add.py:14", "add", "kernel", "add.py:9-11", at=Place("add.py:14")),)
    cells = of_program(doc, lambda f, line: f"add.ipynb cell 2, line {line - 7}").kernels
    assert cells[0].call == "add.ipynb cell 2, line 7" and cells[0].lines == "add.ipynb cell 2, line 2-4"


REVERSED_K = '''\
def matmul(x, y):
    m, kdim = x.shape
    nk = kdim // BK
    return pl.pallas_call(
        matmul_kernel,
        out_shape=jax.ShapeDtypeStruct((m, y.shape[1]), jnp.float32),
        grid=(m // BM, y.shape[1] // BN, nk),
        in_specs=[pl.BlockSpec((BM, BK), lambda i, j, k: (i, nk - k)),
                  pl.BlockSpec((BK, BN), lambda i, j, k: (nk - k, j))],
        out_specs=pl.BlockSpec((BM, BN), lambda i, j, k: (i, j)),
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "parallel")),
    )(x, y)
'''


def _kernel_of(text: str, call_line: int, **more) -> Sources:
    """The places of a file's one pallas_call, as ``of_program`` builds them."""
    from autograder.grading.identity import calls
    lines = text.splitlines()
    got = calls.of_call(calls.parse(text), call_line)
    at = lambda n: Place(f"k.py:{n}", lines[n - 1].strip()) if n else None
    k = KernelSource(f"k.py:{call_line}", "matmul", "kernel", "k.py:1-3", at(call_line), at(got.grid),
                     at(got.semantics), tuple(at(n) for n in got.in_maps), tuple(at(n) for n in got.out_maps),
                     **more)
    return Sources((k,), file="k.py", text=tuple(lines), where=lambda f, n: f"{f}:{n}")


def test_the_fault_is_the_line_that_holds_it_quoted_as_written():
    from autograder.feedback import evidence as faults
    src = _kernel_of(REVERSED_K, 4, refs=("x_ref", "y_ref", "o_ref"), inputs=2)
    # The grid one step too long: its grid= line, not the call's.
    oob = Finding.make("out-of-bounds", "static", "...", case="f32-256x384x256", check="index-maps",
                       operand="input 0", grid_point=[0, 0, 3], block_index=[0, 3], array_shape=[256, 384],
                       element_range=[[0, 128], [384, 512]], block_shape=[128, 128], grid=[2, 2, 4])
    assert faults.fault(oob, src) == faults.Fault("the grid", Place("k.py:7", "grid=(m // BM, y.shape[1] // BN, nk),"))
    # A block past the end from the map itself (nk - k at k = 0): that operand's lambda, by its
    # number or by the ref's name in TPU interpret mode's error.
    reversed_map = oob.with_facts(grid=[2, 2, 3], grid_point=[0, 0, 0])
    lam = Place("k.py:8", "in_specs=[pl.BlockSpec((BM, BK), lambda i, j, k: (i, nk - k)),")
    assert faults.fault(reversed_map, src).place == lam
    window = {"element_range": [[0, 128], [384, 512]], "array_shape": [384, 256], "block_index": [3, 0],
              "grid_point": [0, 0, 0], "operand": 'input "y_ref"'}
    runtime = Finding.make("out-of-bounds", "tpu-interpret", "IndexError", case="f32-256x384x256", window=window)
    assert faults.fault(runtime, src).place.text == "pl.BlockSpec((BK, BN), lambda i, j, k: (nk - k, j))],"
    # A reduction axis marked parallel: its dimension_semantics.
    shared = _shared(2, ("parallel",) * 3)
    assert faults.fault(shared, src).place == Place("k.py:12", 'dimension_semantics=("parallel", "parallel", '
                                                              '"parallel")),')
    assert fixes.fix(shared, MATMUL, sources=src).where == "at k.py:12"
    # The race detector's access names the line; work outside the kernel, its equation's line.
    race = Finding.make("data-race", "tpu-interpret", "...", case="f32-256x384x256", check="races",
                        accesses=[{"access": "read", "where": "k.py:9:11 (kernel)"},
                                  {"access": "write", "where": "k.py:13:5 (kernel)"}])
    assert faults.fault(race, src) == faults.Fault("the racing write", Place("k.py:13", ")(x, y)"))
    outside = Sources((), (("dot_general", Place("k.py:3", "nk = kdim // BK")),), file="k.py")
    work = Finding.make("not-a-kernel", "static", "...", check="structure", outside={"dot_general": 1})
    assert faults.fault(work, outside).place.where == "k.py:3"
    # A file the student did not write, or a line it does not have: nothing quoted.
    assert faults.fault(race.with_facts(accesses=[{"access": "write", "where": "jax/x.py:3:1"}]), src) is None


def test_specs_are_followed_through_names_and_grid_specs():
    from autograder.grading.identity import calls
    text = (ADD.folder / "corpus" / "grid_one_step_too_long.py").read_text()
    got = calls.of_call(calls.parse(text), 14)
    assert (got.grid, got.in_maps, got.out_maps, got.semantics) == (15, (13, 13), (13,), None)
    prefetch = '''\
def add(x, y):
    def index(i, order):
        return (order[i], 0)
    spec = pl.BlockSpec((8, 128), index)
    gs = pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(n,),
                                      in_specs=[spec] * 2, out_specs=spec)
    return pl.pallas_call(kernel, grid_spec=gs, out_shape=x,
                          compiler_params={"mosaic": {"dimension_semantics": ("arbitrary",)}})(o, x, y)
'''
    got = calls.of_call(calls.parse(prefetch), 7)
    assert (got.grid, got.in_maps, got.out_maps, got.semantics) == (5, (3, 3), (3,), 8)
    assert calls.of_call(calls.parse("x = 1\n"), 1) is None and calls.parse("def (") is None


def test_tpu_interpret_modes_error_alone_gets_the_grid_from_the_program():
    # Without the static scan (a replay, a spec without it), the runtime error names the grid
    # point and block; the kernel's own program on that case says how long the grid is.
    src = _kernel_of((ADD.folder / "corpus" / "grid_one_step_too_long.py").read_text(), 14,
                     refs=("x_ref", "y_ref", "o_ref"), inputs=2, grid=(2, 3))
    src = Sources(src.kernels, case="small", file="k.py", text=src.text, where=src.where)
    window = {"element_range": [[0, 8], [256, 384]], "array_shape": [16, 256], "access": "read",
              "block_index": [0, 2], "grid_point": [0, 2], "operand": 'input "x_ref"'}
    f = Finding.make("out-of-bounds", "tpu-interpret", "IndexError: ...", case="small", window=window)
    got = fixes.fix(f, ADD, sources=src)
    assert got.what.startswith("grid axis 1 runs 3 steps on case small") and got.where == "at k.py:15"
    assert got.at.text == "grid=(x.shape[0] // 8, x.shape[1] // 128 + 1),"
    # Another case's error: that grid is not its own, so the map is blamed, as the error says.
    other = Finding.make("out-of-bounds", "tpu-interpret", "IndexError: ...", case="odd-rows", window=window)
    assert fixes.fix(other, ADD, sources=src).what.startswith("grid point (0, 2) asks")


def test_blocks_never_visited_past_a_floor_divided_grid_get_the_cdiv_in_the_students_numbers():
    # 20 rows in blocks of 8, grid (20 // 8,) = (2,): the third row block is never visited.
    short = Finding.make("uninitialized-memory", "static", "1 block never visited", case="rows-20x256",
                         check="index-maps", operand="output 0", unwritten_blocks=[[2, 0]], unwritten_count=1,
                         block_grid=[3, 1], grid=[2], problem="unwritten-blocks", array_shape=[20, 256],
                         block_shape=[8, 256])
    assert fixes.fix(short).what == (
        "grid axis 0 has 2 steps, but output 0 has pl.cdiv(20, 8) = 3 blocks of 8 along dimension 0 (20 elements): "
        "give the grid pl.cdiv(20, 8) steps there, not 20 // 8 = 2")
    # Blocks missing along two axes, or no grid axis as long as what was visited: the count alone.
    two = short.with_facts(unwritten_blocks=[[2, 0], [0, 1]], block_grid=[3, 2])
    assert fixes.fix(two).what.startswith("the grid never visits 1 of the 6 blocks of output 0")
    assert fixes.fix(short.with_facts(grid=[4])).what.startswith("the grid never visits 1 of the 3 blocks")


def test_a_grid_given_by_name_is_placed_at_the_line_that_makes_it():
    # The eighth read's add: ``grid = (M // BM, N // BN)`` then ``grid=grid``: the numbers are on the first.
    from autograder.grading.identity import calls
    text = ("def add(x, y):\n    M, N = x.shape\n    grid = (M // BM, N // BN)\n    return pl.pallas_call(\n"
            "        add_kernel,\n        grid=grid,\n        in_specs=[spec, spec],\n    )(x, y)\n")
    assert calls.of_call(calls.parse(text), 4).grid == 3
    # A grid given as a parameter (nothing assigns it): the keyword's own line.
    param = text.replace("    grid = (M // BM, N // BN)\n", "    pass\n")
    param = param.replace("def add(x, y)", "def add(x, y, grid)")
    assert calls.of_call(calls.parse(param), 4).grid == 6


def test_rows_a_kernel_without_scratch_never_stores_are_its_stores_not_an_accumulator():
    # The ninth read's softmax: ``o_ref[pl.ds(i, SUB), :]`` for ``pl.ds(i * SUB, SUB)``.
    from autograder.feedback import evidence
    store = Place("softmax.py:16", "o_ref[pl.ds(i, SUB), :] = e / s")
    bare = Sources((KernelSource("softmax.py:22", "softmax", "softmax_kernel", "softmax.py:11-18", stores=(store,),
                                 grid=(1,)),), file="softmax.py")
    f = Finding.make("uninitialized-memory", "generic", "2892 change with the fill", case="rows-20x256",
                     check="correctness", never_written=455, first_never=[11, 1], wrong_unwritten=2892, wrong=4863)
    said = fixes.fix(f, assignments.find("softmax"), sources=bare)
    assert said.what == (
        "the kernel never stores 455 of the output's elements (the first at index [11, 1]), and 2892 wrong outputs "
        "change with what fills memory nothing wrote: its stores and reads do not cover the block as they should. "
        "Check each index and slice (a pl.ds start that is not a multiple of its size, a loop bound, a slice that "
        "stops short)")
    assert evidence.fault(f, bare).place == store
    # With a scratch accumulator, memory read before it is written is its reset.
    acc = Sources((replace(bare.kernels[0], scratch_refs=("acc",)),), file="softmax.py")
    assert fixes.fix(f, assignments.find("softmax"), sources=acc).what.startswith(
        "the output is computed from memory nothing wrote first: initialize what you accumulate")
