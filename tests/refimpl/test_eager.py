"""refimpl.eager: the op-by-op oracle, its tensor store and its errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from refimpl.data import random_values
from refimpl.dtypes import DType
from refimpl.eager import EagerExecutor, init_targets, materialise_input, run_stream
from refimpl.errors import DTypeError, InputDataError, ShapeError, StrideError, TensorIdError
from refimpl.ir import OperationIr, Sync, TensorIr, TensorStatus
from refimpl.ops import op_named
from refimpl.stream import InputSpec, Stream, load_stream

STREAMS = Path(__file__).resolve().parents[1] / "streams"
RO, RW, NEW = TensorStatus.ReadOnly, TensorStatus.ReadWrite, TensorStatus.NotInit


def t(tid: int, status: TensorStatus, shape=(4, 6), dtype=DType.F32) -> TensorIr:
    return TensorIr(tid, tuple(shape), dtype, status)


def op(name: str, **fields) -> OperationIr:
    entry = op_named(name)
    return OperationIr(entry, entry.struct(**fields))


def seed_stream(a_status=RW, strides=None) -> Stream:
    """The seed's ``(a*b+c).exp()`` with a row sum, synced."""
    inputs = {0: InputSpec((4, 6), DType.F32, strides=strides, random=1),
              1: InputSpec((4, 6), DType.F32, random=2),
              2: InputSpec((4, 6), DType.F32, random=3)}
    items = (
        op("NumericFloat.Mul", lhs=t(0, a_status), rhs=t(1, RW), out=t(3, NEW)),
        op("NumericFloat.Add", lhs=t(3, RW), rhs=t(2, RW), out=t(4, NEW)),
        op("Float.Exp", input=t(4, RW), out=t(5, NEW)),
        op("NumericFloat.SumDim", input=t(5, RO), out=t(6, NEW, (4, 1)), axis=1),
        Sync((5, 6)),
    )
    return Stream(inputs, items)


def expected_seed() -> dict[int, np.ndarray]:
    a, b, c = (random_values((4, 6), DType.F32, s) for s in (1, 2, 3))
    y = np.exp(a * b + c)
    return {5: y, 6: np.sum(y, axis=1, keepdims=True)}


def test_run_stream_computes_seed_expression():
    got = run_stream(seed_stream())
    want = expected_seed()
    assert sorted(got) == [5, 6]
    for tid in want:
        assert got[tid].dtype == np.float32
        assert got[tid].tobytes() == want[tid].astype(np.float32).tobytes()


def test_run_stream_is_deterministic():
    first, second = run_stream(seed_stream()), run_stream(seed_stream())
    assert {k: v.tobytes() for k, v in first.items()} == \
        {k: v.tobytes() for k, v in second.items()}


@pytest.mark.parametrize("strides", [(1, 4), (8, 1), (1, 5)], ids=str)
def test_strided_input_has_same_logical_values(strides):
    got = run_stream(seed_stream(strides=strides))
    assert got[5].tobytes() == run_stream(seed_stream())[5].tobytes()


def test_materialise_input_reads_through_buffer():
    spec = InputSpec((2, 3), DType.I32, strides=(1, 2), data=[[1, 2, 3], [4, 5, 6]])
    assert materialise_input(spec, 0).tolist() == [[1, 2, 3], [4, 5, 6]]
    with pytest.raises(StrideError) as info:
        materialise_input(InputSpec((2, 3), DType.I32, strides=(1, 1), random=1), 4)
    assert info.value.field == "inputs.4.strides"


def test_use_after_read_write_is_tensor_id_error():
    stream = seed_stream()
    bad = op("NumericFloat.Neg", input=t(3, RO), out=t(9, NEW))  # 3 was consumed by op 1
    stream = Stream(stream.inputs, stream.items[:2] + (bad,))
    with pytest.raises(TensorIdError) as info:
        run_stream(stream)
    assert (info.value.op_index, info.value.field) == (2, "input")
    assert "op 2 (NumericFloat.Neg)" in str(info.value)


