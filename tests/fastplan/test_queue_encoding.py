"""fastplan's queue encodes each op as it is added and builds relative ops only when asked:
whatever order ops are added, relative ops read and steps executed in, the queue must show what
refimpl's queue shows (``refimpl/planner/stream/queue.py``).

burn counterpart: ``crates/burn-fusion/src/stream/queue/{base,execution}.rs``.
"""

from __future__ import annotations

import gc

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import fastplan
from refimpl.ir import OperationIr
from refimpl.planner.search.strategy import BlockOptimization, Operations
from refimpl.planner.stream.plan import PlanStep
from refimpl.planner.stream.queue import OperationQueue as ReferenceQueue
from refimpl.strategies import streams
from refimpl.stream import stream_to_json

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

if fastplan.COMPILED:
    from fastplan.stream.queue import OperationQueue


def _view(queue) -> tuple:
    return (list(queue.operations()), list(queue.global_ops), list(queue.indices),
            list(queue.shapes_assigned), list(queue.steps))


@given(stream=streams(max_ops=12), data=st.data())
def test_relative_ops_read_between_adds_and_executions_match_refimpl(stream, data):
    """Relative ops are read (or not) after any add, and a leading part executed unfused at
    any point: both queues show the same pending ops, relative ops and steps throughout."""
    note(stream_to_json(stream))
    ops = [item for item in stream.items if isinstance(item, OperationIr)]
    twin, reference = OperationQueue(), ReferenceQueue()
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
