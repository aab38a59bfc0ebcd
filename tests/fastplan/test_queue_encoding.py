"""fastplan's queue encodes each op as it is added (``fastplan.stream.queue``, ``fastplan._keys``):

* the steps it builds are plain ``PlanStep``s, untracked by the cyclic collector;
* relative ops decoded from a segment of over 256 distinct dims own their shape ids (past
  CPython's small-int cache);
* ``StreamPlanner.run`` encodes an item with the codes its read-ahead noted
  (``fastplan._keys.ReadAhead``): an op the read-ahead refuses is refused by the encoding with
  the error a queue gives for it alone.

That the queue shows what refimpl's shows, whatever order ops are added, read and executed in,
is checked on both twins (tests/planner/test_queue_relative_ops.py).

burn counterpart: ``crates/burn-fusion/src/stream/queue/{base,execution}.rs``.
"""

from __future__ import annotations

import gc

import pytest

import fastplan
from refimpl.devices import profile_named
from refimpl.ir import BinaryOpIr, OperationIr, UnaryOpIr
from refimpl.planner.stream.plan import PlanStep
from refimpl.planner.stream.queue import OperationQueue as ReferenceQueue
from refimpl.planner.search.strategy import BlockOptimization, Operations
from refimpl.stream import Stream

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

if fastplan.COMPILED:
    from fastplan._keys import BoundaryError
    from fuselab.workloads import build
    from fastplan.stream.processor import StreamPlanner
    from fastplan.stream.queue import OperationQueue
    from fastplan.fusers.registry import FusionRegistry


def test_steps_are_plain_untracked_plan_steps():
    """A step the queue builds equals the ``PlanStep`` built the ordinary way, prints and
    hashes like it, and is outside the cyclic collector's view."""
    from fuselab.workloads import build

    stream = build("transformer", 40)
    queue = OperationQueue()
    for index, op in enumerate(item for item in stream.items if isinstance(item, OperationIr)):
        queue.add(index, op)
    ordering = tuple(range(len(queue.global_ops)))
    queue.execute_unfused(BlockOptimization(Operations(ordering), ordering))
    (step,) = queue.steps
    built = PlanStep(step.kind, step.ops, step.fuser, step.score, step.inputs, step.outputs,
                     step.aliases, step.blocks)
    assert type(step) is PlanStep
    assert step == built and hash(step) == hash(built) and repr(step) == repr(built)
    assert not gc.is_tracked(step)
    del queue, step
    gc.collect()


def test_relative_shapes_past_the_small_int_cache_are_refimpls():
    """A segment of over 256 distinct dimensions: the relative ops' shapes hold shape ids past
    CPython's small-int cache, which the queue's decoding once freed while the shape tuple held
    them (read back as whatever took their memory)."""
    from tests.planner.fuser_ops import NI, op, t
    ops = [op("Float.Exp", input=t(2 * k, (2, 1000 + k)), out=t(2 * k + 1, (2, 1000 + k), NI))
           for k in range(300)]
    twin, reference = OperationQueue(), ReferenceQueue()
    for index, operation in enumerate(ops):
        twin.add(index, operation)
        reference.add(index, operation)
    theirs = list(reference.operations())
    for _ in range(3):
        ours = list(twin.operations())
        junk = [10**6 + j for j in range(5000)]  # reuse what was freed, if anything was
        gc.collect()
        assert ours == theirs
        del junk


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
