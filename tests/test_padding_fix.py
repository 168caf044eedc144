"""The padding of an input's partial block (padding-dependence, problem input-padding):
the line that holds the fault (the block spec of the input whose last block sticks
out) and the fix in the case's own numbers, chosen from the finding's facts alone
(no JAX). A secret case's finding gets the grader's general words only."""
from autograder.feedback import evidence, fixes
from autograder.findings import CATALOGUE, Finding, fix_line
from autograder.grading import assignments
from autograder.grading.identity.sources import KernelSource, Place, Sources
from autograder.grading.judge import secrecy
from autograder.grading.probes.unwritten import _stepping_axis

MATMUL = assignments.find("matmul")
X_SPEC = Place("matmul.py:33", "in_specs=[pl.BlockSpec((BM, BK), lambda i, j, k: (i, k)),")
Y_SPEC = Place("matmul.py:34", "pl.BlockSpec((BK, BN), lambda i, j, k: (k, j))],")
KERNEL = Sources((KernelSource("matmul.py:29", "matmul", "matmul_kernel", "matmul.py:12-20",
                               in_maps=(X_SPEC, Y_SPEC), refs=("x_ref", "y_ref", "o_ref"), inputs=2),))
# What unwritten._partial_inputs records for BK = 256 at K = 384 (grid (2, 2, 2), K "arbitrary").
X = {"operand": "input 0", "axes": [1], "array_shape": [256, 384], "block_shape": [128, 256], "grid_axes": [2],
     "name": "x", "dims": ["M", "K"], "multiple_of": [128, 128]}
Y = {"operand": "input 1", "axes": [0], "array_shape": [384, 256], "block_shape": [256, 128], "grid_axes": [2],
     "name": "y", "dims": ["K", "N"], "multiple_of": [128, 128]}


def _padded(*inputs, case="f32-256x384x256", problem="input-padding"):
    return Finding.make("padding-dependence", "generic", "the output depends on the padding ...", case=case,
                        problem=problem, own_case=True, differing=65536, total=65536, wrong=65536,
                        wrong_padded=65536, partial_inputs=list(inputs))


def test_both_operands_padded_along_k_name_the_block_the_padding_and_a_block_that_divides_k():
    f = _padded(X, Y)
    fault = evidence.fault(f, KERNEL)
    assert fault is not None and fault.place == X_SPEC and fault.what == "the block spec of input 0"
    fix = fixes.fix(f, MATMUL, sources=KERNEL)
    assert fix.specific and fix.at == X_SPEC and fix.where == "at matmul.py:33"
    assert fix.what == (
        "blocks of 256 along dimension 1 of x and dimension 0 of y (K = 384) leave a last block of 128 real "
        "elements and 128 of padding, which the reduction adds in: mask the padding of both, since 0 times NaN "
        "padding is still NaN (jnp.where(pl.program_id(2) * 256 + iota < 384, block, 0), iota a "
        "lax.broadcasted_iota along that dimension), or use a block that divides 384 (e.g. 128, which divides "
        "every K the handout allows)")


def test_one_operand_without_the_handouts_names_says_input_and_size_and_no_guessed_grid_axis():
    # K = 640 in blocks of 512: one block of 512 real elements and a last of 128 real, 384 padding;
    # no grid axis singled out (two axes as long as its blocks), and no rule on K's sizes.
    x = {"operand": "input 0", "axes": [1], "array_shape": [256, 640], "block_shape": [128, 512],
         "grid_axes": [None]}
    key, values = evidence.seen(_padded(x), KERNEL)
    assert key == "partial-input-block"
    assert CATALOGUE["padding-dependence"].fix_seen(key, values) == (
        "blocks of 512 along dimension 1 of input 0 (640 elements) leave a last block of 128 real elements and "
        "384 of padding, which the reduction adds in: mask the padding (jnp.where(the block's index * 512 + "
        "iota < 640, block, 0), iota a lax.broadcasted_iota along that dimension), or use a block that divides "
        "640 (e.g. 128)")


def test_only_inputs_padded_alike_are_named_together():
    # y's partial blocks have another block size: the fix speaks of x's alone (its line and numbers).
    y = {**Y, "block_shape": [512, 128], "array_shape": [640, 256]}
    _key, values = evidence.seen(_padded(X, y), KERNEL)
    assert values["along"] == "dimension 1 of x" and values["both"] == "" and values["size"] == 384


def test_a_secret_cases_finding_gets_the_general_line_at_the_kernel():
    secret = next(c.name for c in MATMUL.cases if c.secret)
    shown = secrecy.shown(_padded(X, Y, case=secret))
    assert shown.facts()["partial_inputs"] is None        # withheld: it names the secret K
    assert evidence.seen(shown, KERNEL) is None and evidence.seen(_padded(X, Y), KERNEL, visible=False) is None
    assert evidence.fault(shown, KERNEL) is None
    fix = fixes.fix(shown, MATMUL, visible=False, sources=KERNEL)
    assert not fix.specific and fix.what == fix_line(shown) and fix.where == "in matmul_kernel, matmul.py:12-20"
    assert "384" not in fix.text


def test_padding_of_the_outputs_own_blocks_or_facts_that_do_not_say_keep_the_general_line():
    softmax_like = Finding.make("padding-dependence", "tpu-interpret", "the output changes ...", case="c",
                                fills_passing=["fill-2"], fills_failing=["fill-1"], differing=4, total=80)
    assert evidence.seen(softmax_like, KERNEL) is None and evidence.fault(softmax_like, KERNEL) is None
    for broken in ([{"operand": "input 0", "axes": [5], "array_shape": [8], "block_shape": [16]}],
                   [{"operand": "input 0", "axes": "1"}], ["input 0"], []):
        f = _padded(*broken)
        assert evidence.seen(f, KERNEL) is None and evidence.fault(f, KERNEL) is None


def test_the_grid_axis_is_named_only_when_one_axis_steps_through_the_blocks():
    assert _stepping_axis((2, 2, 2), ("parallel", "parallel", "arbitrary"), 384, 256) == 2
    assert _stepping_axis((2, 2, 3), (), 384, 128) == 2
    assert _stepping_axis((2, 2, 2), (), 384, 256) is None          # three axes of 2: no guess
    assert _stepping_axis((2,), (), 384, 512) is None               # one block: nothing steps along it
