"""Narrowing a float past the target dtype's range gives ±inf (IEEE) without a numpy warning:
a scalar of 1e10 for an f16 kernel is ``inf``, and the GPU backend, which converts scalars
outside the eager oracle's ``errstate``, prints nothing."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from refimpl.dtypes import DType
from refimpl.semantics import convert, scalar_value


@pytest.mark.parametrize("value", [1e10, -1e10, 1e300])
def test_scalar_beyond_f16_is_inf_and_quiet(value):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = scalar_value(value, DType.F16)
    assert got.dtype == np.float16 and got == np.float16(np.inf) * np.sign(value)


def test_tensor_narrowing_is_quiet_and_keeps_finite_values():
    values = np.array([1e39, -1e39, 1.5, np.nan])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = convert(values, DType.F32)
        from_int = convert(np.array([10**10], dtype=np.int64), DType.F16)
    assert got.dtype == np.float32 and list(got[:3]) == [np.inf, -np.inf, 1.5]
    assert np.isnan(got[3]) and np.isposinf(from_int).all()
