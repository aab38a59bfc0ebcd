"""The public strategies (``refimpl.strategies``): drawn streams are valid, small, and reach
every kind of op the property needs (so a passing property means something)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings

from refimpl.ir import Sync
from refimpl.ops import OpKind
from refimpl.strategies import DIMS, elementwise_streams, streams
from refimpl.stream import Stream
from refimpl.validate import validate_stream

MAX_OPS = 10
_SLOW_OK = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# find() without shrinking: the first stream that qualifies is enough
_SEARCH = settings(max_examples=2000, database=None, phases=(Phase.generate,),
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _tensors(stream: Stream):
    for spec in stream.inputs.values():
        yield spec.shape
    for op in stream.ops:
        for t in op.nodes():
            yield t.shape


@_SLOW_OK
@given(streams(max_ops=MAX_OPS))
def test_strategies_streams_validate_and_stay_small(stream):
    validate_stream(stream)
    assert stream.items and isinstance(stream.items[-1], Sync)
    data_ops = [op for op in stream.ops if op.op.kind is not OpKind.DROP]
    assert len(data_ops) <= MAX_OPS
    # inputs are at most 8x8x8; cat and expand grow a tensor, each op by a bounded amount
    limit = max(DIMS) ** 3 * (1 + MAX_OPS)
    for shape in _tensors(stream):
        assert len(shape) <= 4
        assert math.prod(shape) <= limit


@_SLOW_OK
@given(elementwise_streams(max_ops=MAX_OPS))
def test_strategies_elementwise_streams_hold_only_elementwise_ops(stream):
    validate_stream(stream)
    kinds = {op.op.kind for op in stream.ops}
    assert kinds <= {OpKind.ELEMENTWISE, OpKind.DROP}


def _has_op(*names: str):
    return lambda s: any(op.name in names for op in s.ops)


@pytest.mark.parametrize("label, condition", [
    ("matmul", _has_op("Float.Matmul")),
    ("per-axis reduction", _has_op("NumericFloat.SumDim", "NumericInt.SumDim")),
    ("cat", _has_op("BaseFloat.Cat", "BaseInt.Cat", "BaseBool.Cat")),
    ("gather", _has_op("BaseFloat.Gather", "BaseInt.Gather")),
    ("select", _has_op("BaseFloat.Select", "BaseInt.Select")),
    ("mask", _has_op("BaseFloat.MaskWhere", "BaseFloat.MaskFill")),
    ("swap_dims", _has_op("BaseFloat.SwapDims", "BaseInt.SwapDims")),
    ("reshape", _has_op("BaseFloat.Reshape", "BaseInt.Reshape")),
    ("slice", _has_op("BaseFloat.Slice", "BaseInt.Slice")),
    ("scalar op", _has_op("NumericFloat.MulScalar", "NumericInt.MulScalar")),
    ("bitwise", _has_op("Int.BitwiseXor", "Int.BitwiseNot")),
    ("cast", _has_op("BaseFloat.Cast", "BaseInt.Cast")),
    ("drop", _has_op("Drop")),
    ("pooling or interpolate", _has_op("Module.MaxPool2d", "Module.AvgPool2d",
                                       "Module.AdaptiveAvgPool2d", "Module.Interpolate")),
    ("permute", _has_op("BaseFloat.Permute", "BaseInt.Permute")),
    ("transposed input", lambda s: any(
        spec.strides is not None and spec.strides[-1] != 1 for spec in s.inputs.values())),
    ("padded input", lambda s: any(
        spec.strides is not None and spec.strides[-1] == 1 and len(spec.shape) > 1
        and spec.strides[-2] > spec.shape[-1] for spec in s.inputs.values())),
    ("f16", lambda s: any(spec.dtype.value == "f16" for spec in s.inputs.values())),
    ("bool", lambda s: any(spec.dtype.value == "bool" for spec in s.inputs.values())),
    ("reused tensor", lambda s: any(t.status.value == "ReadOnly" for op in s.ops
                                    for t in op.inputs())),
    ("mid-stream sync", lambda s: any(isinstance(item, Sync) for item in s.items[:-1])),
])
def test_strategies_reach(label, condition):
    assert condition(find(streams(), condition, settings=_SEARCH))


def _fusers(stream: Stream) -> set:
    from refimpl.devices import profile_named
    from refimpl.planner import executed_steps

    return {e.step.fuser for e in executed_steps(stream, profile_named("metal"))[1]}


@pytest.mark.parametrize("fuser", ["NHWCRelayout", "ReduceBroadcasted", "Matmul", "Reduce"])
def test_strategies_reach_every_fuser(fuser):
    assert fuser in _fusers(find(streams(), lambda s: fuser in _fusers(s), settings=_SEARCH))
