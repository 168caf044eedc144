"""Comparison with the float64 reference (numpy only)."""
import math

import numpy as np
import pytest

from autograder.grading.judge.compare import compare, scaled_rows
from autograder.spec import Tolerance

TOL = Tolerance(rtol=1e-5, atol=1e-5)


def test_exact_match_is_ok():
    ref = np.arange(12.0).reshape(3, 4)
    c = compare(ref.astype(np.float32), ref, TOL, 1, 0.05)
    assert c.ok and c.verdict == "ok" and c.mismatches == 0


def test_nan_never_matches_even_nan():
    ref = np.array([1.0, np.nan])
    c = compare(np.array([1.0, np.nan], np.float32), ref, TOL, 1, 0.05)
    assert not c.ok and c.mismatches == 1


def test_logic_error_is_wrong_result_with_indices():
    ref = np.ones((4, 4))
    out = ref.copy()
    out[2, 3] = 5.0
    c = compare(out, ref, TOL, 1, 0.05)
    assert c.verdict == "wrong-result" and c.first_mismatches == ((2, 3),)
    assert math.isclose(c.max_abs_error, 4.0)


def test_small_relative_error_is_numerics_and_nonfinite_is_numerics():
    rng = np.random.default_rng(0)
    ref = rng.standard_normal((64, 64)) * 10
    c = compare(ref * (1 + 3e-3), ref, TOL, 1, 0.05)
    assert c.verdict == "numerics"
    out = ref.copy()
    out[0, 0] = np.inf
    c = compare(out, ref, TOL, 1, 0.05)
    assert c.verdict == "numerics" and c.nonfinite == 1


def test_atol_grows_with_sqrt_of_reduction_length():
    ref = np.zeros(4)
    out = np.full(4, 1.5e-4)
    assert not compare(out, ref, TOL, 1, 0.05).ok
    assert compare(out, ref, TOL, 400, 0.05).ok   # atol 1e-5 * 20 = 2e-4


def test_nan_beside_far_off_finite_outputs_is_a_logic_error():
    ref = np.ones((16, 8))
    out = np.full((16, 8), 0.125)          # every finite output off by 87%
    out[12:] = np.nan                       # e.g. padding rows pulled into a wrong-axis sum
    c = compare(out, ref, TOL, 1, 0.05)
    assert c.verdict == "wrong-result" and c.nonfinite == 32 and math.isclose(c.finite_relative, 0.875)
    # NaN beside finite outputs that are right stays a precision problem (overflow).
    out = ref.copy()
    out[12:] = np.nan
    assert compare(out, ref, TOL, 1, 0.05).verdict == "numerics"
    # All NaN (an accumulator never zeroed): nothing finite to judge, numerics here.
    assert compare(np.full((4, 4), np.nan), np.ones((4, 4)), TOL, 1, 0.05).verdict == "numerics"


# ---- rows that are the right rows times one number --------------------------------------

def _rows(seed=0):
    ref = np.random.default_rng(seed).standard_normal((2, 6, 16))
    return ref, ref * np.linspace(0.3, 0.9, 6)[None, :, None]


def test_rows_that_are_the_right_rows_scaled_are_named_with_their_numbers():
    ref, out = _rows()
    out[:, 0] = ref[:, 0]                     # one row right: not counted
    got = scaled_rows(out, ref, TOL, 1)
    assert got is not None and (got["rows"], got["of"]) == (10, 12)
    assert got["low"] == pytest.approx(0.42) and got["high"] == pytest.approx(0.9)


@pytest.mark.parametrize("spoil", ["one-element", "nan", "narrow", "zero-row"])
def test_a_row_wrong_any_other_way_rules_the_pattern_out(spoil):
    ref, out = _rows(1)
    if spoil == "one-element":                # one wrong row is not a multiple of its right row
        out[1, 2, 3] += 0.5
    elif spoil == "nan":
        out[0, 1, 0] = np.nan
    elif spoil == "narrow":                   # rows of 2: any row is some multiple of another
        ref, out = ref[..., :2], out[..., :2]
    else:                                     # a right row of zeros has no multiple to name
        ref[0, 3] = 0.0
        out[0, 3] = 1.0
    assert scaled_rows(out, ref, TOL, 1) is None


def test_an_error_far_past_the_output_is_said_as_a_multiple_not_a_percentage():
    from autograder.grading.judge.figures import of_output, pct
    assert of_output(0.0047) == "0.47% of the output's magnitude"
    assert of_output(2.4e29) == "2.4e+29 times the output's magnitude"     # (was "2.4e+31%")
    assert pct(0.5) == "50%" and pct(9.9) == "990%" and pct(12) == "12 times"
