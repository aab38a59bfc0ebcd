"""Reductions on the GPU against the numpy oracle: per-axis (one invocation per output element)
and full (workgroup tree, one or two launches), on strided inputs; sums within the
reordering bound, everything else exact."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl import ir
from refimpl.dtypes import DType
from refimpl.ops import op_named
from refimpl.semantics import NUMPY_IMPL
from gpu.check.tolerance import assert_close_ulp, product_bound, reduction_bound
from gpu.runtime.unfused import run_op
from tests.gpu.cases import device_input, tensor

CHEAP = settings(max_examples=min(settings().max_examples, 10))
NUMERIC = {DType.F32: "NumericFloat", DType.F16: "NumericFloat", DType.I32: "NumericInt",
           DType.U32: "NumericInt"}
BASE = {DType.F32: "BaseFloat", DType.I32: "BaseInt", DType.BOOL: "BaseBool"}
DIM_VARIANTS = ("SumDim", "MeanDim", "ProdDim", "MaxDim", "MinDim", "MaxAbsDim", "ArgMax",
                "ArgMin")
FULL_VARIANTS = ("Sum", "Mean", "Prod", "Max", "Min", "MaxAbs")


def _values(rng, dtype: DType, shape, variant: str) -> np.ndarray:
    if dtype is DType.BOOL:
        return rng.random(shape) < 0.7
    if dtype.is_float:
        if variant.startswith("Prod"):  # products of many factors near 1 stay finite
            return rng.uniform(0.8, 1.25, size=shape).astype(dtype.numpy)
        values = rng.uniform(-3, 3, size=shape)
        return np.where(rng.random(shape) < 0.2, 0.0, values).astype(dtype.numpy)
    info = np.iinfo(dtype.numpy)
    small = rng.integers(-9 if dtype is DType.I32 else 0, 10, size=shape)
    wide = rng.integers(info.min, info.max, size=shape, endpoint=True)
    return np.where(rng.random(shape) < 0.3, wide, small).astype(dtype.numpy)


def _bound(variant: str, x: np.ndarray, axis: int | None, expected: np.ndarray):
    """Extra absolute allowance for float sums / means / products."""
    if x.dtype.kind != "f":
        return 0.0
    stem = variant.removesuffix("Dim")
    if stem in ("Sum", "Mean"):
        return reduction_bound(x, axis, x.dtype, mean=stem == "Mean")
    if stem == "Prod":
        return product_bound(expected, x.size if axis is None else x.shape[axis])
    return 0.0


def _check(device, op, x, perm, pad, axis):
    env = {op.inputs()[0].id: x}
    expected = NUMPY_IMPL[op.name](op.desc, env)
    source = device_input(device.runtime, x, op.inputs()[0].dtype, perm, pad)
    actual = run_op(device, op, [source])
    assert_close_ulp(actual, expected, op.name, (), _bound(op.op.variant, x, axis, expected))


@pytest.mark.parametrize("dtype", list(NUMERIC), ids=lambda d: d.value)
@pytest.mark.parametrize("variant", DIM_VARIANTS)
@CHEAP
@given(seed=st.integers(0, 2**32 - 1),
       shape=st.tuples(st.integers(1, 4), st.integers(1, 7), st.integers(1, 9)),
       axis=st.integers(0, 2), perm=st.permutations([0, 1, 2]), pad=st.integers(0, 1))
def test_reduce_dim_matches_numpy(gpu_device, variant, dtype, seed, shape, axis, perm, pad):
    if not gpu_device.supports(dtype):
        pytest.skip(f"{dtype.value} unsupported")
    rng = np.random.default_rng(seed)
    out_dtype = DType.I32 if variant.startswith("Arg") else dtype
    out_shape = tuple(1 if d == axis else s for d, s in enumerate(shape))
    op = ir.OperationIr(op_named(f"{NUMERIC[dtype]}.{variant}"),
                        ir.ReduceDimOpIr(tensor(0, shape, dtype),
                                         tensor(9, out_shape, out_dtype, True), axis))
    _check(gpu_device, op, _values(rng, dtype, shape, variant), perm, pad, axis)


@pytest.mark.parametrize("dtype", list(BASE), ids=lambda d: d.value)
@pytest.mark.parametrize("variant", ["AnyDim", "AllDim"])
@CHEAP
@given(seed=st.integers(0, 2**32 - 1),
       shape=st.tuples(st.integers(1, 4), st.integers(1, 5), st.integers(1, 6)),
       axis=st.integers(0, 2), perm=st.permutations([0, 1, 2]))
def test_logical_reduce_dim_matches_numpy(gpu_device, variant, dtype, seed, shape, axis, perm):
    rng = np.random.default_rng(seed)
    out_shape = tuple(1 if d == axis else s for d, s in enumerate(shape))
    op = ir.OperationIr(op_named(f"{BASE[dtype]}.{variant}"),
                        ir.ReduceDimOpIr(tensor(0, shape, dtype),
                                         tensor(9, out_shape, DType.BOOL, True), axis))
    _check(gpu_device, op, _values(rng, dtype, shape, variant), perm, 0, axis)


@pytest.mark.parametrize("dtype", list(NUMERIC), ids=lambda d: d.value)
@pytest.mark.parametrize("variant", FULL_VARIANTS)
@CHEAP
@given(seed=st.integers(0, 2**32 - 1),
       shape=st.sampled_from([(1, 1, 1), (2, 3, 5), (3, 17, 29), (4, 33, 70)]),
       perm=st.permutations([0, 1, 2]), pad=st.integers(0, 1))
def test_reduce_full_matches_numpy(gpu_device, variant, dtype, seed, shape, perm, pad):
    """Sizes on both sides of one workgroup's share (256 × 4): one and two launches."""
    if not gpu_device.supports(dtype):
        pytest.skip(f"{dtype.value} unsupported")
    rng = np.random.default_rng(seed)
    op = ir.OperationIr(op_named(f"{NUMERIC[dtype]}.{variant}"),
                        ir.UnaryOpIr(tensor(0, shape, dtype), tensor(9, (1,), dtype, True)))
    _check(gpu_device, op, _values(rng, dtype, shape, variant), perm, pad, None)


