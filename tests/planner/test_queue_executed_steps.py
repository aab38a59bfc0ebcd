"""What the queue records of each execution (``queue.OperationQueue.executed``, ``steps``)
and the plans a processor stores, on refimpl and on fastplan (the ``planner_impl`` fixture):
every executed step's segment, maps and scalars, the steps, the stored plans and their
triggers are refimpl's.

The streams: segments that repeat, share or change their dims (equal dims of distinct int
objects included), warm planners over several iterations whose executions are drop-only ones
and others (ids inside and past the id table, ids that are tracked objects), hand-made plans
with positions of every kind and plans naming relative shape ids of every kind (burn #5400:
a plan naming a shape id the covered ops never assigned runs them unfused), and every plan a
workload stores, read at its fields as its methods answer.

fastplan makes these records with less: a context's dims tuple is shared with an earlier one
holding the very same objects (``_dims_now``), a stored plan is read once (``_Compiled``:
whether it only drops tensors, its highest shape id as a C int), leaf positions are read as C
ints where each is an exact int in range (``_Leaf.positions``), a stored plan's relative ops
and ``OnOperations`` trigger are built from the queue in place (``_rel_range``), and a
context's tensor order is untracked without reading its items while every id is an exact
int64 int.

burn counterpart: ``crates/burn-fusion/src/stream/queue/execution.rs``
(``OperationQueue::execute``) and ``crates/burn-fusion/src/stream/execution/processor.rs``
(``Processor::on_exploration_completed``).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

import pytest

from fuselab.workloads import build, shifted
from refimpl.dtypes import DType
from refimpl.ir import OperationIr, TensorIr, TensorStatus, UnaryOpIr
from refimpl.ops import op_named
from refimpl.planner.stream.cache import Always, ExecutionPlan
from refimpl.planner.stream.processor import StreamPlanner as ReferencePlanner
from refimpl.planner.stream.queue import OperationQueue as ReferenceQueue
from refimpl.planner.stream.relative import OperationConverter, to_relative
from refimpl.planner.search.strategy import BlockOptimization, Operations, Optimization
from tests.planner.helpers import ShapeIdOptimization, planners


def _contexts(queue) -> list:
    return [(e.step, e.segment, dict(e.tensors_global2relative),
             dict(e.shapes_relative2global), tuple(e.scalars)) for e in queue.executed]


def _exp(tid: int, shape: tuple) -> OperationIr:
    """``exp`` of tensor ``tid`` into ``tid + 1``, both of ``shape``."""
    return OperationIr(op_named("Float.Exp"), UnaryOpIr(
        TensorIr(tid, shape, DType.F32, TensorStatus.ReadOnly),
        TensorIr(tid + 1, shape, DType.F32, TensorStatus.NotInit)))


@pytest.mark.parametrize("workload", ["transformer", "mixed", "elementwise"])
def test_executed_contexts_match_refimpl(planner_impl, workload):
    """Every executed step's segment, maps and scalars are refimpl's (the dims tuples shared
    between contexts included), cold and then from a warm plan cache."""
    twin, reference = planners(planner_impl)
    stream = build(workload, 300)
    assert twin.run(stream) == reference.run(stream)
    assert twin.run(stream) == reference.run(stream)
    assert _contexts(twin.queue) == _contexts(reference.queue)


def test_dims_of_distinct_equal_ints_and_changed_dims_are_refimpls(planner_impl):
    """Segments whose dims repeat as the same objects, as equal ints of distinct objects, and
    as other values (more than the queue keeps for sharing): each context's dims are its own
    segment's."""
    shapes = []
    for i in range(12):
        big = int(str(1000 + i % 3))  # equal values, distinct objects
        shapes.append((4, big) if i % 2 else (big, 8, 1 + i))
    twin, reference = planner_impl.stream.queue.OperationQueue(), ReferenceQueue()
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
def test_hand_made_orderings_index_as_refimpl(planner_impl, ordering):
    """A plan's positions of every kind: in range, negative (refimpl's list indexing), a
    ``bool``, past the queue (both raise ``IndexError``), repeated."""
    twin, reference = planner_impl.stream.queue.OperationQueue(), ReferenceQueue()
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


def test_stored_plans_and_triggers_are_refimpls(planner_impl):
    """The plans a cold planner stores (their relative ops, read in place from the queue) and
    the ``OnOperations`` triggers of the ops an exploration left, as refimpl stores them."""
    twin, reference = planners(planner_impl)
    stream = build("transformer", 200)
    twin.run(stream)
    reference.run(stream)
    mine = [(p.operations, p.triggers) for p in twin.store.plans]
    theirs = [(p.operations, p.triggers) for p in reference.store.plans]
    assert mine == theirs
    assert any(type(t).__name__ == "OnOperations" for _, triggers in mine for t in triggers)


@dataclass(frozen=True)
class _Id:
    """A tensor id the id table does not take (a tracked object, hashed by its value)."""

    value: int
    extra: list | None = None

    def __hash__(self) -> int:
        return hash(self.value)

    def __eq__(self, other) -> bool:
        return isinstance(other, _Id) and other.value == self.value


