"""Shared helpers of the fastplan tests: the comparisons of fastplan's compiled names with
refimpl that several test modules make (stream planners and queues of both, launch planning
with fastplan's memo). Helpers of tests that run on both twins are in tests/planner/helpers.py.

Compiled-only names are imported when fastplan is compiled; the modules that use them skip
otherwise.
"""

from __future__ import annotations

import fastplan
from refimpl.devices import profile_named
from refimpl.dtypes import DType
from refimpl.interpreter import launch_plan_stream as reference_launch_plan_stream
from refimpl.ir import OperationIr, TensorIr, TensorStatus, UnaryOpIr
from refimpl.ops import op_named
from refimpl.planner import StreamPlanner as RefStreamPlanner
from refimpl.planner.stream.queue import OperationQueue as ReferenceQueue
from refimpl.planner.fusers.registry import FusionRegistry as RefFusionRegistry
from refimpl.planner.search.strategy import BlockOptimization, Operations
from refimpl.stream import Stream

if fastplan.COMPILED:
    from fastplan.launch.execute import launch_plan_stream
    from fastplan.launch.launch_memo import LaunchMemo
    from fastplan.planner import _launch_planned
    from fastplan.stream.processor import StreamPlanner as FastStreamPlanner
    from fastplan.stream.queue import OperationQueue
    from fastplan.fusers.registry import FusionRegistry as FastFusionRegistry


# --- stream planners and queues ----------------------------------------------------------------


def planners() -> tuple:
    """A fastplan and a refimpl ``StreamPlanner`` for the metal profile."""
    profile = profile_named("metal")
    return (FastStreamPlanner(FastFusionRegistry().fusers(profile)),
            RefStreamPlanner(RefFusionRegistry().fusers(profile)))


def _exp(tid: int, shape: tuple) -> OperationIr:
    return OperationIr(op_named("Float.Exp"), UnaryOpIr(
        TensorIr(tid, shape, DType.F32, TensorStatus.ReadOnly),
        TensorIr(tid + 1, shape, DType.F32, TensorStatus.NotInit)))


def check_segments(segments, drain_after: int) -> None:
    """Queue one ``Exp`` per shape of each segment on both queues, comparing the relative
    ops and assigned shape counts after each op, then drain the first ``drain_after`` ops
    unfused and compare the steps."""
    twin, reference = OperationQueue(), ReferenceQueue()
    index = 0
    for shapes in segments:
        for shape in shapes:
            op = _exp(10 * index, shape)
            twin.add(index, op)
            reference.add(index, op)
            index += 1
            assert list(twin.operations()) == list(reference.operations())
            assert list(twin.shapes_assigned) == list(reference.shapes_assigned)
        count = min(drain_after, len(reference.global_ops))
        ordering = tuple(range(count))
        twin.execute_unfused(BlockOptimization(Operations(ordering), ordering))
        reference.execute_unfused(BlockOptimization(Operations(ordering), ordering))
        assert list(twin.steps) == list(reference.steps)
    assert list(twin.operations()) == list(reference.operations())


# --- launch planning ---------------------------------------------------------------------------


def outcome(call) -> tuple:
    """``("ok", steps)`` or ``("raised", exception class)``."""
    try:
        return ("ok", call())
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return ("raised", type(exc))


def reference(stream: Stream, profile) -> tuple:
    """refimpl: a fresh planner, then the values-free interpreter walk."""

    def run():
        planner = RefStreamPlanner(RefFusionRegistry().fusers(profile))
        planner.run(stream)
        return reference_launch_plan_stream(stream, planner.queue.executed, profile)

    return outcome(run)


def fast_planner(stream: Stream, profile):
    planner = FastStreamPlanner(FastFusionRegistry().fusers(profile))
    planner.run(stream)
    return planner


def fast_plan_launched(stream: Stream, profile) -> tuple:
    """What ``fastplan.planner.plan`` runs: a fresh planner, ``_launch_planned`` from step 0
    (unfused steps without context), a fresh memo."""
    return _launch_planned(stream, fast_planner(stream, profile), 0, profile)


def fused_count(steps) -> int:
    return sum(1 for step in steps if step.kind == "fused")


def check_fast_outcomes(stream: Stream, profile) -> None:
    """fastplan's every way of launch-planning ``stream`` gives refimpl's outcome; a memo run
    a second time on the same executed steps serves every fused step."""
    __tracebackhide__ = True
    expected = reference(stream, profile)
    try:
        planner = fast_planner(stream, profile)
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        assert expected == ("raised", type(exc))
        return
    executed = planner.queue.executed
    assert outcome(lambda: launch_plan_stream(stream, executed, profile)) == expected
    memo = LaunchMemo()
    assert outcome(lambda: launch_plan_stream(stream, executed, profile, memo)) == expected
    if expected[0] == "ok":
        misses, hits = memo.misses, memo.hits
        assert misses + hits == fused_count(expected[1])
        again = outcome(lambda: launch_plan_stream(stream, executed, profile, memo))
        assert again == expected
        assert memo.misses == misses, "the second run over the same steps missed the memo"
        assert memo.hits == hits + fused_count(expected[1])
    else:
        assert outcome(lambda: launch_plan_stream(stream, executed, profile, memo)) == expected
