"""A planner kept for the life of a runtime: ``StreamPlanner.forget_steps`` keeps it bounded.

A runtime plans iteration after iteration with one planner (its plan cache is the point) and
launch-plans each iteration's steps. Both twins keep every executed step, with its context and
the ops it ran, until ``forget_steps`` drops them. Without it a warm planner retained about
470 bytes per op planned (transformer, 10k ops per iteration, tracemalloc, the ops it kept
alive included); with it, nothing.
"""

from __future__ import annotations

import gc
import tracemalloc

import pytest

import fastplan
from refimpl.devices import profile_named

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

if fastplan.COMPILED:
    from fuselab.workloads import WORKLOADS, build, shifted
    from fastplan.launch.launch_memo import LaunchMemo
    from fastplan.stream.processor import StreamPlanner
    from fastplan.fusers.registry import FusionRegistry
else:  # pragma: no cover - the module is skipped
    WORKLOADS = {}


def _iterations(workload: str, size: int, count: int):
    stream = build(workload, size)
    offset = 10 * (max(stream.inputs, default=0) + len(stream.items) + 1)
    return [shifted(stream, k * offset) for k in range(count)]


def _fast_runtime(profile, forget: bool):
    planner, memo = StreamPlanner(FusionRegistry().fusers(profile)), LaunchMemo()

    def step(stream):
        start = len(planner.queue.steps)
        planner.run(stream)
        launched = planner.launch_planned(stream, start, profile, memo)
        if forget:
            planner.forget_steps()
        return launched

    return planner, step


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_a_forgetting_runtime_plans_like_refimpl(workload: str) -> None:
    from refimpl.interpreter import launch_plan_stream
    from refimpl.planner.stream.processor import StreamPlanner as RefPlanner
    from refimpl.planner.fusers.registry import FusionRegistry as RefRegistry

    profile = profile_named("metal")
    _, fast_step = _fast_runtime(profile, forget=True)
    reference = RefPlanner(RefRegistry().fusers(profile))
    for stream in _iterations(workload, 300, 3):
        reference.run(stream)
        expected = launch_plan_stream(stream, reference.queue.executed, profile)
        assert reference.launch_planned(stream, 0, profile) == expected
        reference.forget_steps()
        assert fast_step(stream) == expected


def _retained_per_op(forget: bool) -> float:
    """Bytes a warm runtime's planner keeps per op planned, iterations 3 to 6."""
    iterations = _iterations("transformer", 1000, 6)
    planner, step = _fast_runtime(profile_named("metal"), forget)
    for stream in iterations[:2]:
        step(stream)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for stream in iterations[2:]:
            step(stream)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    ops = sum(len(stream.items) for stream in iterations[2:])
    del planner
    return (after - before) / ops


def test_forget_steps_keeps_a_warm_planner_from_growing() -> None:
    kept = _retained_per_op(forget=False)
    # the streams are alive throughout: what grows is each op's history entry, and each step
    # with its record and context (167 bytes per op when written)
    assert kept > 100
    assert _retained_per_op(forget=True) < 8, kept


