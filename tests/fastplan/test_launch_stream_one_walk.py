"""``plan()``'s launch memo, made for one walk: whole executions only (``keep_steps`` false).

``fastplan.planner._launch_planned`` without a memo walks with a ``LaunchMemo`` whose
``keep_steps`` is false: executions met again are replayed, single fused steps are neither
looked up nor stored. These tests check that such a memo gives refimpl's steps (and the
same steps as a memo keeping both), that it stores no step outcome while it replays
executions, and that records without executions are walked without a memo at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import fastplan
from refimpl.devices import PRESETS
from refimpl.interpreter import executed_steps
from refimpl.interpreter import launch_plan_stream as reference_launch_plan_stream
from refimpl.planner import StreamPlanner as RefStreamPlanner
from refimpl.planner.fusers.registry import FusionRegistry as RefFusionRegistry
from refimpl.stream import load_stream

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

if fastplan.COMPILED:
    from fuselab.workloads import build
    from fastplan.launch.execute import launch_plan_stream
    from fastplan.launch.launch_memo import LaunchMemo
    from fastplan.planner import _launch_planned, plan
    from fastplan.stream.processor import StreamPlanner as FastStreamPlanner
    from fastplan.fusers.registry import FusionRegistry as FastFusionRegistry

GOLDEN_STREAMS = sorted((Path(__file__).parents[1] / "golden" / "streams").glob("*.json"))
DEVICES = ("metal", "webgpu-default")


def _reference(stream, profile) -> tuple:
    planner = RefStreamPlanner(RefFusionRegistry().fusers(profile))
    planner.run(stream)
    return reference_launch_plan_stream(stream, planner.queue.executed, profile)


def _planner(stream, profile):
    planner = FastStreamPlanner(FastFusionRegistry().fusers(profile))
    planner.run(stream)
    return planner


def _one_walk() -> LaunchMemo:
    memo = LaunchMemo()
    memo.keep_steps = False
    return memo


def test_a_memo_keeps_steps_by_default() -> None:
    assert LaunchMemo().keep_steps is True


@pytest.mark.parametrize("workload", ["transformer", "mixed", "elementwise"])
@pytest.mark.parametrize("device", DEVICES)
def test_one_walk_memo_replays_executions_and_stores_no_step(workload: str, device: str):
    profile = PRESETS[device]
    stream = build(workload, 300)
    expected = _reference(stream, profile)
    memo = _one_walk()
    got = _launch_planned(stream, _planner(stream, profile), 0, profile, memo)
    assert got == expected
    assert len(memo) == 0, "a one-walk memo stored single steps"
    if workload == "transformer":  # its layers run the same plans on the same layouts
        assert memo.hits > 0, "no execution was replayed"
    kept = LaunchMemo()
    assert _launch_planned(stream, _planner(stream, profile), 0, profile, kept) == expected
    assert memo.hits + memo.misses <= kept.hits + kept.misses
    assert _launch_planned(stream, _planner(stream, profile), 0, profile) == expected
    assert plan(stream, profile).steps == expected


@pytest.mark.parametrize("path", GOLDEN_STREAMS, ids=lambda p: p.stem)
def test_one_walk_memo_on_golden_streams(path: Path) -> None:
    stream = load_stream(path)
    profile = PRESETS["metal"]
    expected = _reference(stream, profile)
    memo = _one_walk()
    assert _launch_planned(stream, _planner(stream, profile), 0, profile, memo) == expected
    assert len(memo) == 0


def test_steps_without_executions_walk_without_a_memo() -> None:
    """``ExecutedStep``s carry no execution: with ``keep_steps`` false nothing serves them,
    and the walk is the memo-less one."""
    stream = build("transformer", 200)
    profile, executed = executed_steps(stream, "metal")
    expected = reference_launch_plan_stream(stream, executed, profile)
    memo = _one_walk()
    assert launch_plan_stream(stream, executed, profile, memo) == expected
    assert memo.hits == memo.misses == 0
    assert len(memo) == 0
