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
    from fuselab.workloads import WORKLOADS, build, shifted
    from fastplan.launch.launch_memo import LaunchMemo
    from fastplan.planner import _launch_planned
    from fastplan.stream.processor import StreamPlanner
    from fastplan.fusers.registry import FusionRegistry
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


# --- plan(): one pause for the whole call --------------------------------------------------------


def test_plan_runs_no_collection_and_restores_the_collector() -> None:
    """``fastplan.planner.plan`` keeps the collector paused from the search through launch
    planning: with a threshold every allocation crosses, no collection starts inside the call
    (between the search and launch planning one did: the search's live objects were walked for
    nothing), and the collector is enabled again afterwards."""
    from fastplan.planner import plan

    stream = build("mixed", 300)
    starts = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            starts.append(info["generation"])

    thresholds = gc.get_threshold()
    gc.callbacks.append(count)
    gc.set_threshold(10)
    try:
        gc.collect()
        starts.clear()
        result = plan(stream, "metal")
        inside = len(starts)  # allocates no container: the next allocation would collect
        enabled = gc.isenabled()
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(count)
    assert result.steps
    assert inside == 0, f"{inside} collections inside plan()"
    assert enabled


def test_plan_leaves_a_paused_collector_paused() -> None:
    from fastplan.planner import plan

    gc.disable()
    try:
        plan(build("elementwise", 200), "metal")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_plan_restores_the_collector_when_it_raises() -> None:
    from fastplan.planner import plan

    with pytest.raises(AttributeError):  # no ``items``: refimpl's planner raises the same
        plan(object(), "metal")
    assert gc.isenabled()


def test_a_failing_search_restores_the_collector() -> None:
    """``StreamPlanner.run`` pauses the collector only once it can run: a stream without items
    (read before the pause) and an item outside fastplan's typed form (raised inside it) both
    leave it enabled."""
    from fastplan._keys import BoundaryError
    from refimpl.stream import Stream

    planner = StreamPlanner(FusionRegistry().fusers(profile_named("metal")))
    with pytest.raises(AttributeError):
        planner.run(object())
    assert gc.isenabled()
    with pytest.raises(BoundaryError):
        planner.run(Stream(items=("not an op",), inputs={}))
    assert gc.isenabled()


def test_refimpl_fallback_runs_with_the_collector_on(monkeypatch) -> None:
    """A stream outside fastplan's boundary goes to refimpl's planner after the pause: that
    planner is refimpl's readable code, not written to be free of reference cycles."""
    import fastplan.planner as fast
    from refimpl.stream import Stream

    seen = []
    monkeypatch.setattr(fast, "_reference_plan",
                        lambda *args: seen.append(gc.isenabled()) or "refimpl's answer")
    assert fast.plan(Stream(items=("not an op",), inputs={}), "metal") == "refimpl's answer"
    assert seen == [True]
    assert gc.isenabled()
