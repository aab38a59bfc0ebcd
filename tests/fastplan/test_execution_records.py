"""What the queue records of an execution, made with less: shared dims tuples, leaf positions
read once as C ints, and the stored plan's relative ops read in place.

``OperationQueue._run_leaves`` gives each execution a ``_StepContext`` (what launch planning
reads of it): its dims are a tuple made for an earlier context when the converter's dim list
holds the very same objects (``_dims_now``), and the tensor order of an unfused execution is a
list slice. A stored plan's leaf keeps its segment positions as C ints where each is an exact
int in range (``_Leaf.positions``); other positions (negative, ``bool``, past the queue) are
read from the tuple as refimpl's list indexing reads them. ``Processor._store`` builds the
plan's relative ops and its ``OnOperations`` trigger from fastplan's queue in place
(``_rel_range``), where it sliced the ``_QueueOps`` view.

These tests drive both twins through those paths: the executed steps' contexts against
refimpl's on streams whose segments repeat, share or change their dims (equal dims of distinct
int objects included), hand-made plans with every kind of position, and the stored plans and
triggers of a planner against refimpl's.

burn counterpart: ``crates/burn-fusion/src/stream/queue/execution.rs``
(``OperationQueue::execute``) and ``crates/burn-fusion/src/stream/execution/processor.rs``
(``Processor::on_exploration_completed``).
"""

from __future__ import annotations

import pytest

import fastplan
from refimpl.dtypes import DType
from refimpl.ir import OperationIr, TensorIr, TensorStatus, UnaryOpIr
from refimpl.ops import op_named
from refimpl.planner.search.strategy import BlockOptimization, Operations
from refimpl.planner.stream.queue import OperationQueue as ReferenceQueue
from tests.fastplan.helpers import planners

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

if fastplan.COMPILED:
    from fuselab.workloads import build
    from fastplan.stream.queue import OperationQueue


def _contexts(queue) -> list:
    return [(e.step, e.segment, dict(e.tensors_global2relative),
             dict(e.shapes_relative2global), tuple(e.scalars)) for e in queue.executed]


def _exp(tid: int, shape: tuple) -> OperationIr:
    """``exp`` of tensor ``tid`` into ``tid + 1``, both of ``shape``."""
    return OperationIr(op_named("Float.Exp"), UnaryOpIr(
        TensorIr(tid, shape, DType.F32, TensorStatus.ReadOnly),
        TensorIr(tid + 1, shape, DType.F32, TensorStatus.NotInit)))


@pytest.mark.parametrize("workload", ["transformer", "mixed", "elementwise"])
def test_executed_contexts_match_refimpl(workload):
    """Every executed step's segment, maps and scalars are refimpl's (the dims tuples shared
    between contexts included), cold and then from a warm plan cache."""
    twin, reference = planners()
    stream = build(workload, 300)
    assert twin.run(stream) == reference.run(stream)
    assert twin.run(stream) == reference.run(stream)
    assert _contexts(twin.queue) == _contexts(reference.queue)


def test_dims_of_distinct_equal_ints_and_changed_dims_are_refimpls():
    """Segments whose dims repeat as the same objects, as equal ints of distinct objects, and
    as other values (more than the queue keeps for sharing): each context's dims are its own
    segment's."""
    shapes = []
    for i in range(12):
        big = int(str(1000 + i % 3))  # equal values, distinct objects
        shapes.append((4, big) if i % 2 else (big, 8, 1 + i))
    twin, reference = OperationQueue(), ReferenceQueue()
    index = 0
    for round_ in range(3):
        for shape in shapes:
            for queue in (twin, reference):
                queue.add(index, _exp(10 * index, shape))
                ordering = (0,)
                queue.execute_unfused(BlockOptimization(Operations(ordering), ordering))
            index += 1
        assert _contexts(twin) == _contexts(reference), round_
    assert [e.shapes_relative2global for e in twin.executed] == \
        [e.shapes_relative2global for e in reference.executed]


@pytest.mark.parametrize("ordering", [(0, 1, 2), (2, 0), (-1,), (-3, 1), (True, 0), (0, 5),
                                      (-4,), (1, 1)])
def test_hand_made_orderings_index_as_refimpl(ordering):
    """A plan's positions of every kind: in range, negative (refimpl's list indexing), a
    ``bool``, past the queue (both raise ``IndexError``), repeated."""
    twin, reference = OperationQueue(), ReferenceQueue()
    for queue in (twin, reference):
        for index in range(3):
            queue.add(index, _exp(10 * index, (4, 4)))
    outcomes = []
    for queue in (twin, reference):
        try:
            queue.execute_unfused(BlockOptimization(Operations(ordering), ordering))
            outcomes.append(("ok", list(queue.steps), list(queue.global_ops)))
        except IndexError:
            outcomes.append(("IndexError",))
    assert outcomes[0] == outcomes[1]


def test_stored_plans_and_triggers_are_refimpls():
    """The plans a cold planner stores (their relative ops, read in place from the queue) and
    the ``OnOperations`` triggers of the ops an exploration left, as refimpl stores them."""
    twin, reference = planners()
    stream = build("transformer", 200)
    twin.run(stream)
    reference.run(stream)
    mine = [(p.operations, p.triggers) for p in twin.store.plans]
    theirs = [(p.operations, p.triggers) for p in reference.store.plans]
    assert mine == theirs
    assert any(type(t).__name__ == "OnOperations" for _, triggers in mine for t in triggers)
