"""The plan-cache path's per-op work: the policy reads an op's key in the encoding's buffer.

``StreamPlanner.run`` and ``register`` queue an op with ``OperationQueue.add_op_updating``: the
key is encoded into a buffer, the policy walks its plan trie on the buffer
(``Policy.update_buf``), and the queue keeps the trie's own ``bytes`` when the walk found the
key there (a fresh one otherwise). The drain after a processor's execution does the same for
the ops it leaves pending (``OperationQueue.execute_plan_updating``: the policy is reset and
updated on each key left, where the processor's ``_reset`` did it afterwards from a new
``bytes`` per op).

These tests drive both twins through those paths: keys found and not found in the trie, a
warm planner fed op by op, an op the boundary refuses (the policy must not have seen it), the
policy after every drain against refimpl's (cold and warm planners, streams whose partial
drains leave ops), the pending keys against those a new queue makes, and
``OperationQueue.execute`` (no policy) with the keys it made before. (Whole passes with syncs
between drains are checked on both twins: tests/planner/test_processor_iterations.py.)

burn counterpart: ``crates/burn-fusion/src/stream/execution/policy.rs`` (``Policy::update``),
``crates/burn-fusion/src/stream/execution/processor.rs`` (``Processor::reset``) and
``crates/burn-fusion/src/stream/queue/{base,execution}.rs`` (``OperationQueue::add``,
``OperationQueue::execute``).
"""

from __future__ import annotations

import pytest

import fastplan
from refimpl.ir import OperationIr, UnaryOpIr
from tests.fastplan.helpers import planners

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

if fastplan.COMPILED:
    from fastplan._keys import BoundaryError
    from fuselab.workloads import build, shifted
    from fastplan.stream.cache import ExecutionPlanStore
    from fastplan.stream.queue import OperationQueue


def _fresh_keys(queue) -> list:
    """The keys a new queue gives the same pending ops (made, not taken from a trie)."""
    fresh = OperationQueue()
    for index, op in zip(queue.indices, queue.global_ops):
        fresh.add(index, op)
    return list(fresh.keys)


def _policy_state(policy) -> tuple:
    return (policy.num_operations, policy.found,
            [c.target for c in policy.candidates],
            [(a.plan_id, a.size, len(a.triggers)) for a in policy.availables])


def _give(index, item, *planners) -> None:
    """Register the op ``item`` in each planner, or sync its tensors."""
    for planner in planners:
        if isinstance(item, OperationIr):
            planner.register(index, item)
        else:
            planner.sync(item.tensors)


def _feed(twin, reference, items, *, check=True) -> int:
    """Register ``items`` in both planners; after each, compare (when ``check``). Returns how
    many drains left ops pending."""
    partial = 0
    for index, item in enumerate(items):
        before = len(twin.queue.steps)
        _give(index, item, twin, reference)
        if len(twin.queue.steps) != before and twin.queue.global_ops:
            partial += 1
        if check:
            assert twin.queue.steps == reference.queue.steps
            assert len(twin.queue.keys) == len(reference.queue.global_ops)
            assert list(twin.queue.keys) == _fresh_keys(twin.queue)
            assert _policy_state(twin.processor.policy) == \
                _policy_state(reference.processor.policy)
            assert twin.processor.explorer.num_deferred == \
                reference.processor.explorer.num_deferred
    return partial


@pytest.mark.parametrize("workload", ["transformer", "mixed", "elementwise"])
def test_register_op_by_op_on_a_warm_planner_matches_refimpl(workload):
    """A warm planner fed the next iteration op by op (``register``): after every op the
    steps so far, the pending ops' keys (trie objects or fresh ones, equal to a new queue's)
    and the policy's state are refimpl's."""
    stream = build(workload, 40)
    nxt = shifted(stream, 10 * (len(stream.items) + 1))
    twin, reference = planners()
    assert twin.run(stream) == reference.run(stream)
    hits = twin.num_cache_hits
    for index, item in enumerate(nxt.items):
        _give(index, item, twin, reference)
        assert twin.queue.steps == reference.queue.steps
        assert list(twin.queue.keys) == _fresh_keys(twin.queue)
        assert len(twin.queue.keys) == len(reference.queue.global_ops)
        assert twin.processor.policy.num_operations == reference.processor.policy.num_operations
        assert twin.processor.policy.found == reference.processor.policy.found
        assert [c.target for c in twin.processor.policy.candidates] == \
            [c.target for c in reference.processor.policy.candidates]
    twin.drain()
    reference.drain()
    assert twin.queue.steps == reference.queue.steps
    assert twin.num_cache_hits > hits


