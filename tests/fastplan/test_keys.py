"""fastplan's op keys (``fastplan/_keys.pyx``): two relative ops have equal keys exactly when
they are ``==``. Checked through ``ExecutionPlanStore.find`` (the plan index is keyed by the
first op's key), against refimpl's store, which compares the ops themselves."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, note

import fastplan
from refimpl.ir import OperationIr
from refimpl.planner.search.strategy import BlockOptimization, Operations
from refimpl.planner.stream.cache import ExecutionPlan
from refimpl.planner.stream.cache import ExecutionPlanStore as ReferenceStore
from refimpl.planner.stream.relative import OperationConverter, to_relative
from refimpl.strategies import streams
from refimpl.stream import stream_to_json
from tests.planner.burn_mocks import operation_1, operation_2, operation_3

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")


def _plan(op: OperationIr) -> ExecutionPlan:
    return ExecutionPlan((op,), [], BlockOptimization(Operations((0,)), (0,)))


def _index(store_cls, ops: list) -> list[list[int]]:
    store = store_cls()
    for op in ops:
        store.add(_plan(op))
    return [store.find(op) for op in ops]


def _relative(stream) -> list[OperationIr]:
    converter = OperationConverter()
    return [to_relative(op, converter) for op in stream.ops]


def _with_scalar(op: OperationIr, value) -> OperationIr:
    return OperationIr(op.op, dataclasses.replace(op.desc, rhs=value))


@given(first=streams(max_ops=6), second=streams(max_ops=6))
def test_keys_equal_exactly_when_ops_are_equal(first, second):
    note(stream_to_json(first))
    note(stream_to_json(second))
    ops = _relative(first) + _relative(second)
    twin = fastplan.planner_module("stream.cache").ExecutionPlanStore
    assert _index(twin, ops) == _index(ReferenceStore, ops)


@pytest.mark.parametrize("a, b", [(5, 5.0), (1, True), (0, -0.0), (2.5, 2.5), (2**70, 2**70),
                                  (2**70, float(2**70)), ("x", "x")])
def test_keys_scalar_values_compare_as_python_does(a, b):
    ops = [_with_scalar(operation_2(), a), _with_scalar(operation_2(), b),
           _with_scalar(operation_2(), 7)]
    twin = fastplan.planner_module("stream.cache").ExecutionPlanStore
    assert _index(twin, ops) == _index(ReferenceStore, ops)


def test_keys_distinguish_burns_test_operations():
    ops = [operation_1(), operation_2(), operation_3(), operation_1()]
    twin = fastplan.planner_module("stream.cache").ExecutionPlanStore
    assert _index(twin, ops) == _index(ReferenceStore, ops) == [[0, 3], [1], [2], [0, 3]]


def _encodings_from_keys(stream) -> list[tuple[tuple, tuple]]:
    """Per op the queue relativises: its ``EncodedOp`` read from the key, and the one encoded
    from the relative ``OperationIr`` (``fastplan.stream.relative.encode``), as C values."""
    from fastplan.stream.queue import OperationQueue
    from fastplan.stream.relative import encode_key_op, encode_op

    queue = OperationQueue()
    for index, op in enumerate(stream.ops):
        queue.add(index, op)
    relative = queue.operations()
    return [(encode_key_op(key, op).fields(), encode_op(op).fields())
            for key, op in zip(queue.keys, relative, strict=True)]


@given(stream=streams(max_ops=12, max_rank=4))
def test_encoding_read_from_a_key_is_the_ops_encoding(stream):
    """The search's ``EncodedOp`` of a queued op is read from its key (``encode_key``): it
    must hold what encoding the relative op itself gives, field by field."""
    note(stream_to_json(stream))
    for from_key, from_op in _encodings_from_keys(stream):
        assert from_key == from_op


@pytest.mark.parametrize("workload", ["elementwise", "transformer", "mixed"])
def test_encoding_read_from_a_key_on_the_benchmark_streams(workload):
    from fuselab import workloads

    pairs = _encodings_from_keys(workloads.build(workload, 400))
    assert len(pairs) > 300
    kinds = {from_key[2] for from_key, _ in pairs}  # struct codes met
    assert len(kinds) >= 3
    for from_key, from_op in pairs:
        assert from_key == from_op


def test_encoding_read_from_a_key_refuses_a_key_of_another_layout():
    from fastplan.stream.queue import OperationQueue
    from fastplan.stream.relative import encode_key_op

    queue = OperationQueue()
    queue.add(0, operation_1())
    key, op = queue.keys[0], queue.operations()[0]
    assert encode_key_op(key, op).fields()[0] == op.op.code
    with pytest.raises(ValueError, match="op code"):
        encode_key_op(key[:8], op)
    with pytest.raises(ValueError, match="op code"):  # a struct code its op does not take
        encode_key_op(key[:8] + (int.from_bytes(key[8:16], "little") + 1).to_bytes(8, "little")
                      + key[16:], op)
    for broken in (key[:-8], key + bytes(8), key[:16] + (2**40).to_bytes(8, "little") * 3):
        with pytest.raises(ValueError, match="does not hold"):
            encode_key_op(broken, op)


def _swap(first: int, out: int, dim1, dim2=0) -> OperationIr:
    from refimpl.dtypes import DType
    from refimpl.ir import SwapDimsOpIr, TensorIr, TensorStatus
    from refimpl.ops import op_named

    return OperationIr(op_named("BaseFloat.SwapDims"), SwapDimsOpIr(
        TensorIr(first, (2, 3), DType.F32, TensorStatus.ReadOnly),
        TensorIr(out, (3, 2), DType.F32, TensorStatus.NotInit), dim1, dim2))


def _relative_after_drains(ops: list[OperationIr]) -> list[OperationIr]:
    """Each op queued alone (the one before drained), as the queue relativises it."""
    from fastplan.stream.queue import OperationQueue

    queue = OperationQueue()
    found = []
    for index, op in enumerate(ops):
        queue.add(index, op)
        found.append(queue.operations()[0])
        queue.execute_unfused(BlockOptimization(Operations((0,)), (0,)))
    return found


def test_queue_takes_a_relative_op_again_only_when_indistinguishable():
    """Equal keys, equal ops: the queue reuses the relative op it built before (relative ids
    restart at each drain) unless a value the key holds only up to ``==`` differs in type or
    sign (``True`` for 1, ``-0.0`` for 0.0): what it hands out is what relativising gives."""
    ops = [_swap(10, 11, 1), _swap(20, 21, 1), _swap(30, 31, True), _swap(40, 41, 1),
           _with_scalar(operation_2(), 0.0), _with_scalar(operation_2(), -0.0)]
    found = _relative_after_drains(ops)
    expected = [to_relative(op, OperationConverter()) for op in ops]
    assert [repr(op) for op in found] == [repr(op) for op in expected]
    assert found[1] is found[0]  # taken again
    assert found[2] is not found[0] and type(found[2].desc.dim1) is bool
    assert type(found[3].desc.dim1) is int
    assert found[1] == found[2]  # equal keys all along


def _add(lhs, rhs, out) -> OperationIr:
    from refimpl.ir import BinaryOpIr, TensorStatus
    from refimpl.ops import op_named
    from tests.planner.burn_mocks import tensor

    return OperationIr(op_named("NumericFloat.Add"), BinaryOpIr(
        tensor(lhs), tensor(rhs), tensor(out, TensorStatus.NotInit)))


def _converter_state(queue) -> tuple:
    converter = queue.converter
    return (repr(sorted(converter.tensors_global2relative.items(), key=repr)),
            repr(sorted(converter.tensors_relative2global.items())),
            [repr(op) for op in queue.operations()],
            list(queue.indices))


@pytest.mark.parametrize("ids", [
    list(range(1000, 1300)),  # many tensors in one segment: the id table grows
    [1, 2, True, 3, False, 0, 2, 5],  # bools equal to ints: the converter compares as Python
    [2**63 - 1, -(2**63), 2**70, 2**70, 7, -1, 7],  # int64's ends, and past them
    [3, 3.0, 4, 4, 5],  # a float equal to an int
    # around CPython's one-digit ints (|v| < 2**30), which fastplan reads in place
    [2**30 - 1, 2**30, 2**30 - 1, -(2**30) + 1, -(2**30), 2**31, 2**30, 0, -(2**30) + 1],
])
def test_queue_ids_map_as_refimpls_converter_does(ids):
    """fastplan's queue maps global tensor ids with a C table while they are exact int64
    ints and with a dict otherwise; either way its relative ids, snapshots and relative ops
    are refimpl's, segment after segment (ops drained in between)."""
    from fastplan.stream.queue import OperationQueue
    from refimpl.planner.stream.queue import OperationQueue as ReferenceQueue

    ops = [_add(ids[i], ids[(i + 1) % len(ids)], ids[(i + 2) % len(ids)])
           for i in range(len(ids))]
    fast, ref = OperationQueue(), ReferenceQueue()
    for index, op in enumerate(ops):
        fast.add(index, op)
        ref.add(index, op)
        assert _converter_state(fast) == _converter_state(ref)
        if index % 7 == 6:  # drain the first three: the rest is relativised again
            drained = BlockOptimization(Operations((0, 1, 2)), (0, 1, 2))
            fast.execute_unfused(drained)
            ref.execute_unfused(drained)
            assert _converter_state(fast) == _converter_state(ref)
    assert [s.ops for s in fast.steps] == [s.ops for s in ref.steps]