def test_read_only_use_keeps_tensor():
    ex = EagerExecutor()
    stream = seed_stream(a_status=RO)
    ex.load_inputs(stream.inputs)
    ex.execute(stream.items[0])
    assert 0 in ex.live_ids() and 1 not in ex.live_ids() and 3 in ex.live_ids()


def test_drop_frees_and_double_drop_fails():
    inputs = {0: InputSpec((4, 6), DType.F32, random=1)}
    drop = op("Drop", tensor=t(0, RW, ()))  # the executor reads only the dropped id
    ex = EagerExecutor()
    ex.load_inputs(inputs)
    ex.execute(drop)
    assert ex.live_ids() == ()
    with pytest.raises(TensorIdError) as info:
        ex.execute(drop)
    assert (info.value.op_index, info.value.field) == (1, "tensor")


def test_executor_is_incremental():
    stream = seed_stream()
    ex = EagerExecutor()
    ex.load_inputs(stream.inputs)
    for position, item in enumerate(stream.items[:3]):
        assert ex.position == position
        ex.execute(item)
    assert ex.value(5).tobytes() == expected_seed()[5].tobytes()
    assert ex.synced == {}
    ex.execute(stream.items[3])
    ex.execute(stream.items[4])
    assert sorted(ex.synced) == [5, 6]
    with pytest.raises(TensorIdError):
        ex.value(3)


def test_stored_values_are_read_only_and_contiguous():
    ex = EagerExecutor()
    ex.load_inputs({0: InputSpec((3, 4), DType.F32, random=1)})
    ex.execute(op("BaseFloat.SwapDims", input=t(0, RO, (3, 4)), out=t(1, NEW, (4, 3)),
                  dim1=0, dim2=1))
    value = ex.value(1)
    assert value.flags.c_contiguous and not value.flags.writeable
    with pytest.raises(ValueError):
        value[0, 0] = 1.0


def test_sync_twice_keeps_one_entry_and_dead_sync_fails():
    stream = seed_stream()
    items = stream.items + (Sync((5,)),)
    got = run_stream(Stream(stream.inputs, items))
    assert sorted(got) == [5, 6]
    with pytest.raises(TensorIdError) as info:
        run_stream(Stream(stream.inputs, stream.items + (Sync((6, 3)),)))
    assert (info.value.op_index, info.value.field) == (5, "tensors.1")


def test_snapshot_mismatches_are_typed_errors():
    inputs = {0: InputSpec((4, 6), DType.F32, random=1)}
    wrong_shape = op("Float.Exp", input=t(0, RO, (6, 4)), out=t(1, NEW, (6, 4)))
    with pytest.raises(ShapeError) as info:
        run_stream(Stream(inputs, (wrong_shape,)))
    assert info.value.field == "input.shape"
    wrong_dtype = op("Float.Exp", input=t(0, RO, dtype=DType.F16), out=t(1, NEW))
    with pytest.raises(DTypeError):
        run_stream(Stream(inputs, (wrong_dtype,)))
    wrong_out = op("Float.Exp", input=t(0, RO), out=t(1, NEW, dtype=DType.F16))
    with pytest.raises(DTypeError) as info:
        run_stream(Stream(inputs, (wrong_out,)))
    assert info.value.field == "out.dtype"
    redefined = op("Float.Exp", input=t(0, RO), out=t(0, NEW))
    with pytest.raises(TensorIdError):
        run_stream(Stream(inputs, (redefined,)))


def test_data_dependent_error_names_op():
    inputs = {0: InputSpec((2, 3), DType.F32, random=1),
              1: InputSpec((2, 1), DType.I32, data=[[0], [3]])}
    gather = op("BaseFloat.Gather", tensor=t(0, RO, (2, 3)), dim=1,
                indices=t(1, RO, (2, 1), DType.I32), out=t(2, NEW, (2, 1)))
    with pytest.raises(InputDataError) as info:
        run_stream(Stream(inputs, (Sync((0,)), gather)))
    assert (info.value.op_index, info.value.field) == (1, "indices")


