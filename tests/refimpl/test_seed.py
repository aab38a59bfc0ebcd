"""refimpl.seed: every experiment stream validates, runs eagerly and has the burn/seed shape."""

from __future__ import annotations

import numpy as np
import pytest

from refimpl.data import random_values
from refimpl.dtypes import DType
from refimpl.eager import EagerExecutor
from refimpl.ir import OperationIr, Sync, TensorStatus
from refimpl.seed import (SEED_DESCRIPTIONS, SEED_STREAMS, chain, independent, matmul_add_exp,
                          mul_add_exp, mul_sum_dim_exp)
from refimpl.stream import Stream, stream_from_json, stream_to_json
from refimpl.validate import validate_stream

RO, RW = TensorStatus.ReadOnly, TensorStatus.ReadWrite
NAMES = sorted(SEED_STREAMS)


def _names(stream: Stream) -> list[str]:
    return [item.name if isinstance(item, OperationIr) else "Sync" for item in stream.items]


def _run(stream: Stream) -> dict[int, np.ndarray]:
    return EagerExecutor().run_stream(stream)


def _last_read(stream: Stream) -> np.ndarray:
    values = _run(stream)
    return values[stream.syncs()[-1].tensors[-1]]


def _inputs(n: int, shape: tuple[int, ...]) -> list[np.ndarray]:
    return [random_values(shape, DType.F32, k) for k in range(n)]


def test_seed_every_stream_has_a_one_line_description():
    assert set(SEED_DESCRIPTIONS) == set(SEED_STREAMS) and len(SEED_STREAMS) >= 25
    for name in NAMES:
        text = SEED_DESCRIPTIONS[name]
        assert text and "\n" not in text and len(text) < 100, name


@pytest.mark.parametrize("name", NAMES)
def test_seed_stream_validates_runs_and_round_trips(name):
    stream = SEED_STREAMS[name]()
    validate_stream(stream)
    assert stream == SEED_STREAMS[name]()  # deterministic
    assert isinstance(stream.items[-1], Sync)
    assert stream_from_json(stream_to_json(stream)) == stream
    values = _run(stream)
    assert set(values) == {tid for sync in stream.syncs() for tid in sync.tensors}
    for tid, value in values.items():
        assert not np.isnan(value).any() if value.dtype.kind == "f" else True, tid


@pytest.mark.parametrize("a_moved,status", [(True, RW), (False, RO)])
def test_seed_mul_add_exp_status_of_a(a_moved, status):
    stream = mul_add_exp(a_moved=a_moved)
    mul, add, exp = stream.ops
    assert [(t.id, t.status) for t in mul.inputs()] == [(0, status), (1, RO)]
    assert [(t.id, t.status) for t in add.inputs()] == [(3, RW), (2, RO)]
    assert [(t.id, t.status) for t in exp.inputs()] == [(4, RW)]
    assert stream.items[-1] == Sync((5,))
    a, b, c = _inputs(3, (4, 6))
    np.testing.assert_array_equal(_last_read(stream), np.exp(a * b + c))


@pytest.mark.parametrize("shape", [(2, 2), (4, 3), (4, 6), (64, 64)])
def test_seed_mul_add_exp_shapes(shape):
    stream = mul_add_exp(shape)
    assert all(t.shape == shape for op in stream.ops for t in op.nodes())


def test_seed_matmul_add_exp_values():
    stream = matmul_add_exp(16)
    assert _names(stream) == ["Float.Matmul", "NumericFloat.Add", "Float.Exp", "Sync"]
    assert all(t.status is RO for t in stream.ops[0].inputs())
    a, b, c = _inputs(3, (16, 16))
    np.testing.assert_allclose(_last_read(stream), np.exp(a @ b + c), rtol=1e-5)


def test_seed_mul_sum_dim_exp_values():
    stream = mul_sum_dim_exp(8)
    assert _names(stream) == ["NumericFloat.Mul", "NumericFloat.SumDim", "Float.Exp", "Sync"]
    assert [t.status for t in stream.ops[0].inputs()] == [RW, RW]
    assert stream.ops[1].desc.axis == 1 and stream.ops[2].desc.out.shape == (8, 1)
    a, b = _inputs(2, (8, 8))
    np.testing.assert_allclose(_last_read(stream), np.exp((a * b).sum(1, keepdims=True)),
                               rtol=1e-5)


def test_seed_chain_is_exactly_n_ops_then_the_sync():
    stream = chain()
    assert len(stream.items) == 101 and len(stream.ops) == 100
    assert "Drop" not in _names(stream) and stream.items[-1] == Sync((100,))
    for k, op in enumerate(stream.ops):  # each op consumes the previous result
        assert [(t.id, t.status) for t in op.inputs()] == [(k, RW)]
    assert len(chain(7).ops) == 7


def test_seed_independent_expressions_share_one_sync():
    stream = independent()
    assert _names(stream) == ["NumericFloat.Mul", "NumericFloat.Add", "Float.Exp"] * 5 + ["Sync"]
    outs = [op.desc.out.id for op in stream.ops if op.name == "Float.Exp"]
    assert stream.items[-1] == Sync(tuple(outs))
    values = _run(stream)
    for k, out in enumerate(outs):
        a, b, c = (random_values((8, 8), DType.F32, 3 * k + j) for j in range(3))
        np.testing.assert_array_equal(values[out], np.exp(a * b + c))


