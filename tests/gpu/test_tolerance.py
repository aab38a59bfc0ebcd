"""The tolerance table and ``assert_close_ulp``: ULP distances, per-op allowances, and that a
result outside its allowance fails."""

from __future__ import annotations

import numpy as np
import pytest

from refimpl.ops import OPS, OpKind
from gpu.tolerance import GPU_ULP_TOLERANCE, assert_close_ulp, close_mask, ulp_distance


def test_ulp_distance_counts_representable_values():
    one = np.float32(1)
    assert ulp_distance(np.float32([1]), np.float32([1])) == 0
    assert ulp_distance(np.nextafter(one, np.float32(2), dtype=np.float32).reshape(1),
                        np.float32([1])) == 1
    assert ulp_distance(np.float32([-0.0]), np.float32([0.0])) == 0
    tiny = np.finfo(np.float32).smallest_subnormal
    assert ulp_distance(np.float32([tiny]), np.float32([-tiny])) == 2
    assert ulp_distance(np.float16([1]), np.float16([1.001])) == 1


def test_every_op_with_a_kernel_has_a_tolerance_with_a_reason():
    for op in OPS:
        if op.kind in (OpKind.INIT, OpKind.DROP, OpKind.MODULE):
            continue
        assert GPU_ULP_TOLERANCE[op.name].reason


def test_exact_ops_fail_on_one_ulp():
    x = np.float32([1.5])
    with pytest.raises(AssertionError, match="NumericFloat.Add"):
        assert_close_ulp(np.nextafter(x, np.float32(2)), x, "NumericFloat.Add", (x, x))
    with pytest.raises(AssertionError):
        assert_close_ulp(np.int32([3]), np.int32([4]), "NumericInt.Div", ())


def test_exp_allowance_grows_with_the_argument():
    expected = np.float32([np.exp(np.float32(10))])
    off = (expected.view(np.int32) + 20).view(np.float32)  # 20 ULP away
    assert_close_ulp(off, expected, "Float.Exp", (np.float32([10.0]),))  # 3 + 2·10 = 23
    with pytest.raises(AssertionError):
        assert_close_ulp(off, expected, "Float.Exp", (np.float32([1.0]),))  # 3 + 4 + 2 = 9 ULP


def test_sin_is_unchecked_outside_its_domain():
    tol = GPU_ULP_TOLERANCE["Float.Sin"]
    got, want = np.float32([0.5, 0.5]), np.float32([0.0, 0.0])
    mask = close_mask(got, want, tol, (np.float32([1.0, 10.0]),))
    np.testing.assert_array_equal(mask, [False, True])


def test_nan_and_flushed_subnormals_pass():
    nan = np.float32([np.nan])
    assert_close_ulp(nan, nan, "NumericFloat.Add", (nan, nan))
    sub = np.float32([np.finfo(np.float32).smallest_subnormal * 8])
    assert_close_ulp(np.float32([0.0]), sub, "NumericFloat.Mul", (sub, sub))
    with pytest.raises(AssertionError):
        assert_close_ulp(np.float32([1.0]), nan, "NumericFloat.Add", (nan, nan))


def test_rem_accepts_a_quotient_one_step_away():
    x, y = np.float32([6.0]), np.float32([3.0])
    assert_close_ulp(np.float32([3.0]), np.float32([0.0]), "NumericFloat.Rem", (x, y))
    with pytest.raises(AssertionError):
        assert_close_ulp(np.float32([1.0]), np.float32([0.0]), "NumericFloat.Rem", (x, y))