_DIGIT_EDGE_DIMS = [2**30 - 1, 2**30, 1, 2**31, 2**30 - 1, 0, 2**62, 2**30]


def test_queue_shapes_map_as_refimpls_converter_does_around_one_digit():
    """Dims on both sides of CPython's one-digit ints (read in place below 2**30, through
    ``PyLong_AsLongLongAndOverflow`` from there) get refimpl's relative shape ids, an equal
    dim met again the id it had, segment after segment."""
    from fastplan.stream.queue import OperationQueue
    from refimpl.dtypes import DType
    from refimpl.ir import BinaryOpIr, TensorIr, TensorStatus
    from refimpl.ops import op_named
    from refimpl.planner.stream.queue import OperationQueue as ReferenceQueue

    def shaped(tid, k, status=TensorStatus.ReadOnly):
        dims = _DIGIT_EDGE_DIMS
        return TensorIr(tid, (dims[k % len(dims)], dims[(k + 3) % len(dims)]), DType.F32,
                        status)

    ops = [OperationIr(op_named("NumericFloat.Add"), BinaryOpIr(
        shaped(3 * i, i), shaped(3 * i + 1, i + 1), shaped(3 * i + 2, i, TensorStatus.NotInit)))
        for i in range(12)]
    fast, ref = OperationQueue(), ReferenceQueue()
    for index, op in enumerate(ops):
        fast.add(index, op)
        ref.add(index, op)
        assert _converter_state(fast) == _converter_state(ref)
        if index % 5 == 4:
            drained = BlockOptimization(Operations((0, 1)), (0, 1))
            fast.execute_unfused(drained)
            ref.execute_unfused(drained)
            assert _converter_state(fast) == _converter_state(ref)


