"""The plan-cache path's per-op work: the policy reads an op's key in the encoding's buffer.

``StreamPlanner.run`` and ``register`` queue an op with ``OperationQueue.add_op_updating``: the
key is encoded into a buffer, the policy walks its plan trie on the buffer
(``Policy.update_buf``), and the queue keeps the trie's own ``bytes`` when the walk found the
key there (a fresh one otherwise). These tests drive both twins through that path: keys found
and not found in the trie, syncs between them, a warm planner fed op by op, and an op the
boundary refuses (the policy must not have seen it).

burn counterpart: ``crates/burn-fusion/src/stream/execution/policy.rs`` (``Policy::update``)
and ``crates/burn-fusion/src/stream/queue/base.rs`` (``OperationQueue::add``).
"""

from __future__ import annotations

import pytest

import fastplan
from refimpl.devices import profile_named
from refimpl.ir import OperationIr, Sync, UnaryOpIr
from refimpl.planner.processor import StreamPlanner as ReferencePlanner
from refimpl.planner.registry import FusionRegistry as ReferenceRegistry

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

if fastplan.COMPILED:
    from fastplan._keys import BoundaryError
    from fastplan.bench import build, shifted
    from fastplan.processor import StreamPlanner
    from fastplan.queue import OperationQueue
    from fastplan.registry import FusionRegistry


def _planners() -> tuple:
    profile = profile_named("metal")
    return (StreamPlanner(FusionRegistry().fusers(profile)),
            ReferencePlanner(ReferenceRegistry().fusers(profile)))


def _fresh_keys(queue) -> list:
    """The keys a new queue gives the same pending ops (made, not taken from a trie)."""
    fresh = OperationQueue()
    for index, op in zip(queue.indices, queue.global_ops):
        fresh.add(index, op)
    return list(fresh.keys)


@pytest.mark.parametrize("workload", ["transformer", "mixed", "elementwise"])
def test_register_op_by_op_on_a_warm_planner_matches_refimpl(workload):
    """A warm planner fed the next iteration op by op (``register``): after every op the
    steps so far, the pending ops' keys (trie objects or fresh ones, equal to a new queue's)
    and the policy's state are refimpl's."""
    stream = build(workload, 40)
    nxt = shifted(stream, 10 * (len(stream.items) + 1))
    twin, reference = _planners()
    assert twin.run(stream) == reference.run(stream)
    hits = twin.num_cache_hits
    for index, item in enumerate(nxt.items):
        if isinstance(item, OperationIr):
            twin.register(index, item)
            reference.register(index, item)
        else:
            twin.sync(item.tensors)
            reference.sync(item.tensors)
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
    twin, reference = _planners()
    assert twin.run(stream) == reference.run(stream)
    cut = len(nxt.items) - 7
    for index, item in enumerate(nxt.items[:cut]):
        if isinstance(item, OperationIr):
            twin.register(index, item)
            reference.register(index, item)
        elif isinstance(item, Sync):
            twin.sync(item.tensors)
            reference.sync(item.tensors)
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
    twin, reference = _planners()
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


def test_run_twice_and_with_syncs_matches_refimpl():
    """``run`` over an iteration, the next one (cache hits: keys from the trie) and one with a
    sync after every Drop: refimpl's steps each time."""
    stream = build("mixed", 50)
    nxt = shifted(stream, 10 * (len(stream.items) + 1))
    items = []
    for item in nxt.items:
        items.append(item)
        if isinstance(item, OperationIr) and item.op.name.endswith("Drop"):
            items.append(Sync(()))
    synced = type(nxt)(nxt.inputs, tuple(items))
    twin, reference = _planners()
    for s in (stream, nxt, synced, nxt):
        assert twin.run(s) == reference.run(s)

