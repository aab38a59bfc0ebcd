"""The queue's relative ops (``queue.OperationQueue``), on refimpl and on fastplan (the
``planner_impl`` fixture): whatever order ops are added, relative ops read and steps executed
in, and whatever the tensor ids and dims, the queue shows what refimpl's queue shows: the
pending ops, their relative form, the converter's maps and snapshots, the steps, and whether
a pending op produces a tensor.

fastplan encodes each op as it is added and builds relative ops only when asked; it keeps no
list of each pending op's ``out`` id (``produces_pending`` reads the ops), and maps ids and
dims in C tables while they are exact int64 ints (around CPython's one-digit ints too).

burn counterpart: ``crates/burn-fusion/src/stream/queue/{base,execution}.rs``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from refimpl.ir import OperationIr
from refimpl.planner.stream.queue import OperationQueue as ReferenceQueue
from refimpl.planner.search.strategy import BlockOptimization, Operations
from refimpl.strategies import streams
from refimpl.stream import stream_to_json


def _view(queue) -> tuple:
    return (list(queue.operations()), list(queue.global_ops), list(queue.indices),
            list(queue.shapes_assigned), list(queue.steps))


@given(stream=streams(max_ops=12), data=st.data())
def test_relative_ops_read_between_adds_and_executions_match_refimpl(planner_impl, stream,
                                                                     data):
    """Relative ops are read (or not) after any add, and a leading part executed unfused at
    any point: both queues show the same pending ops, relative ops and steps throughout."""
    note(stream_to_json(stream))
    ops = [item for item in stream.items if isinstance(item, OperationIr)]
    twin, reference = planner_impl.stream.queue.OperationQueue(), ReferenceQueue()
    for index, op in enumerate(ops):
        twin.add(index, op)
        reference.add(index, op)
        if data.draw(st.booleans(), label="read"):
            position = data.draw(st.integers(0, len(reference.global_ops) - 1), label="at")
            assert twin.operations()[position] == reference.operations()[position]
        if data.draw(st.booleans(), label="execute"):
            count = data.draw(st.integers(1, len(reference.global_ops)), label="count")
            ordering = tuple(range(count))
            twin.execute_unfused(BlockOptimization(Operations(ordering), ordering))
            reference.execute_unfused(BlockOptimization(Operations(ordering), ordering))
        assert _view(twin) == _view(reference)


@given(stream=streams(max_ops=12), data=st.data())
def test_produces_pending_matches_refimpl(planner_impl, stream, data):
    """Whether a pending op outputs one of the tensors asked about, after any adds and
    partial executions (the ops' ``out`` ids are read from the pending ops)."""
    note(stream_to_json(stream))
    ops = [item for item in stream.items if isinstance(item, OperationIr)]
    twin, reference = planner_impl.stream.queue.OperationQueue(), ReferenceQueue()
    known = sorted({t.id for op in ops for t in (*op.inputs(), *op.outputs())}) or [0]
    for index, op in enumerate(ops):
        twin.add(index, op)
        reference.add(index, op)
        asked = data.draw(st.lists(st.sampled_from(known + [-1]), max_size=3), label="asked")
        assert twin.produces_pending(asked) == reference.produces_pending(asked)
        if data.draw(st.booleans(), label="execute"):
            count = data.draw(st.integers(1, len(reference.global_ops)), label="count")
            ordering = tuple(range(count))
            twin.execute_unfused(BlockOptimization(Operations(ordering), ordering))
            reference.execute_unfused(BlockOptimization(Operations(ordering), ordering))


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
def test_queue_ids_map_as_refimpls_converter_does(planner_impl, ids):
    """The queue's relative ids, snapshots and relative ops are refimpl's, segment after
    segment (ops drained in between), whatever the ids: fastplan maps global tensor ids with a
    C table while they are exact int64 ints and with a dict otherwise."""
    from refimpl.planner.stream.queue import OperationQueue as ReferenceQueue

    ops = [_add(ids[i], ids[(i + 1) % len(ids)], ids[(i + 2) % len(ids)])
           for i in range(len(ids))]
    fast, ref = planner_impl.stream.queue.OperationQueue(), ReferenceQueue()
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


def test_queue_shapes_map_as_refimpls_converter_does_around_one_digit(planner_impl):
    """Dims on both sides of CPython's one-digit ints (read in place below 2**30, through
    ``PyLong_AsLongLongAndOverflow`` from there) get refimpl's relative shape ids, an equal
    dim met again the id it had, segment after segment."""
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
    fast, ref = planner_impl.stream.queue.OperationQueue(), ReferenceQueue()
    for index, op in enumerate(ops):
        fast.add(index, op)
        ref.add(index, op)
        assert _converter_state(fast) == _converter_state(ref)
        if index % 5 == 4:
            drained = BlockOptimization(Operations((0, 1)), (0, 1))
            fast.execute_unfused(drained)
            ref.execute_unfused(drained)
            assert _converter_state(fast) == _converter_state(ref)