@pytest.mark.parametrize("dtype", list(BASE), ids=lambda d: d.value)
@pytest.mark.parametrize("variant", ["Any", "All"])
@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 17, 29), (4, 33, 70)])
def test_logical_reduce_full_matches_numpy(gpu_device, variant, dtype, shape):
    rng = np.random.default_rng(7)
    op = ir.OperationIr(op_named(f"{BASE[dtype]}.{variant}"),
                        ir.UnaryOpIr(tensor(0, shape, dtype), tensor(9, (1,), DType.BOOL, True)))
    for fill in (None, 0, 1):
        x = _values(rng, dtype, shape, variant)
        x = x if fill is None else np.full(shape, fill).astype(x.dtype)
        _check(gpu_device, op, x, [0, 1, 2], 0, None)


def test_reduce_empty_axis_gives_identity(gpu_device):
    """An empty axis: Sum 0, Max the runtime identity −inf (no inf literal in WGSL)."""
    for variant, expected in (("SumDim", 0.0), ("MaxDim", -np.inf), ("MinDim", np.inf)):
        op = ir.OperationIr(op_named(f"NumericFloat.{variant}"),
                            ir.ReduceDimOpIr(tensor(0, (3, 0), DType.F32),
                                             tensor(9, (3, 1), DType.F32, True), 1))
        actual = run_op(gpu_device, op, [np.zeros((3, 0), np.float32)])
        np.testing.assert_array_equal(actual, np.full((3, 1), expected, np.float32))


def test_argmax_first_index_wins_ties(gpu_device):
    x = np.array([[1, 3, 3, 0], [2, 2, 2, 2]], dtype=np.float32)
    for variant, expected in (("ArgMax", [[1], [0]]), ("ArgMin", [[3], [0]])):
        op = ir.OperationIr(op_named(f"NumericFloat.{variant}"),
                            ir.ReduceDimOpIr(tensor(0, x.shape, DType.F32),
                                             tensor(9, (2, 1), DType.I32, True), 1))
        np.testing.assert_array_equal(run_op(gpu_device, op, [x]), expected)