@pytest.mark.parametrize("offset", [0, 2**64], ids=["table", "past-int64"])
def test_keys_found_in_the_trie_are_equal_to_made_ones(offset):
    """After a warm iteration stopped before its last drain, each pending key equals the key a
    new queue makes for the op, whether the policy found it in its trie or not; the steps of
    the whole iteration are refimpl's."""
    stream = shifted(build("transformer", 60), offset)
    nxt = shifted(stream, 10 * (len(stream.items) + 1))
    twin, reference = planners()
    assert twin.run(stream) == reference.run(stream)
    cut = len(nxt.items) - 7
    for index, item in enumerate(nxt.items[:cut]):
        _give(index, item, twin, reference)
    assert twin.queue.global_ops, "the cut leaves ops pending"
    assert list(twin.queue.keys) == _fresh_keys(twin.queue)
    twin.drain()
    reference.drain()
    assert twin.queue.steps == reference.queue.steps


def test_an_op_the_boundary_refuses_leaves_queue_and_policy_as_they_were():
    """An op the encoding refuses raises before the policy sees it: the queue and the policy
    stay as they were, and the planner goes on as refimpl's does without the op."""
    stream = build("transformer", 30)
    ops = [item for item in stream.items if isinstance(item, OperationIr)]
    twin, reference = planners()
    for index, op in enumerate(ops[:10]):
        twin.register(index, op)
        reference.register(index, op)
    before = (len(twin.queue.keys), twin.processor.policy.num_operations,
              twin.processor.policy.found)
    bad = OperationIr(ops[10].op, UnaryOpIr.__new__(UnaryOpIr)) \
        if type(ops[10].desc) is not UnaryOpIr else OperationIr(ops[10].op, object())
    with pytest.raises(BoundaryError):
        twin.register(10, bad)
    assert (len(twin.queue.keys), twin.processor.policy.num_operations,
            twin.processor.policy.found) == before
    for index, op in enumerate(ops[10:], start=10):
        twin.register(index, op)
        reference.register(index, op)
    twin.drain()
    reference.drain()
    assert twin.queue.steps == reference.queue.steps


@pytest.mark.parametrize("workload", ["transformer", "mixed", "elementwise"])
def test_policy_after_each_drain_matches_refimpl_cold_and_warm(workload):
    """A cold planner (explorations, stored plans executed) and then a warm one (cache hits),
    fed op by op: after every op the policy, the explorer's deferred count and the pending
    keys are refimpl's; transformer's drains leave ops pending."""
    stream = build(workload, 40)
    nxt = shifted(stream, 10 * (len(stream.items) + 1))
    twin, reference = planners()
    cold = _feed(twin, reference, stream.items)
    twin.drain()
    reference.drain()
    hits = twin.num_cache_hits
    warm = _feed(twin, reference, nxt.items)
    twin.drain()
    reference.drain()
    assert twin.queue.steps == reference.queue.steps
    assert twin.num_cache_hits > hits
    if workload == "transformer":
        assert cold > 0 and warm > 0, "partial drains were exercised"


def test_keys_left_by_a_drain_are_the_tries_objects_on_a_hit():
    """On a warm iteration, a key left pending by a drain that the plan trie holds is equal to
    a new queue's; the policy then advises as refimpl's does to the end."""
    stream = build("transformer", 60)
    nxt = shifted(stream, 10 * (len(stream.items) + 1))
    twin, reference = planners()
    assert twin.run(stream) == reference.run(stream)
    assert twin.run(nxt) == reference.run(nxt)
    third = shifted(nxt, 10 * (len(nxt.items) + 1))
    assert _feed(twin, reference, third.items) > 0
    twin.drain()
    reference.drain()
    assert twin.queue.steps == reference.queue.steps


def test_queue_execute_without_a_policy_keeps_its_keys():
    """``OperationQueue.execute`` (no processor, no policy) encodes the ops left as before: the
    keys equal a new queue's, and the queue can execute again."""
    stream = build("transformer", 30)
    twin, _ = planners()
    twin.run(stream)
    store = twin.store
    assert len(store) > 0
    ops = [item for item in stream.items if isinstance(item, OperationIr)]
    plan = store.get(0)
    size = len(plan.optimization.ordering)
    queue = OperationQueue()
    for index, op in enumerate(ops[:size + 3]):
        queue.add(index, op)
    queue.execute(0, store)
    assert len(queue.global_ops) == 3
    assert list(queue.keys) == _fresh_keys(queue)
    assert isinstance(store, ExecutionPlanStore)


