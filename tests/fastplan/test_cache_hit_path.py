"""The plan-cache hit path keeps less per op and must still show what refimpl shows.

fastplan's queue keeps no list of the latest tensor snapshots (the converter's ``r2g`` is read
again from the pending ops when asked), no relative id -> global id list while every id is an
exact int64 int (``g2r_keys`` is that map), and no list of each pending op's ``out`` id
(``produces_pending`` reads the ops). These tests drive both twins through the paths that
read them: the converter, a sync's ``produces_pending``, and the fused steps' inputs and
outputs of a warm planner, with ids inside and outside the id table. ``StreamPlanner.run``
encodes an item with the codes its read-ahead noted (``fastplan._keys.ReadAhead``): an item it
refuses, Syncs and repeated items go through it too.

burn counterpart: ``crates/burn-fusion/src/stream/queue/{base,execution}.rs``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import fastplan
from refimpl.devices import profile_named
from refimpl.dtypes import DType
from refimpl.ir import BinaryOpIr, OperationIr, Sync, TensorIr, TensorStatus, UnaryOpIr
from refimpl.ops import op_named
from refimpl.planner.fusers.registry import FusionRegistry as ReferenceRegistry
from refimpl.planner.search.strategy import BlockOptimization, Operations
from refimpl.planner.stream.processor import StreamPlanner as ReferencePlanner
from refimpl.planner.stream.queue import OperationQueue as ReferenceQueue
from refimpl.strategies import streams
from refimpl.stream import Stream, stream_to_json

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

if fastplan.COMPILED:
    from fastplan._keys import BoundaryError
    from fuselab.workloads import build, shifted
    from fastplan.stream.processor import StreamPlanner
    from fastplan.stream.queue import OperationQueue
    from fastplan.fusers.registry import FusionRegistry


def _tensor(tid, status=TensorStatus.ReadOnly, shape=(4, 8)) -> TensorIr:
    return TensorIr(tid, shape, DType.F32, status)


def _exp(source: TensorIr, out: TensorIr) -> OperationIr:
    return OperationIr(op_named("Float.Exp"), UnaryOpIr(source, out))


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
        _exp(_tensor(a), _tensor(b, TensorStatus.NotInit)),
        _exp(_tensor(b, TensorStatus.ReadWrite), _tensor(c, TensorStatus.NotInit)),
        _exp(_tensor(c), _tensor(a if type(a) is not bool else 1, TensorStatus.NotInit)),
        _exp(_tensor(1 if type(a) is bool else a, TensorStatus.ReadWrite),
             _tensor(b, TensorStatus.NotInit)),
    ]
    twin, reference = _both(ops)
    assert _converter_view(twin) == _converter_view(reference)
    ordering = (0,)
    twin.execute_unfused(BlockOptimization(Operations(ordering), ordering))
    reference.execute_unfused(BlockOptimization(Operations(ordering), ordering))
    assert _converter_view(twin) == _converter_view(reference)
    assert list(twin.keys) == list(_both(ops[1:])[0].keys)


@given(stream=streams(max_ops=12), data=st.data())
def test_produces_pending_matches_refimpl(stream, data):
    """Whether a pending op outputs one of the tensors asked about, after any adds and
    partial executions (the ops' ``out`` ids are read from the pending ops)."""
    note(stream_to_json(stream))
    ops = [item for item in stream.items if isinstance(item, OperationIr)]
    twin, reference = OperationQueue(), ReferenceQueue()
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


@pytest.mark.parametrize("offset", [0, 2**64], ids=["table", "past-int64"])
@pytest.mark.parametrize("workload", ["transformer", "mixed"])
def test_cache_hits_give_refimpls_steps(workload, offset):
    """A warm planner's next iteration (every segment a plan-cache hit) gives refimpl's steps,
    fused inputs and outputs included, with ids in the id table and past int64 (the
    relative -> global map is then the queue's own list)."""
    profile = profile_named("metal")
    stream = shifted(build(workload, 60), offset)
    nxt = shifted(stream, 10 * (len(stream.items) + 1))
    twin = StreamPlanner(FusionRegistry().fusers(profile))
    reference = ReferencePlanner(ReferenceRegistry().fusers(profile))
    assert twin.run(stream) == reference.run(stream)
    hits = twin.num_cache_hits
    steps = twin.run(nxt)
    assert steps == reference.run(nxt)
    assert twin.num_cache_hits > hits
    assert any(step.kind == "fused" and step.inputs for step in steps)


def _bad_desc(op: OperationIr) -> OperationIr:
    """``op`` with a desc of another struct than its op takes (the boundary refuses it)."""
    other = BinaryOpIr if type(op.desc) is not BinaryOpIr else UnaryOpIr
    return OperationIr(op.op, other.__new__(other))


@pytest.mark.parametrize("position", [0, 1, 2, 3, 7, -1])
def test_an_op_the_read_ahead_refuses_is_refused_by_the_encoding(position):
    """``StreamPlanner.run`` encodes an item with the codes its read-ahead noted two items
    before (none for the first items): an op the read-ahead finds of no exact typed form is
    encoded without them, and refused with the error a queue gives for it alone."""
    stream = build("transformer", 12)
    items = list(stream.items)
    while not isinstance(items[position], OperationIr):
        position += 1
    items[position] = bad = _bad_desc(items[position])
    with pytest.raises(BoundaryError) as planned:
        StreamPlanner(FusionRegistry().fusers(profile_named("metal"))).run(
            Stream(stream.inputs, tuple(items)))
    with pytest.raises(BoundaryError) as alone:
        OperationQueue().add(0, bad)
    assert str(planned.value) == str(alone.value)


def test_read_ahead_over_syncs_and_repeated_items_matches_refimpl():
    """Syncs between the ops (read ahead, never encoded) and the same op object at several
    positions (the ring's entry is found by identity): refimpl's steps."""
    profile = profile_named("metal")
    stream = build("transformer", 40)
    ops = [item for item in stream.items if isinstance(item, OperationIr)]
    items = []
    for op in ops:
        items.append(op)
        if op.op.name.endswith("Drop"):
            items.append(Sync(()))
    repeated = Stream(stream.inputs, tuple(items))
    twin = StreamPlanner(FusionRegistry().fusers(profile))
    reference = ReferencePlanner(ReferenceRegistry().fusers(profile))
    assert twin.run(repeated) == reference.run(repeated)
    assert twin.run(repeated) == reference.run(repeated)  # the same items again: cache hits