def test_init_creates_its_input_at_the_init():
    inputs = {0: InputSpec((2, 2), DType.I64, data=[[1, 2], [3, 4]])}
    init = op("Init", out=t(0, NEW, (2, 2), DType.I64))
    early = Stream(inputs, (Sync((0,)), init))
    assert init_targets(early) == (0,)
    with pytest.raises(TensorIdError):
        run_stream(early)
    got = run_stream(Stream(inputs, (init, Sync((0,)))))
    assert got[0].tolist() == [[1, 2], [3, 4]]
    orphan = op("Init", out=t(9, NEW, (2, 2), DType.I64))
    with pytest.raises(InputDataError):
        run_stream(Stream(inputs, (orphan,)))


def test_every_op_kind_runs_in_a_stream():
    """Indexed, movement, reduce, matmul and module ops together, checked against numpy."""
    inputs = {0: InputSpec((1, 2, 4, 4), DType.F32, random=5),
              1: InputSpec((2, 2), DType.I64, data=[[1, 0], [0, 1]])}
    x4 = (1, 2, 4, 4)
    items = (
        op("Module.MaxPool2d", x=t(0, RO, x4), kernel_size=(2, 2), stride=(2, 2),
           padding=(0, 0), dilation=(1, 1), out=t(2, NEW, (1, 2, 2, 2))),
        op("BaseFloat.Reshape", input=t(2, RW, (1, 2, 2, 2)), out=t(3, NEW, (2, 4))),
        op("BaseFloat.Slice", tensor=t(3, RW, (2, 4)), ranges=((0, 2), (0, 2)),
           out=t(4, NEW, (2, 2))),
        op("BaseFloat.Gather", tensor=t(4, RO, (2, 2)), dim=1, indices=t(1, RW, (2, 2), DType.I64),
           out=t(5, NEW, (2, 2))),
        op("Float.Matmul", lhs=t(4, RW, (2, 2)), rhs=t(5, RW, (2, 2)), out=t(6, NEW, (2, 2))),
        op("NumericFloat.ArgMax", input=t(6, RO, (2, 2)), out=t(7, NEW, (2, 1), DType.I32),
           axis=1),
        Sync((6, 7)),
    )
    got = run_stream(Stream(inputs, items))
    x = random_values(x4, DType.F32, 5)
    pooled = x.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)).reshape(2, 4)[:, :2]
    gathered = np.take_along_axis(pooled, np.array([[1, 0], [0, 1]]), axis=1)
    product = pooled @ gathered
    assert got[6].tobytes() == product.astype(np.float32).tobytes()
    assert got[7].dtype == np.int32
    assert got[7].ravel().tolist() == np.argmax(product, axis=1).tolist()


@pytest.mark.parametrize("path", sorted(STREAMS.glob("*.json")), ids=lambda p: p.stem)
def test_example_streams_run(path):
    stream = load_stream(path)
    got = run_stream(stream)
    synced = {tid for item in stream.items if isinstance(item, Sync) for tid in item.tensors}
    assert set(got) == synced
    for item in stream.items:
        if isinstance(item, OperationIr) and item.outputs() and item.outputs()[0].id in got:
            out = item.outputs()[0]
            assert got[out.id].shape == out.shape and got[out.id].dtype == out.dtype.numpy


def test_spec_minimum_matches_hand_computation():
    stream = load_stream(STREAMS / "spec_minimum.json")
    got = run_stream(stream)
    a = np.array(stream.inputs[0].data, np.float32)
    b = random_values((4, 6), DType.F32, 7)
    c = random_values((6, 4), DType.F32, 8)
    y = np.exp(a * b + np.float32(2.0))
    assert got[5].tobytes() == y.tobytes()
    assert got[8].tobytes() == np.concatenate([y, c.T]).tobytes()


def test_creation_op_reads_no_tensor():
    ex = EagerExecutor()  # nothing loaded: Full must not look anything up
    ex.execute(op("NumericFloat.Full", out=t(0, NEW, (2,)), value=1.5))
    assert ex.value(0).tolist() == [1.5, 1.5]
