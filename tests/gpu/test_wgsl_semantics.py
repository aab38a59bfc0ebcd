"""Where WGSL and numpy differ, the kernels follow the oracle (docs/wgsl-semantics.md):
integer division and remainder by zero and with negative operands, INT_MIN / -1, shift
counts, saturating float → int conversion, pow's special bases, and non-finite values that
enter as runtime data (checked by bit pattern)."""

from __future__ import annotations

import numpy as np
import pytest

from refimpl import ir
from refimpl.dtypes import DType
from refimpl.ops import op_named
from refimpl.semantics import NUMPY_IMPL
from gpu.runtime.unfused import run_op
from tests.gpu.cases import tensor

I32_MIN = np.iinfo(np.int32).min


def _binary(gpu_device, name, lhs, rhs, out_dtype=None):
    dtype = DType.I32 if lhs.dtype == np.int32 else (
        DType.U32 if lhs.dtype == np.uint32 else DType.F32)
    out = out_dtype or dtype
    op = ir.OperationIr(op_named(name), ir.BinaryOpIr(tensor(0, lhs.shape, dtype),
                                                      tensor(1, rhs.shape, dtype),
                                                      tensor(2, lhs.shape, out, True)))
    expected = NUMPY_IMPL[name](op.desc, {0: lhs, 1: rhs})
    return run_op(gpu_device, op, [lhs, rhs]), expected


def _unary(gpu_device, name, x, in_dtype, out_dtype):
    op = ir.OperationIr(op_named(name), ir.UnaryOpIr(tensor(0, x.shape, in_dtype),
                                                     tensor(1, x.shape, out_dtype, True)))
    expected = NUMPY_IMPL[name](op.desc, {0: x})
    return run_op(gpu_device, op, [x]), expected


def test_int_division_truncates_and_keeps_x_over_zero(gpu_device):
    a = np.array([7, -7, 7, -7, I32_MIN, I32_MIN, 0, 5], dtype=np.int32)
    b = np.array([0, 0, 2, 2, -1, 0, 0, -3], dtype=np.int32)
    actual, expected = _binary(gpu_device, "NumericInt.Div", a, b)
    np.testing.assert_array_equal(actual, [7, -7, 3, -3, I32_MIN, I32_MIN, 0, -1])
    np.testing.assert_array_equal(actual, expected)


