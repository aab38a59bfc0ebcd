"""The launch walk's fused steps of each fuser (``fastplan.launch.execute.launch_plan_stream``,
with and without its ``LaunchMemo``), against refimpl's walk.

* the walk reads a ``ReduceBroadcasted`` optimization's main trace and its fallbacks' op
  counts as fields: a stream of softmax and layer norms plans as refimpl's, with and without
  the launch memo;
* the walk's launch (``plan_launch_walk``) keeps a trace's tuples of ops instead of copies and
  builds no frozen plan: a matmul stream, whose fused launch reads the vector sizes and
  strides from the planning state, plans as refimpl's (the golden streams are checked in
  test_launch_stream.py);
* a transformer's executions replayed from the memo, keys read through ``live_find``.
"""

from __future__ import annotations

import pytest

import fastplan

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")


def _norm_stream():
    """Softmax and layer-norm shaped steps (reductions broadcast back): ReduceBroadcasted."""
    from refimpl.frontend import Session

    s = Session(executor=None)
    x = s.random((4, 16), seed=0)
    for _ in range(3):
        m = x.max_dim(1)
        e = (x - m).exp()
        x = e / e.sum_dim(1)
        mean = x.mean_dim(1)
        x = (x - mean) * 2.0
    s.sync(x)
    return s.close()


def test_reduce_broadcasted_walk_matches_refimpl() -> None:
    from fastplan.launch.execute import launch_plan_stream
    from fastplan.launch.launch_memo import LaunchMemo
    from fastplan.stream.processor import StreamPlanner as FastPlanner
    from fastplan.fusers.registry import FusionRegistry as FastRegistry
    from refimpl.devices import PRESETS
    from refimpl.interpreter import launch_plan_stream as ref_launch_plan_stream
    from refimpl.planner import StreamPlanner as RefPlanner
    from refimpl.planner.fusers.registry import FusionRegistry as RefRegistry

    stream = _norm_stream()
    for profile in PRESETS.values():
        ref = RefPlanner(RefRegistry().fusers(profile))
        ref.run(stream)
        expected = ref_launch_plan_stream(stream, ref.queue.executed, profile)
        fast = FastPlanner(FastRegistry().fusers(profile))
        fast.run(stream)
        if profile.name == "metal":
            assert any(step.fuser == "ReduceBroadcasted" for step in expected)
        memo = LaunchMemo()
        assert launch_plan_stream(stream, fast.queue.executed, profile) == expected
        assert launch_plan_stream(stream, fast.queue.executed, profile, memo) == expected
        assert launch_plan_stream(stream, fast.queue.executed, profile, memo) == expected


def _matmul_stream(transposed: bool, move: bool):
    """x @ w + b; ``w`` contiguous or a transposed view (its own step), moved or held."""
    from refimpl.frontend import Session

    s = Session(executor=None)
    x, b = s.random((8, 16), seed=0), s.random((8, 8), seed=2)
    if transposed:
        w = s.random((8, 16), seed=1).swap_dims(0, 1)
        s.sync(w)
    else:
        w = s.random((16, 8), seed=1)
    y = x @ (w.move() if move else w) + b
    s.sync(y)
    return s.close()


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("move", [False, True])
def test_matmul_stream_walk_matches_refimpl(transposed: bool, move: bool) -> None:
    """The walk's fused matmul launch (or its fallback, by what burn's matmul refuses: vector
    sizes and strides read from the planning state) plans as refimpl's."""
    from fastplan.launch.execute import launch_plan_stream
    from fastplan.launch.launch_memo import LaunchMemo
    from fastplan.stream.processor import StreamPlanner as FastPlanner
    from fastplan.fusers.registry import FusionRegistry as FastRegistry
    from refimpl.devices import PRESETS
    from refimpl.interpreter import launch_plan_stream as ref_launch_plan_stream
    from refimpl.planner import StreamPlanner as RefPlanner
    from refimpl.planner.fusers.registry import FusionRegistry as RefRegistry

    stream = _matmul_stream(transposed, move)
    for profile in PRESETS.values():
        ref = RefPlanner(RefRegistry().fusers(profile))
        ref.run(stream)
        expected = ref_launch_plan_stream(stream, ref.queue.executed, profile)
        assert any(step.fuser == "Matmul" for step in expected)
        fast = FastPlanner(FastRegistry().fusers(profile))
        fast.run(stream)
        assert launch_plan_stream(stream, fast.queue.executed, profile) == expected
        assert launch_plan_stream(stream, fast.queue.executed, profile, LaunchMemo()) == expected


def test_memo_walk_matches_refimpl_on_a_transformer() -> None:
    """Many executions replayed from the memo (keys read through ``live_find``), with and
    without a warm memo, against refimpl's walk."""
    from fuselab import workloads
    from fastplan.launch.execute import launch_plan_stream
    from fastplan.launch.launch_memo import LaunchMemo
    from fastplan.stream.processor import StreamPlanner as FastPlanner
    from fastplan.fusers.registry import FusionRegistry as FastRegistry
    from refimpl.devices import profile_named
    from refimpl.interpreter import launch_plan_stream as ref_launch_plan_stream

    profile = profile_named("metal")
    stream = workloads.build("transformer", 300)
    fast = FastPlanner(FastRegistry().fusers(profile))
    fast.run(stream)
    executed = fast.queue.executed
    expected = ref_launch_plan_stream(stream, executed, profile)
    memo = LaunchMemo()
    assert launch_plan_stream(stream, executed, profile, memo) == expected
    assert memo.hits > 0
    assert launch_plan_stream(stream, executed, profile, memo) == expected
