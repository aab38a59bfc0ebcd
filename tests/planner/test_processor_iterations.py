"""A planner run again and again (``processor.StreamPlanner.run``), on refimpl and on fastplan
(the ``planner_impl`` fixture): each pass gives refimpl's steps.

Passes of other lengths (positions past 256), any stream the strategy makes planned several
times, items given as a list, the next iteration served from the plan cache (ids in the id
table and past int64), syncs between the ops and the same op object at several positions,
syncs between drains (the policy's state after each pass is refimpl's too), and one stream of
20k ops.
fastplan's ``run`` hands each op its stream position as an int it made on an earlier pass (a
warm planner keeps them), reads items ahead (``fastplan._keys.ReadAhead``, an op's tensor
fields by the offsets its struct lists), and on a cache hit keeps less per op than refimpl.

burn counterpart: ``crates/burn-fusion/src/stream/queue/{base,execution}.rs``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from fuselab.workloads import build, shifted
from refimpl.devices import profile_named
from refimpl.ir import OperationIr, Sync
from refimpl.strategies import streams
from refimpl.stream import Stream, stream_to_json
from tests.planner.helpers import planners


def test_passes_of_other_lengths_give_refimpls_steps(planner_impl):
    """A short pass, a longer one (positions past 256, some made on this pass), then the short
    one again: each pass's steps are refimpl's, their op positions included."""
    twin, reference = planners(planner_impl)
    short = build("mixed", 40)
    long = shifted(build("mixed", 400), 10 * (len(short.items) + 1))
    assert len(long.items) > 300
    for stream in (short, long, shifted(short, 20 * (len(long.items) + 1)), long):
        steps = twin.run(stream)
        assert steps == reference.run(stream)
        assert max(i for step in steps for i in step.ops) == max(
            i for i, item in enumerate(stream.items) if isinstance(item, OperationIr))


@settings(max_examples=60)
@given(stream=streams(max_ops=14), passes=st.integers(2, 3))
def test_any_stream_planned_again_matches_refimpl(planner_impl, stream, passes):
    """Any stream the strategy makes, planned several times by one warm planner (the read-ahead
    reads every operand struct's tensor fields; later passes take the positions made before)."""
    note(stream_to_json(stream))
    twin, reference = planners(planner_impl)
    for _ in range(passes):
        assert twin.run(stream) == reference.run(stream)


def test_a_stream_that_is_no_tuple_matches_refimpl(planner_impl):
    """Items given as a list (no read-ahead) then as a tuple: refimpl's steps both times."""
    stream = build("mixed", 60)
    twin, reference = planners(planner_impl)
    as_list = Stream(stream.inputs, list(stream.items))
    assert twin.run(as_list) == reference.run(as_list)
    assert twin.run(stream) == reference.run(stream)


@pytest.mark.parametrize("offset", [0, 2**64], ids=["table", "past-int64"])
@pytest.mark.parametrize("workload", ["transformer", "mixed"])
def test_cache_hits_give_refimpls_steps(planner_impl, workload, offset):
    """A warm planner's next iteration (every segment a plan-cache hit) gives refimpl's steps,
    fused inputs and outputs included, with ids in the id table and past int64 (the
    relative -> global map is then the queue's own list)."""
    stream = shifted(build(workload, 60), offset)
    nxt = shifted(stream, 10 * (len(stream.items) + 1))
    twin, reference = planners(planner_impl)
    assert twin.run(stream) == reference.run(stream)
    hits = twin.num_cache_hits
    steps = twin.run(nxt)
    assert steps == reference.run(nxt)
    assert twin.num_cache_hits > hits
    assert any(step.kind == "fused" and step.inputs for step in steps)


def test_read_ahead_over_syncs_and_repeated_items_matches_refimpl(planner_impl):
    """Syncs between the ops (read ahead, never encoded) and the same op object at several
    positions (the ring's entry is found by identity): refimpl's steps."""
    stream = build("transformer", 40)
    ops = [item for item in stream.items if isinstance(item, OperationIr)]
    items = []
    for op in ops:
        items.append(op)
        if op.op.name.endswith("Drop"):
            items.append(Sync(()))
    repeated = Stream(stream.inputs, tuple(items))
    twin, reference = planners(planner_impl)
    assert twin.run(repeated) == reference.run(repeated)
    assert twin.run(repeated) == reference.run(repeated)  # the same items again: cache hits


def test_run_twice_and_with_syncs_matches_refimpl(planner_impl):
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
    twin, reference = planners(planner_impl)
    for s in (stream, nxt, synced, nxt):
        assert twin.run(s) == reference.run(s)


def _policy_state(policy) -> tuple:
    return (policy.num_operations, policy.found,
            [c.target for c in policy.candidates],
            [(a.plan_id, a.size, len(a.triggers)) for a in policy.availables])


def test_run_with_syncs_between_drains_matches_refimpl(planner_impl):
    """``run`` with a sync after every op (every drain at a sync leaves no op, the lazy ones
    leave some): refimpl's steps over three iterations."""
    stream = build("transformer", 40)
    items = []
    for item in stream.items:
        items.append(item)
        if isinstance(item, OperationIr) and len(items) % 5 == 0:
            items.append(Sync(()))
    synced = type(stream)(stream.inputs, tuple(items))
    twin, reference = planners(planner_impl)
    for s in (stream, synced, stream, synced):
        assert twin.run(s) == reference.run(s)
        assert _policy_state(twin.processor.policy) == _policy_state(reference.processor.policy)


def test_a_long_stream_keeps_every_step_like_refimpl(planner_impl) -> None:
    """Every step and record of a stream of 20k ops, in order (past 4096 entries fastplan's
    queue history, steps and records grow by doubling their item arrays:
    ``fastplan._keys.list_append_long``)."""
    from refimpl.planner.stream.processor import StreamPlanner as RefPlanner
    from refimpl.planner.fusers.registry import FusionRegistry as RefRegistry

    profile = profile_named("metal")
    stream = build("transformer", 20_000)
    fast = planner_impl.stream.processor.StreamPlanner(
        planner_impl.fusers.registry.FusionRegistry().fusers(profile))
    fast.run(stream)
    reference = RefPlanner(RefRegistry().fusers(profile))
    reference.run(stream)
    assert len(fast.queue.steps) > 5_000  # past the first doubling (history: several)
    assert fast.queue.steps == reference.queue.steps
    assert fast.queue.executed == reference.queue.executed