# --- field reads cached by exact type (``_keys.field``) -------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Slotted:
    shape: object
    other: object = None


class _SubSlotted(_Slotted):
    __slots__ = ()


class _Plain:
    def __init__(self, shape):
        self.shape = shape


def test_field_read_is_getattr_and_caches_the_exact_type():
    from fastplan._keys import FieldProbe

    probe = FieldProbe("shape")
    first, second = _Slotted((1, 2)), _Slotted((3,))
    assert probe.read(first) == (1, 2) and probe.cached is _Slotted
    assert probe.read(second) == (3,)  # served from the slot
    assert probe.read(_Plain("p")) == "p" and probe.cached is _Slotted  # no slot: not cached
    assert probe.read(_SubSlotted((4,))) == (4,) and probe.cached is _SubSlotted
    assert probe.read(second) == (3,) and probe.cached is _Slotted


def test_field_read_raises_as_getattr_does():
    from fastplan._keys import FieldProbe

    probe = FieldProbe("shape")
    probe.read(_Slotted(()))
    unset = object.__new__(_Slotted)  # the slot left empty
    with pytest.raises(AttributeError):
        probe.read(unset)
    with pytest.raises(AttributeError):
        FieldProbe("nope").read(_Slotted(()))


def test_field_read_follows_a_modified_type():
    """A class changed after the cache was filled (a property over the field, then a
    ``__getattribute__``) is read as ``getattr`` reads it: the version tag moved."""
    from fastplan._keys import FieldProbe

    @dataclasses.dataclass(slots=True)
    class Changing:
        shape: object

    probe = FieldProbe("shape")
    item = Changing("slot")
    assert probe.read(item) == "slot" and probe.cached is Changing
    member = Changing.shape
    Changing.shape = property(lambda self: "property")
    assert probe.read(item) == "property"
    Changing.shape = member
    assert probe.read(item) == "slot"
    Changing.__getattribute__ = lambda self, name: "intercepted"
    assert probe.read(item) == "intercepted"
    assert probe.read(item) == "intercepted"
