"""What the GPU does with NaN, ±inf and signed zeros where the oracle differs: the documented
non-finite class (docs/wgsl-semantics.md §1). WGSL lets implementations assume that no NaN or
infinity exists, so these are not bugs to fix but behaviours to know about.

Each case runs a small stream through the planned GPU executor and checks that
``gpu.check.agreement.compare`` classes every element with a NaN or an infinity on its chain as
non-finite (counted, never failed) and checks the others. On lavapipe it also pins what the
GPU returns, as measured, next to the oracle's value; other adapters may return either.
"""

from __future__ import annotations

import numpy as np
import pytest

from refimpl.dtypes import DType
from refimpl.interpreter import Interpreter, executed_steps
from refimpl.strategies.builder import StreamBuilder
from gpu.check.agreement import compare

pytestmark = pytest.mark.gpu

NAN, INF = float("nan"), float("inf")
F32, BOOL, I32 = DType.F32, DType.BOOL, DType.I32
# Rows: a NaN first, in the middle, last; ±inf with a NaN; no NaN (checked exactly).
ROWS = [[NAN, 1.0, 3.0, 2.0], [1.0, NAN, 3.0, 2.0], [1.0, 3.0, 2.0, NAN],
        [-INF, INF, NAN, 0.0], [1.0, 5.0, 2.0, 5.0]]


def _lavapipe(device) -> bool:
    return device.name.startswith("llvmpipe")


def _run(device, builder: StreamBuilder, *outs: int):
    """Sync ``outs``, run on the GPU and the interpreter; (oracle, GPU, agreement per id)."""
    builder.sync(outs)
    stream = builder.build()
    profile, executed = executed_steps(stream, device.profile())
    from gpu.runtime.executor import GpuExecutor

    expected = Interpreter(stream, profile).run(executed)
    got = GpuExecutor(stream, device, profile).run(executed)
    agreement = compare(stream, expected, got, nonfinite=True)
    assert agreement.ok, agreement.summary()
    return expected, got, {t.tensor: t for t in agreement.tensors}


