"""Matmul on the GPU against the numpy oracle: batched, broadcast batch dims, transposed and
padded operands; floats within the reordered-sum bound, ints exact (wrapping)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl import ir
from refimpl.dtypes import DType
from refimpl.ops import op_named
from refimpl.semantics import NUMPY_IMPL
from gpu.check.tolerance import assert_close_ulp, matmul_bound
from gpu.runtime.unfused import run_op
from tests.gpu.cases import device_input, tensor

CHEAP = settings(max_examples=min(settings().max_examples, 12))
OPS = {DType.F32: "Float.Matmul", DType.F16: "Float.Matmul", DType.I32: "Int.Matmul",
       DType.U32: "Int.Matmul"}


@pytest.mark.parametrize("dtype", list(OPS), ids=lambda d: d.value)
@CHEAP
@given(seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 3), lhs_b1=st.booleans(),
       m=st.integers(1, 9), k=st.integers(1, 17), n=st.integers(1, 9),
       perm_l=st.permutations([0, 1, 2]), perm_r=st.permutations([0, 1, 2]),
       pad=st.integers(0, 1))
def test_matmul_matches_numpy(gpu_device, dtype, seed, batch, lhs_b1, m, k, n, perm_l, perm_r,
                              pad):
    if not gpu_device.supports(dtype):
        pytest.skip(f"{dtype.value} unsupported")
    rng = np.random.default_rng(seed)
    lhs_shape = (1 if lhs_b1 else batch, m, k)
    rhs_shape = (batch, k, n)
    if dtype.is_float:
        lhs = rng.uniform(-2, 2, lhs_shape).astype(dtype.numpy)
        rhs = rng.uniform(-2, 2, rhs_shape).astype(dtype.numpy)
    else:
        info = np.iinfo(dtype.numpy)
        lhs = rng.integers(info.min, info.max, lhs_shape, endpoint=True).astype(dtype.numpy)
        rhs = rng.integers(info.min, info.max, rhs_shape, endpoint=True).astype(dtype.numpy)
    op = ir.OperationIr(op_named(OPS[dtype]),
                        ir.BinaryOpIr(tensor(0, lhs_shape, dtype), tensor(1, rhs_shape, dtype),
                                      tensor(9, (batch, m, n), dtype, True)))
    expected = NUMPY_IMPL[op.name](op.desc, {0: lhs, 1: rhs})
    rt = gpu_device.runtime
    actual = run_op(gpu_device, op, [device_input(rt, lhs, dtype, perm_l, pad),
                                     device_input(rt, rhs, dtype, perm_r, pad)])
    bound = matmul_bound(np.abs(lhs.astype(np.float64)), np.abs(rhs.astype(np.float64)),
                         dtype.numpy) if dtype.is_float else 0.0
    assert_close_ulp(actual, expected, op.name, (), bound)
