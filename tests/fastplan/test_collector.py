"""What fastplan leaves to CPython's cyclic collector on the warm path (docs/fastplan.md,
"Garbage collection").

A runtime plans every iteration after the first from the plan cache and the launch memo. The
young-generation collection that follows such a pass walks every container the pass left
tracked, and reads every object they point at: on a 10k-op transformer pass that walk was
5-15% of the pass (8 152 tuples and lists: step op indices and global ids, the converter maps
each execution hands to launch planning, the dims tuples of the memo keys). Those containers
hold only ints, strings and frozen untracked objects, so they cannot be part of a cycle and
are created (or left) untracked. This checks that a warm pass leaves a bounded number of
tracked objects, whatever its length.
"""

from __future__ import annotations

import gc

import pytest

import fastplan
from refimpl.devices import profile_named

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

if fastplan.COMPILED:
    from fastplan.bench import WORKLOADS, build, shifted
    from fastplan.launch_stream import LaunchMemo
    from fastplan.planner import _launch_planned
    from fastplan.processor import StreamPlanner
    from fastplan.registry import FusionRegistry
else:  # pragma: no cover - the module is skipped
    WORKLOADS = {}

# a pass may leave a few fresh containers of its own (the queue's emptied maps); none per op
BOUND = 16


def young_after(call) -> int:
    """Tracked objects in the youngest generation after ``call`` (the collector paused)."""
    gc.collect()
    paused = gc.isenabled()
    gc.disable()
    try:
        call()
        return len(gc.get_objects(generation=0))
    finally:
        if paused:
            gc.enable()


@pytest.mark.parametrize("size", [500, 2000])
@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_warm_pass_leaves_the_collector_almost_nothing(workload: str, size: int) -> None:
    profile = profile_named("metal")
    stream = build(workload, size)
    nxt = shifted(stream, 10 * (max(stream.inputs, default=0) + len(stream.items) + 1))
    planner, memo = StreamPlanner(FusionRegistry().fusers(profile)), LaunchMemo()
    planner.run(stream)
    _launch_planned(stream, planner, 0, profile, memo)
    start = len(planner.queue.steps)
    searches = planner.num_explorations

    cache = young_after(lambda: planner.run(nxt))
    assert planner.num_explorations == searches  # the plan cache served the whole pass
    launch = young_after(lambda: _launch_planned(nxt, planner, start, profile, memo))
    assert cache <= BOUND, f"{workload}: the cache pass left {cache} tracked objects"
    assert launch <= BOUND, f"{workload}: launch planning from the memo left {launch}"
