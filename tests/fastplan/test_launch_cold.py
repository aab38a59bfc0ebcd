"""First-seen launch planning's C-level shortcuts (fastplan.launch.launch, fastplan.launch.handles):
each gives refimpl's answer.

* the extents guard keeps its verdict on a live handle (``_Live.extent_fits``): a handle
  registered later for the same tensor is checked again;
* a ``fastplan.launch.handles.Memory`` fills its handles' slots directly: equal to refimpl's
  ``Handle`` built by its constructor, contiguous strides included;
* the stream walk's launch (``plan_launch_walk``, through ``launch_plan_stream``) keeps a
  trace's tuples of ops instead of copies and builds no frozen plan: its steps equal refimpl's
  (the golden streams are checked in test_launch_stream.py; here a matmul stream, whose fused
  launch reads the vector sizes and strides from the planning state).
"""

from __future__ import annotations

import pytest

import fastplan

if not fastplan.COMPILED:
    pytest.skip("fastplan is not compiled", allow_module_level=True)

from refimpl.dtypes import DType  # noqa: E402
from refimpl.ir import TensorIr, TensorStatus  # noqa: E402
from refimpl.planner.launch.handles import Handle  # noqa: E402
from refimpl.planner.launch.handles import Memory as RefMemory  # noqa: E402


def _context(tid: int, shape: tuple):
    from fastplan.launch.launch import FusedContext

    return FusedContext({0: TensorIr(tid, shape, DType.F32, TensorStatus.ReadOnly)}, {}, ())


def test_extents_verdict_follows_the_live_handle() -> None:
    """A handle found to fit is not checked again; the next handle of the tensor is."""
    from fastplan.launch.handles import Memory
    from fastplan.launch.launch import _extents_fit

    memory = Memory()
    memory.register(7, memory.alloc((2, 3), DType.F32))
    context = _context(7, (2, 3))
    assert _extents_fit(context, memory) is True
    assert _extents_fit(context, memory) is True  # the kept verdict
    memory.register(7, memory.alloc((2, 3), DType.F32, (2**61, 1)))  # 2**61 * 2 = 2**62
    assert _extents_fit(context, memory) is False
    memory.register(7, memory.alloc((2, 3), DType.F32, (3, 1)))
    assert _extents_fit(context, memory) is True
    memory.remove(7)
    assert _extents_fit(context, memory) is True  # no live handle: the dims alone


def test_extents_verdict_survives_a_trial_rolled_back() -> None:
    """An entry put back by ``undo_trial`` is the one checked before; a trial's own entries
    are gone with it."""
    from fastplan.launch.handles import Memory
    from fastplan.launch.launch import _extents_fit

    memory = Memory()
    memory.register(4, memory.alloc((5,), DType.F32))
    context = _context(4, (5,))
    assert _extents_fit(context, memory) is True
    memory.begin_trial()
    memory.register(4, memory.alloc((5,), DType.F32, (2**62,)))
    assert _extents_fit(context, memory) is False
    memory.undo_trial()
    assert _extents_fit(context, memory) is True


@pytest.mark.parametrize("shape, strides", [
    ((2, 3, 4), None),
    ((), None),
    ((1,), None),
    ((2**31, 2**31 - 1, 3), None),  # products past the C bound: Python ints
    ((4, 5), (1, 4)),
])
def test_alloc_builds_refimpls_handle(shape, strides) -> None:
    from fastplan.launch.handles import Memory

    fast, ref = Memory(), RefMemory(with_values=False)
    handle, expected = fast.alloc(shape, DType.F16, strides), ref.alloc(shape, DType.F16, strides)
    assert type(handle) is Handle
    assert handle == expected
    assert all(type(s) is int for s in handle.strides)
    assert fast.sizes == ref.sizes


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
    from fastplan.fusers.registry import FusionRegistry as FastRegistry
    from fastplan.launch.launch_stream import LaunchMemo, launch_plan_stream
    from fastplan.stream.processor import StreamPlanner as FastPlanner
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
