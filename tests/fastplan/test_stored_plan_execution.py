"""A stored plan's execution decides once what holds for every later execution of it.

``OperationQueue.execute_plan`` reads a stored plan once (``_Compiled``) and keeps with it
whether its leaves only drop tensors (an execution that only drops gets no ``_StepContext``)
and the highest relative shape id it names as a C int (a plan naming a shape id the queue's
covered ops never assigned runs its ops unfused, burn #5400). The converter's tensor order
taken by a context is taken out of the cyclic collector's view without reading its items
while every id is an exact int64 int (the id table holds no other).

These tests drive both twins through those paths: warm planners over several iterations whose
segments are drop-only executions and others (with ids inside and past the id table, and ids
that are tracked objects), and hand-made plans naming shape ids of every kind.

burn counterpart: ``crates/burn-fusion/src/stream/queue/execution.rs``
(``OperationQueue::execute``).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

import pytest

import fastplan
from refimpl.dtypes import DType
from refimpl.ir import OperationIr, TensorIr, TensorStatus, UnaryOpIr
from refimpl.ops import op_named
from refimpl.planner.search.strategy import BlockOptimization, Optimization
from refimpl.planner.stream.cache import Always, ExecutionPlan
from refimpl.planner.stream.processor import StreamPlanner as ReferencePlanner
from refimpl.planner.stream.relative import OperationConverter, to_relative
from tests.fastplan.helpers import planners
from tests.planner.helpers import ShapeIdOptimization

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")


if fastplan.COMPILED:
    from fuselab.workloads import build, shifted
    from fastplan.stream.processor import StreamPlanner


@dataclass(frozen=True)
class _Id:
    """A tensor id the id table does not take (a tracked object, hashed by its value)."""

    value: int
    extra: list | None = None

    def __hash__(self) -> int:
        return hash(self.value)

    def __eq__(self, other) -> bool:
        return isinstance(other, _Id) and other.value == self.value


def _contexts(queue) -> list:
    return [(e.step, e.segment, dict(e.tensors_global2relative),
             dict(e.shapes_relative2global), tuple(e.scalars)) for e in queue.executed]


def _exp(source, out, shape=(4, 6)) -> OperationIr:
    return OperationIr(op_named("Float.Exp"), UnaryOpIr(
        TensorIr(source, shape, DType.F32, TensorStatus.ReadOnly),
        TensorIr(out, shape, DType.F32, TensorStatus.NotInit)))


@pytest.mark.parametrize("offset", [0, 2**64], ids=["table", "past-int64"])
@pytest.mark.parametrize("workload", ["mixed", "transformer", "elementwise"])
def test_warm_iterations_give_refimpls_steps_and_contexts(workload, offset):
    """Four iterations of a stream whose executions are drop-only ones and others: each
    iteration's steps and every executed step's context are refimpl's (a stored plan's
    drop-only answer, read at its first execution, holds at the later ones)."""
    twin, reference = planners()
    stream = build(workload, 300)
    step = 10 * (max(stream.inputs, default=0) + len(stream.items) + 1)
    for iteration in range(4):
        current = shifted(stream, offset + iteration * step) if iteration else stream
        assert twin.run(current) == reference.run(current), iteration
    assert twin.num_cache_hits == reference.num_cache_hits > 0
    assert _contexts(twin.queue) == _contexts(reference.queue)
    kinds = {step.kind for step in twin.queue.steps}
    assert kinds >= ({"unfused", "fused"} if workload != "elementwise" else {"fused"})


def test_ids_that_are_tracked_objects_keep_refimpls_contexts():
    """Tensor ids the id table does not hold (tracked objects): the contexts' tensor orders
    keep them, and the collector still sees what it must (no list of them is untracked)."""
    shape = (4, 6)
    twin = StreamPlanner([])
    reference = ReferencePlanner([])
    for round_ in range(3):
        ids = [_Id(100 * round_ + k, []) for k in range(4)]
        for planner in (twin, reference):
            planner.register(0, _exp(ids[0], ids[1], shape))
            planner.register(1, _exp(ids[1], ids[2], shape))
            planner.drain()
        assert _contexts(twin.queue) == _contexts(reference.queue), round_
    orders = [e.tensors_global2relative for e in twin.queue.executed]
    assert any(isinstance(key, _Id) for order in orders for key in order)
    gc.collect()


@pytest.mark.parametrize("shape_id, kind", [
    (0, "fused"), (2, "fused"), (3, "unfused"), (2**70, "unfused"), (-1, "fused"),
    (True, "fused"), (2.5, "fused"), (3.0, "unfused"), (None, "fused")])
def test_plan_naming_shape_ids_of_every_kind_runs_as_refimpls(shape_id, kind):
    """A stored plan naming a relative shape id: small, past the op's, past 64 bits,
    negative, a ``bool``, floats and none; both twins run its op fused or unfused alike,
    at every execution of the plan."""

    outcomes = []
    op = _exp(0, 1)  # assigns shape ids 0 (size 1), 1 and 2
    for planner in (StreamPlanner([]), ReferencePlanner([])):
        planner.queue.add(0, op)
        strategy = Optimization(ShapeIdOptimization(shape_id), (0,), 10)
        relative = to_relative(op, OperationConverter())
        plan_id = planner.store.add(ExecutionPlan((relative,), [Always()],
                                                  BlockOptimization(strategy, (0,))))
        for _ in range(3):
            planner.queue.execute(plan_id, planner.store)
            planner.queue.add(0, op)
        outcomes.append([(s.kind, s.ops, s.fuser) for s in planner.queue.steps])
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][-1][0] == kind
