"""The planner for a runtime (``IncrementalPlanner``, refimpl's and fastplan's twin): ops added
one by one give, concatenated, the steps of a whole-stream run, and a repeated iteration is
served from the plan cache."""

from __future__ import annotations

import pytest

import fastplan
from fuselab.workloads import WORKLOADS, build, shifted
from refimpl.ir import Sync
from refimpl.planner.fusers.registry import FusionRegistry
from refimpl.planner.stream.incremental import IncrementalPlanner as RefIncremental
from refimpl.planner.stream.processor import StreamPlanner
from refimpl.devices import profile_named

FastIncremental = fastplan.planner_module("stream.incremental").IncrementalPlanner
TWINS = [RefIncremental, FastIncremental]


def _fed(planner, stream) -> list:
    """Every item added one by one, then the iteration ended: all steps, and which item (or
    the end, ``None``) gave each."""
    steps, given_by = [], []
    for index, item in enumerate(stream.items):
        got = planner.add(item)
        steps.extend(got)
        given_by.extend([index] * len(got))
    last = planner.end_iteration()
    steps.extend(last)
    given_by.extend([None] * len(last))
    return steps, given_by


@pytest.mark.parametrize("twin", TWINS, ids=["refimpl", "fastplan"])
@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_incremental_steps_are_the_whole_run(twin, workload):
    stream = build(workload, 150)
    whole = StreamPlanner(FusionRegistry().fusers(profile_named("metal"))).run(stream)
    steps, given_by = _fed(twin("metal"), stream)
    assert steps == whole
    # a step comes back no later than the item it needs: never before its last op is added
    for step, index in zip(steps, given_by):
        assert index is None or max(step.ops) <= index
    # every step handed back is forgotten by the planner (nothing piles up)
    planner = twin("metal")
    _fed(planner, stream)
    assert not planner.planner.queue.steps


@pytest.mark.parametrize("twin", TWINS, ids=["refimpl", "fastplan"])
def test_incremental_sync_on_pending_result_returns_its_steps(twin):
    stream = build("elementwise", 60)
    planner = twin("metal")
    syncs = [i for i, item in enumerate(stream.items) if isinstance(item, Sync)]
    got = []
    for item in stream.items[:syncs[0] + 1]:
        got.extend(planner.add(item))
    covered = {op for step in got for op in step.ops}
    assert covered == {i for i in range(syncs[0]) if i not in syncs}
    assert planner.flush() == ()


@pytest.mark.parametrize("twin", TWINS, ids=["refimpl", "fastplan"])
@pytest.mark.parametrize("workload", ["transformer", "elementwise"])
def test_incremental_repeated_iteration_is_served_from_the_cache(twin, workload):
    stream = build(workload, 120)
    planner = twin("webgpu-default")
    first, _ = _fed(planner, stream)
    searches = planner.num_explorations
    hits = planner.num_cache_hits
    nxt = shifted(stream, 100_000)
    second, _ = _fed(planner, nxt)
    assert planner.num_explorations == searches
    assert planner.num_cache_hits > hits
    assert [(s.kind, s.ops, s.fuser) for s in second] == [(s.kind, s.ops, s.fuser)
                                                          for s in first]


def test_incremental_twins_agree_step_by_step():
    stream = build("mixed", 200)
    planners = [twin("metal") for twin in TWINS]
    for item in stream.items:
        ref, fast = (planner.add(item) for planner in planners)
        assert ref == fast
    assert planners[0].end_iteration() == planners[1].end_iteration()
