"""The ops left pending after a partial execution are re-relativised exactly.

When an execution covers only the first ``k`` queued ops, the rest start a new segment: their
relative ids, shape ids, scalar and range positions restart from zero (burn's
``drain_queue`` + ``reset_relative``; ``OperationQueue._drain``). The queue must then be what a
fresh queue given only the remaining ops is: the same keys, converter maps (latest snapshots,
id types), shape counts and relative ops; with ids and dims in the queue's tables and past
them (a bool id, more distinct dims than the dim table holds). A tensor used again with another
status is the latest snapshot in the converter, as in refimpl's, before and after the drain
(fastplan keeps no list of the snapshots: it reads them again from the pending ops).
"""

from __future__ import annotations

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import fastplan
from refimpl.dtypes import DType
from refimpl.ir import OperationIr, ScalarOpIr, SliceOpIr, TensorIr, TensorStatus, UnaryOpIr
from refimpl.ops import op_named
from refimpl.planner.stream.queue import OperationQueue as ReferenceQueue
from refimpl.planner.search.strategy import BlockOptimization, Operations
from refimpl.strategies import streams
from refimpl.stream import stream_to_json

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

if fastplan.COMPILED:
    from fuselab.workloads import build
    from fastplan.stream.queue import OperationQueue


def _queue(ops) -> OperationQueue:
    queue = OperationQueue()
    for index, op in enumerate(ops):
        queue.add(index, op)
    return queue


def _state(queue: OperationQueue) -> tuple:
    converter = queue.converter
    ids = [(type(k), k, v) for k, v in converter.tensors_global2relative.items()]
    return (list(queue.keys), list(queue.shapes_assigned), converter, ids,
            list(queue.relative))


def _assert_relativised_afresh(ops, count: int) -> None:
    """Execute the first ``count`` of ``ops`` unfused; the queue then equals a fresh one."""
    __tracebackhide__ = True
    queue = _queue(ops)
    ordering = tuple(range(count))
    queue.execute_unfused(BlockOptimization(Operations(ordering), ordering))
    assert _state(queue) == _state(_queue(ops[count:]))


@given(stream=streams(max_ops=12), data=st.data())
def test_pending_ops_after_a_partial_execution_are_relativised_afresh(stream, data):
    note(stream_to_json(stream))
    ops = [item for item in stream.items if isinstance(item, OperationIr)]
    if len(ops) < 2:
        return
    _assert_relativised_afresh(ops, data.draw(st.integers(1, len(ops) - 1), label="executed"))


@pytest.mark.parametrize("workload", ["transformer", "mixed"])
def test_every_split_of_a_workload_prefix_is_relativised_afresh(workload):
    ops = [item for item in build(workload, 200).items if isinstance(item, OperationIr)][:60]
    for count in range(1, len(ops)):
        _assert_relativised_afresh(ops, count)


def _tensor(tid, shape, status=TensorStatus.ReadOnly) -> TensorIr:
    return TensorIr(tid, tuple(shape), DType.F32, status)


def _exp(source: TensorIr, out: TensorIr) -> OperationIr:
    return OperationIr(op_named("Float.Exp"), UnaryOpIr(source, out))


def _slice(source: TensorIr, ranges, out: TensorIr) -> OperationIr:
    return OperationIr(op_named("BaseFloat.Slice"), SliceOpIr(source, ranges, out))


def _mul_scalar(source: TensorIr, value: float, out: TensorIr) -> OperationIr:
    return OperationIr(op_named("NumericFloat.MulScalar"), ScalarOpIr(source, value, out))


def test_slices_and_scalars_after_the_split_are_renumbered():
    # ranges and scalars are stashed per segment: the later ones move to the front
    new = TensorStatus.NotInit
    ops = [
        _slice(_tensor(1, (8, 6)), ((2, 6), (0, 3)), _tensor(2, (4, 3), new)),
        _mul_scalar(_tensor(2, (4, 3)), 0.5, _tensor(3, (4, 3), new)),
        _slice(_tensor(1, (8, 6)), ((0, 4), (3, 6)), _tensor(4, (4, 3), new)),
        _mul_scalar(_tensor(4, (4, 3)), 2.0, _tensor(5, (4, 3), new)),
        _exp(_tensor(5, (4, 3), TensorStatus.ReadWrite), _tensor(6, (4, 3), new)),
    ]
    for count in range(1, len(ops)):
        _assert_relativised_afresh(ops, count)


def test_more_dims_than_the_dim_table_holds_are_relativised_afresh():
    # 70 distinct sizes: past the 64 the table holds, the queue looks dims up in a dict
    ops = []
    for k in range(70):
        ops.append(_exp(_tensor(2 * k, (k + 2, 3)), _tensor(2 * k + 1, (k + 2, 3),
                                                             TensorStatus.NotInit)))
    for count in (1, 5, 69):
        _assert_relativised_afresh(ops, count)


def test_ids_that_are_not_plain_ints_are_relativised_afresh():
    # a bool id takes the queue off its id table (True == 1 is then a dict's business)
    ops = [_exp(_tensor(True, (4,)), _tensor(7, (4,), TensorStatus.NotInit)),
           _exp(_tensor(7, (4,)), _tensor(8, (4,), TensorStatus.NotInit)),
           _exp(_tensor(8, (4,), TensorStatus.ReadWrite), _tensor(1, (4,), TensorStatus.NotInit))]
    for count in (1, 2):
        _assert_relativised_afresh(ops, count)


def _tensor_4x8(tid, status=TensorStatus.ReadOnly) -> TensorIr:
    return TensorIr(tid, (4, 8), DType.F32, status)


def _both(ops) -> tuple:
    twin, reference = OperationQueue(), ReferenceQueue()
    for index, op in enumerate(ops):
        twin.add(index, op)
        reference.add(index, op)
    return twin, reference


def _converter_view(queue) -> tuple:
    converter = queue.converter
    return ([(rel, type(t.id), t) for rel, t in converter.tensors_relative2global.items()],
            [(type(k), k, v) for k, v in converter.tensors_global2relative.items()])


@pytest.mark.parametrize("ids", [(10, 11, 12), (2**70, 2**70 + 1, 2**70 + 2), (True, 5, 1)],
                         ids=["table", "past-int64", "bool-and-int"])
def test_converter_keeps_the_latest_snapshot_matches_refimpl(ids):
    """A tensor used again with another status (and, for ``True`` then ``1``, another id
    object) is the latest snapshot in both converters, before and after a partial drain."""
    a, b, c = ids
    ops = [
        _exp(_tensor_4x8(a), _tensor_4x8(b, TensorStatus.NotInit)),
        _exp(_tensor_4x8(b, TensorStatus.ReadWrite), _tensor_4x8(c, TensorStatus.NotInit)),
        _exp(_tensor_4x8(c), _tensor_4x8(a if type(a) is not bool else 1, TensorStatus.NotInit)),
        _exp(_tensor_4x8(1 if type(a) is bool else a, TensorStatus.ReadWrite),
             _tensor_4x8(b, TensorStatus.NotInit)),
    ]
    twin, reference = _both(ops)
    assert _converter_view(twin) == _converter_view(reference)
    ordering = (0,)
    twin.execute_unfused(BlockOptimization(Operations(ordering), ordering))
    reference.execute_unfused(BlockOptimization(Operations(ordering), ordering))
    assert _converter_view(twin) == _converter_view(reference)
    assert list(twin.keys) == list(_both(ops[1:])[0].keys)