def test_seed_full_sum_plus_one():
    stream = SEED_STREAMS["full_sum_plus_one"]()
    assert _names(stream) == ["NumericFloat.Sum", "NumericFloat.AddScalar", "Sync"]
    y = random_values((4, 4), DType.F32, 0)
    np.testing.assert_allclose(_last_read(stream), [y.sum() + 1], rtol=1e-6)


def test_seed_sync_between_separates_add_and_exp():
    stream = SEED_STREAMS["sync_between"]()
    names = _names(stream)
    assert names.index("NumericFloat.Add") < names.index("Sync") < names.index("Float.Exp")
    assert stream.items[names.index("Sync")] == Sync(())
    np.testing.assert_allclose(_last_read(stream), np.full((4, 4), np.exp(2.0)), rtol=1e-6)


def test_seed_elementwise_and_creation_has_16_data_ops():
    stream = SEED_STREAMS["elementwise_and_creation"]()
    data_ops = [name for name in _names(stream) if name not in ("Drop", "Sync")]
    assert data_ops == ["BaseFloat.Ones", "NumericFloat.MulScalar", "NumericFloat.Mul",
                        "NumericFloat.Add"] * 4
    np.testing.assert_array_equal(_last_read(stream), np.full((8, 8), 7.0))  # 1+0+1+2+3


@pytest.mark.parametrize("name,expected", [
    ("int_bitwise_chain", [-6.5, -3.0, -0.5, -6.5]),
    ("cat_then_mul_scalar", np.arange(16.0).reshape(4, 4) * 2),
    ("cat_unaligned_last_dim", [[2, 3, 4, 11, 21, 31, 41, 51], [5, 6, 7, 61, 71, 81, 91, 101]]),
    ("cat_three_middle_dim", [[[2, 4], [10, 12], [14, 16], [26, 28]],
                              [[6, 8], [18, 20], [22, 24], [30, 32]]]),
    ("cat_of_computed_input", [[10, 20], [30, 40], [5, 6], [7, 8]]),
    ("cat_int", [11, 12, 13, 14, 15]),
    ("cat_bool_equal", [True, False, False, True, True]),
    ("cat_transposed_input", [[2, 8, 20, 40], [4, 10, 60, 80], [6, 12, 100, 120]]),
    ("cat_output_broadcast", [[101, 102, 103, 110, 120, 130, 140, 150],
                              [201, 202, 203, 210, 220, 230, 240, 250]]),
    ("inplace_consuming_chain", [[46, 62], [78, 94]]),
    ("inplace_broadcast", [[22, 44, 66, 88], [30, 52, 74, 96]]),
    ("inplace_read_only", [[1, 2], [3, 4]]),
    ("inplace_reduce", [[85], [181]]),
    ("inplace_kv_cache", [9.0] * 32),
    ("elementwise_add_then_exp", np.full((4, 4), np.exp(2.0), dtype=np.float32)),
    ("chained_elementwise", np.full((8, 8), np.exp(2.0), dtype=np.float32)),
])
def test_seed_burn_test_values(name, expected):
    np.testing.assert_allclose(_last_read(SEED_STREAMS[name]()), expected, rtol=1e-6)


def test_seed_int_bitwise_chain_ops_and_statuses():
    stream = SEED_STREAMS["int_bitwise_chain"]()
    assert _names(stream) == ["Int.BitwiseXor", "Int.BitwiseAndScalar",
                              "Int.BitwiseRightShiftScalar", "Int.BitwiseNot", "Int.BitwiseOr",
                              "Int.IntoFloat", "NumericFloat.MulScalar", "Sync"]
    xor, *_, bitwise_not = stream.ops[:4]
    assert [t.status for t in xor.inputs()] == [RO, RW]  # lhs is still needed by ~lhs
    assert [(t.id, t.status) for t in bitwise_not.inputs()] == [(0, RW)]


def test_seed_inplace_streams_consume_or_keep_as_burn_does():
    consuming = SEED_STREAMS["inplace_consuming_chain"]()
    assert [t.status for t in consuming.ops[0].inputs()] == [RW]
    kept = SEED_STREAMS["inplace_read_only"]()
    assert [t.status for t in kept.ops[0].inputs()] == [RO]
    assert kept.items[-1] == Sync((0,))
    reduce = SEED_STREAMS["inplace_reduce"]()
    sum_dim = next(op for op in reduce.ops if op.name == "NumericFloat.SumDim")
    assert [t.status for t in sum_dim.inputs()] == [RO]  # out is read back as well


def test_seed_cat_transposed_input_is_strided():
    stream = SEED_STREAMS["cat_transposed_input"]()
    assert stream.inputs[0].shape == (3, 2) and stream.inputs[0].strides == (1, 3)


def test_seed_lone_view_swaps_then_adds():
    stream = SEED_STREAMS["lone_view"]()
    assert _names(stream) == ["BaseFloat.SwapDims", "NumericFloat.Add", "Float.Exp", "Sync"]
    a, b = random_values((4, 8), DType.F32, 0), random_values((8, 4), DType.F32, 1)
    np.testing.assert_array_equal(_last_read(stream), np.exp(a.T + b))