def _bits(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def _input(builder: StreamBuilder, data) -> int:
    values = np.asarray(data, dtype=np.float64)
    return builder.add_input(values.shape, F32, data=values.tolist())


def test_not_equal_with_a_nan_is_false(gpu_device):
    """``x != x`` is no NaN test on the GPU (use ``IsNan``, which tests the bits)."""
    b = StreamBuilder()
    x = _input(b, [NAN, 1.0, NAN, 2.0, -INF])
    y = _input(b, [1.0, NAN, NAN, 2.0, -INF])
    pair = b.op("BaseFloat.NotEqual", (5,), BOOL, lhs=x, rhs=y)
    self_ = b.op("BaseFloat.NotEqual", (5,), BOOL, lhs=x, rhs=x)
    expected, got, agree = _run(gpu_device, b, pair, self_)
    np.testing.assert_array_equal(expected[pair], [True, True, True, False, False])
    np.testing.assert_array_equal(expected[self_], [True, False, True, False, False])
    assert agree[pair].nonfinite == 4 and agree[self_].nonfinite == 3
    if _lavapipe(gpu_device):
        np.testing.assert_array_equal(got[pair], [False] * 5)
        np.testing.assert_array_equal(got[self_], [False] * 5)


def test_any_dim_over_a_nan_test_by_not_equal(gpu_device):
    b = StreamBuilder()
    x = _input(b, [[NAN, 1.0, 2.0], [3.0, 4.0, 5.0]])
    mask = b.op("BaseFloat.NotEqual", (2, 3), BOOL, lhs=x, rhs=x)
    anyd = b.op("BaseBool.AnyDim", (2, 1), BOOL, input=mask, axis=1)
    expected, got, agree = _run(gpu_device, b, anyd)
    np.testing.assert_array_equal(expected[anyd], [[True], [False]])
    assert agree[anyd].nonfinite == 1 and agree[anyd].elements == 2
    if _lavapipe(gpu_device):
        np.testing.assert_array_equal(got[anyd], [[False], [False]])


def test_sign_of_zero_is_negative_zero(gpu_device):
    """``Sign(±0.0) = -0.0`` (equal to the oracle's ``+0.0`` by value, so checked and
    passing; WGSL lets implementations ignore the sign of a zero); ``Sign(NaN) = -0.0``."""
    b = StreamBuilder()
    x = _input(b, [0.0, -0.0, 2.0, -3.0, INF, NAN])
    sign = b.op("NumericFloat.Sign", (6,), F32, input=x)
    expected, got, agree = _run(gpu_device, b, sign)
    np.testing.assert_array_equal(_bits(expected[sign]), _bits([0.0, 0.0, 1.0, -1.0, 1.0, NAN]))
    assert agree[sign].nonfinite == 2  # inf and NaN; the zeros are checked
    if _lavapipe(gpu_device):
        np.testing.assert_array_equal(_bits(got[sign]),
                                      _bits([-0.0, -0.0, 1.0, -1.0, 1.0, -0.0]))


def test_argmax_argmin_with_a_nan_in_the_axis(gpu_device):
    """The oracle's NaN is the extreme; lavapipe's kernel never moves off a NaN in front and
    skips any other (strict comparisons against the best so far are false)."""
    b = StreamBuilder()
    m = _input(b, ROWS)
    amax = b.op("NumericFloat.ArgMax", (5, 1), I32, input=m, axis=1)
    amin = b.op("NumericFloat.ArgMin", (5, 1), I32, input=m, axis=1)
    expected, got, agree = _run(gpu_device, b, amax, amin)
    np.testing.assert_array_equal(expected[amax].ravel(), [0, 1, 3, 2, 1])
    np.testing.assert_array_equal(expected[amin].ravel(), [0, 1, 3, 2, 0])
    assert agree[amax].nonfinite == agree[amin].nonfinite == 4  # the last row is checked
    if _lavapipe(gpu_device):
        np.testing.assert_array_equal(got[amax].ravel(), [0, 2, 1, 1, 1])
        np.testing.assert_array_equal(got[amin].ravel(), [0, 0, 0, 0, 0])


def test_clamp_of_nan_gives_the_bound(gpu_device):
    """``min(max(NaN, lo), hi)``: ``max`` drops the NaN, so ``Clamp(NaN) = lo``,
    ``ClampMin(NaN) = min``, ``ClampMax(NaN) = max`` (the oracle: NaN)."""
    b = StreamBuilder()
    x = _input(b, [NAN, 0.5, 5.0, -5.0, INF])
    clamp = b.op("NumericFloat.Clamp", (5,), F32, tensor=x, min=-1.0, max=1.0)
    low = b.op("NumericFloat.ClampMin", (5,), F32, lhs=x, rhs=-1.0)
    high = b.op("NumericFloat.ClampMax", (5,), F32, lhs=x, rhs=1.0)
    expected, got, agree = _run(gpu_device, b, clamp, low, high)
    np.testing.assert_array_equal(expected[clamp], [NAN, 0.5, 1.0, -1.0, 1.0])
    assert all(agree[t].nonfinite == 2 for t in (clamp, low, high))
    if _lavapipe(gpu_device):
        np.testing.assert_array_equal(got[clamp], [-1.0, 0.5, 1.0, -1.0, 1.0])
        np.testing.assert_array_equal(got[low], [-1.0, 0.5, 5.0, -1.0, INF])
        np.testing.assert_array_equal(got[high], [1.0, 0.5, 1.0, -5.0, 1.0])


def test_max_min_reductions_drop_nan(gpu_device):
    """The oracle's ``Max``/``Min`` propagate NaN; the GPU's ``max``/``min`` drop it."""
    b = StreamBuilder()
    m = _input(b, ROWS)
    maxd = b.op("NumericFloat.MaxDim", (5, 1), F32, input=m, axis=1)
    mind = b.op("NumericFloat.MinDim", (5, 1), F32, input=m, axis=1)
    full_max = b.op("NumericFloat.Max", (1,), F32, input=m)
    full_min = b.op("NumericFloat.Min", (1,), F32, input=m)
    expected, got, agree = _run(gpu_device, b, maxd, mind, full_max, full_min)
    np.testing.assert_array_equal(expected[maxd].ravel(), [NAN, NAN, NAN, NAN, 5.0])
    np.testing.assert_array_equal(expected[full_max], [NAN])
    assert agree[maxd].nonfinite == agree[mind].nonfinite == 4
    assert agree[full_max].nonfinite == agree[full_min].nonfinite == 1
    if _lavapipe(gpu_device):
        np.testing.assert_array_equal(got[maxd].ravel(), [3.0, 3.0, 3.0, INF, 5.0])
        np.testing.assert_array_equal(got[mind].ravel(), [1.0, 1.0, 1.0, -INF, 1.0])
        np.testing.assert_array_equal(got[full_max], [INF])
        np.testing.assert_array_equal(got[full_min], [-INF])