def _exp_of(source, out, shape=(4, 6)) -> OperationIr:
    return OperationIr(op_named("Float.Exp"), UnaryOpIr(
        TensorIr(source, shape, DType.F32, TensorStatus.ReadOnly),
        TensorIr(out, shape, DType.F32, TensorStatus.NotInit)))


@pytest.mark.parametrize("offset", [0, 2**64], ids=["table", "past-int64"])
@pytest.mark.parametrize("workload", ["mixed", "transformer", "elementwise"])
def test_warm_iterations_give_refimpls_steps_and_contexts(planner_impl, workload, offset):
    """Four iterations of a stream whose executions are drop-only ones and others: each
    iteration's steps and every executed step's context are refimpl's (a stored plan's
    drop-only answer, read at its first execution, holds at the later ones)."""
    twin, reference = planners(planner_impl)
    stream = build(workload, 300)
    step = 10 * (max(stream.inputs, default=0) + len(stream.items) + 1)
    for iteration in range(4):
        current = shifted(stream, offset + iteration * step) if iteration else stream
        assert twin.run(current) == reference.run(current), iteration
    assert twin.num_cache_hits == reference.num_cache_hits > 0
    assert _contexts(twin.queue) == _contexts(reference.queue)
    kinds = {step.kind for step in twin.queue.steps}
    assert kinds >= ({"unfused", "fused"} if workload != "elementwise" else {"fused"})


def test_ids_that_are_tracked_objects_keep_refimpls_contexts(planner_impl):
    """Tensor ids the id table does not hold (tracked objects): the contexts' tensor orders
    keep them, and the collector still sees what it must (no list of them is untracked)."""
    shape = (4, 6)
    twin = planner_impl.stream.processor.StreamPlanner([])
    reference = ReferencePlanner([])
    for round_ in range(3):
        ids = [_Id(100 * round_ + k, []) for k in range(4)]
        for planner in (twin, reference):
            planner.register(0, _exp_of(ids[0], ids[1], shape))
            planner.register(1, _exp_of(ids[1], ids[2], shape))
            planner.drain()
        assert _contexts(twin.queue) == _contexts(reference.queue), round_
    orders = [e.tensors_global2relative for e in twin.queue.executed]
    assert any(isinstance(key, _Id) for order in orders for key in order)
    gc.collect()


@pytest.mark.parametrize("shape_id, kind", [
    (0, "fused"), (2, "fused"), (3, "unfused"), (2**70, "unfused"), (-1, "fused"),
    (True, "fused"), (2.5, "fused"), (3.0, "unfused"), (None, "fused")])
def test_plan_naming_shape_ids_of_every_kind_runs_as_refimpls(planner_impl, shape_id, kind):
    """A stored plan naming a relative shape id: small, past the op's, past 64 bits,
    negative, a ``bool``, floats and none; both twins run its op fused or unfused alike,
    at every execution of the plan."""

    outcomes = []
    op = _exp_of(0, 1)  # assigns shape ids 0 (size 1), 1 and 2
    for planner in (planner_impl.stream.processor.StreamPlanner([]), ReferencePlanner([])):
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


@pytest.mark.parametrize("workload", ["elementwise", "transformer", "mixed"])
def test_def_twins_optimization_reading(planner_impl, workload):
    """What the queue reads of a stored plan's optimizations at their fields
    (``fastplan.search.strategy``: ``max_relative_shape_id``, and each fused step's inputs, outputs
    and block op names) equals what their methods answer, on every plan a stream stores."""
    from fuselab import workloads
    from refimpl.devices import profile_named
    from refimpl.planner.search import strategy as ref_strategy

    max_relative_shape_id = planner_impl.search.strategy.max_relative_shape_id
    planner = planner_impl.stream.processor.StreamPlanner(
        planner_impl.fusers.registry.FusionRegistry().fusers(profile_named("metal")))
    planner.run(workloads.build(workload, 1500))
    by_fuser: dict[str, int] = {}
    for plan in planner.store.plans:
        strategy = plan.optimization.strategy
        assert max_relative_shape_id(strategy) == ref_strategy.max_relative_shape_id(strategy)
        for leaf in ref_strategy.leaves(strategy):
            if isinstance(leaf, ref_strategy.Optimization):
                by_fuser[leaf.opt.name] = by_fuser.get(leaf.opt.name, 0) + 1
    steps = [s for s in planner.queue.steps if s.kind == "fused"]
    executed = [e for e in planner.queue.executed if e.step.kind == "fused"]
    assert len(steps) == len(executed) > 0
    for step, done in zip(steps, executed, strict=True):
        opt = done.optimization
        assert len(step.inputs) == len(opt.global_inputs())
        assert len(step.outputs) == len(opt.global_outputs())
        assert tuple(block.ops for block in step.blocks) == opt.block_op_names()
    assert len(by_fuser) >= (1 if workload == "elementwise" else 2)