def test_int_remainder_is_floor_modulo_and_zero_by_zero(gpu_device):
    a = np.array([-7, 7, -1, 7, -7, I32_MIN, 9, -9], dtype=np.int32)
    b = np.array([2, -2, 5, 0, 0, -1, 3, -3], dtype=np.int32)
    actual, expected = _binary(gpu_device, "NumericInt.Rem", a, b)
    np.testing.assert_array_equal(actual, [1, -1, 4, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(actual, expected)


def test_unsigned_division_and_remainder_by_zero(gpu_device):
    a = np.array([7, 0, 4294967295, 10], dtype=np.uint32)
    b = np.array([0, 0, 2, 3], dtype=np.uint32)
    div, div_expected = _binary(gpu_device, "NumericInt.Div", a, b)
    rem, rem_expected = _binary(gpu_device, "NumericInt.Rem", a, b)
    np.testing.assert_array_equal(div, [7, 0, 2147483647, 3])
    np.testing.assert_array_equal(rem, [0, 0, 1, 1])
    np.testing.assert_array_equal(div, div_expected)
    np.testing.assert_array_equal(rem, rem_expected)


def test_scalar_division_by_a_runtime_zero(gpu_device):
    x = np.array([5, -5, I32_MIN], dtype=np.int32)
    for name, expected in (("NumericInt.DivScalar", x), ("NumericInt.RemScalar", 0 * x)):
        op = ir.OperationIr(op_named(name), ir.ScalarOpIr(tensor(0, (3,), DType.I32), 0,
                                                          tensor(1, (3,), DType.I32, True)))
        np.testing.assert_array_equal(run_op(gpu_device, op, [x]), expected)


def test_shift_counts_wrap_modulo_the_width(gpu_device):
    x = np.array([1, 1, -8, -8, 3], dtype=np.int32)
    n = np.array([33, -1, 1, 33, 32], dtype=np.int32)
    left, left_expected = _binary(gpu_device, "Int.BitwiseLeftShift", x, n)
    right, right_expected = _binary(gpu_device, "Int.BitwiseRightShift", x, n)
    np.testing.assert_array_equal(left, [2, I32_MIN, -16, -16, 3])
    np.testing.assert_array_equal(right, [0, 0, -4, -4, 3])  # arithmetic shift
    np.testing.assert_array_equal(left, left_expected)
    np.testing.assert_array_equal(right, right_expected)


@pytest.mark.parametrize("out, expected", [
    (DType.I32, [2147483647, I32_MIN, 2, -2, 0, 0]),
    (DType.U32, [3000000000, 0, 2, 0, 0, 0]),
])
def test_float_to_int_saturates_and_maps_nan_to_zero(gpu_device, out, expected):
    x = np.array([3e9, -3e9, 2.75, -2.75, np.nan, -0.5], dtype=np.float32)
    actual, oracle = _unary(gpu_device, "Float.IntoInt", x, DType.F32, out)
    np.testing.assert_array_equal(actual, np.array(expected, dtype=out.numpy))
    np.testing.assert_array_equal(actual, oracle)


def test_powf_integer_exponents_and_zero_base(gpu_device):
    b = np.array([0, 0, -2, -2, 4, -3, 2.5, 0], dtype=np.float32)
    e = np.array([0, 2, 3, 2, 0.5, 0, -2, 0.5], dtype=np.float32)
    actual, expected = _binary(gpu_device, "Float.Powf", b, e)
    np.testing.assert_allclose(actual, [1, 0, -8, 4, 2, 1, 0.16, 0], rtol=1e-6)
    np.testing.assert_allclose(actual, expected, rtol=1e-6)


def _bits(values: np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def test_non_finite_inputs_are_tested_by_bit_pattern(gpu_device):
    x = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, 1.0, 3.4e38], dtype=np.float32)
    is_nan, _ = _unary(gpu_device, "Float.IsNan", x, DType.F32, DType.BOOL)
    is_inf, _ = _unary(gpu_device, "Float.IsInf", x, DType.F32, DType.BOOL)
    np.testing.assert_array_equal(is_nan, np.isnan(x))
    np.testing.assert_array_equal(is_inf, np.isinf(x))


@pytest.mark.parametrize("value", [float("-inf"), float("inf"), float("nan")])
def test_non_finite_scalars_travel_as_runtime_data(gpu_device, value):
    """MaskFill(-inf) (attention masks) and Full(NaN): the exact bits arrive."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    mask = np.array([[True, False, True], [False, False, True]])
    fill = ir.OperationIr(op_named("BaseFloat.MaskFill"),
                          ir.MaskFillOpIr(tensor(0, (2, 3), DType.F32),
                                          tensor(1, (2, 3), DType.BOOL), value,
                                          tensor(2, (2, 3), DType.F32, True)))
    got = run_op(gpu_device, fill, [x, mask])
    np.testing.assert_array_equal(_bits(got), _bits(np.where(mask, np.float32(value), x)))
    full = ir.OperationIr(op_named("NumericFloat.Full"),
                          ir.FullOpIr(tensor(0, (4,), DType.F32, True), value))
    np.testing.assert_array_equal(_bits(run_op(gpu_device, full, [])),
                                  _bits(np.full(4, value, np.float32)))


def test_copies_keep_nan_payloads(gpu_device):
    """Movement kernels move bits (u32), never values: NaN payloads survive."""
    bits = np.array([0x7FC00001, 0xFFC00002, 0x7F800000, 0x00000001], dtype=np.uint32)
    x = bits.view(np.float32).reshape(2, 2)
    op = ir.OperationIr(op_named("BaseFloat.SwapDims"),
                        ir.SwapDimsOpIr(tensor(0, (2, 2), DType.F32),
                                        tensor(1, (2, 2), DType.F32, True), 0, 1))
    np.testing.assert_array_equal(_bits(run_op(gpu_device, op, [x])), _bits(x.T))
