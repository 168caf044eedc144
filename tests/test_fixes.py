"""Fix lines in the student's own terms (no JAX): the axis, operand, block and
semantics a finding's facts name, and the line of the student's file."""
from autograder import spec
from autograder.feedback import fixes
from autograder.findings import Finding, fix_line
from autograder.grading.identity.sources import KernelSource, of_program

MATMUL = spec.find("matmul")
ADD = spec.find("add")
FLASH = spec.find("flash_attention")
CALL = (KernelSource("k_axis_parallel.py:29", "matmul", "kernel", "k_axis_parallel.py:14-22"),)


def _shared(axis, semantics, grid=(2, 2, 3)):
    return Finding.make("output-block-revisit", "static", "block (0, 0) is written ...", case="f32-256x384x256",
                        check="index-maps", operand="output 0", block_index=[0, 0],
                        grid_points=[[0, 0, 0], [0, 0, 1]], axis=axis, grid=list(grid), kind="parallel-shared",
                        dimension_semantics=list(semantics))


def test_a_k_axis_already_last_needs_only_its_semantics():
    # k_axis_parallel.py: K is grid axis 2, already innermost, marked "parallel".
    f = _shared(2, ("parallel", "parallel", "parallel"))
    assert fixes.fix(f, MATMUL, kernels=CALL).text == (
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
    where = (KernelSource("add.py:14", "add", "kernel", "add.py:9"),)
    assert fixes.fix(_static_oob(), ADD, kernels=where).text == (
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
    body = (KernelSource("fa.py:37", "flash_attention", "flash_attention_kernel", "fa.py:14-29"),)
    assert fixes.fix(n, FLASH, kernels=body).text == FLASH.numerics_hint.rstrip(".") + \
        " (in flash_attention_kernel, fa.py:14-29)"
    # Blocks the grid never visits are the pallas_call's doing, even shown in general terms.
    unwritten = Finding.make("uninitialized-memory", "static", "2 blocks never visited", case=hidden,
                             check="index-maps", operand="output 0", unwritten_count=2, unwritten_blocks=[[3, 0]],
                             block_grid=[4, 2])
    fills = Finding.make("uninitialized-memory", "generic", "changes with the fill", case=hidden, fills_failing=["x"])
    where = (KernelSource("add.py:14", "add", "kernel", "add.py:9"),)
    assert fixes.best([fills, unwritten], ADD, shows=lambda f: False, kernels=where).text == \
        fix_line(fills) + " (in the pl.pallas_call at add.py:14)"
    # Several pallas_calls and a finding that does not say which: no line is named.
    assert fixes.fix(n, FLASH, kernels=body * 2).text == FLASH.numerics_hint.rstrip(".")


def test_the_program_document_names_each_pallas_call_and_its_kernel_lines():
    eqn = lambda p, src, **params: {"p": p, "in": [], "out": [], "params": [[k, v] for k, v in params.items()],
                                    "src": src}
    kernel = {"jaxpr": {"eqns": [eqn("get", 0), eqn("add", 1), eqn("swap", 1)]}}
    doc = {"sources": [["add.py", 9, "kernel"], ["add.py", 11, "kernel"], ["add.py", 14, "add"]],
           "program": {"jaxpr": {"eqns": [eqn("pjit", None, jaxpr={"jaxpr": {"eqns": [
               eqn("pallas_call", 2, jaxpr=kernel)]}})]}}}
    assert of_program(doc, lambda f, line: f"{f}:{line}") == (
        KernelSource("add.py:14", "add", "kernel", "add.py:9-11"),)
    cells = of_program(doc, lambda f, line: f"add.ipynb cell 2, line {line - 7}")
    assert cells[0].call == "add.ipynb cell 2, line 7" and cells[0].lines == "add.ipynb cell 2, line 2-4"
