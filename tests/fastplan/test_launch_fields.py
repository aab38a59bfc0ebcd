"""The launch planning paths that read ops and optimizations without a Python call, against refimpl.

* ``fastplan.launch.handles.init_targets`` passes over an op of the table that creates nothing by
  the op's address: every such op of ``OPS`` (with a desc it never reads), ``Init`` ops, syncs
  and items of other classes, in a tuple or a list of items, classify as refimpl's;
* ``fastplan.launch.launch.context_of`` reads an op's target dtype only for an op with scalar fields
  (or one whose ``out`` is not a plain ``TensorIr``): equal contexts on the executed steps of
  the benchmark streams, and refimpl's ``AttributeError`` for an ``out`` without a dtype;
* the walk reads a ``ReduceBroadcasted`` optimization's main trace and its fallbacks' op
  counts as fields: a stream of softmax and layer norms plans as refimpl's, with and without
  the launch memo.
"""

from __future__ import annotations

import dataclasses

import pytest

import fastplan
from refimpl.dtypes import DType
from refimpl.ir import InitOperationIr, OperationIr, Sync, TensorIr, TensorStatus
from refimpl.ops import OPS, OpKind, op_named
from refimpl.stream import InputSpec, Stream

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")


def _init(tensor_id: int, spec: InputSpec) -> OperationIr:
    out = TensorIr(tensor_id, tuple(spec.shape), spec.dtype, TensorStatus.NotInit)
    return OperationIr(op_named("Init"), InitOperationIr(out))


def test_init_targets_skips_every_plain_op_of_the_table() -> None:
    from fastplan.launch.handles import init_targets as fast_init_targets
    from refimpl.planner.launch.handles import init_targets as ref_init_targets

    spec = InputSpec((2, 3), DType.F32, random=1)
    plain = [OperationIr(op, object()) for op in OPS if op.kind is not OpKind.INIT]
    assert plain
    init = _init(7, spec)
    copied = OperationIr(dataclasses.replace(init.op), init.desc)  # not the table's entry
    sync = Sync((TensorIr(7, (2, 3), DType.F32, TensorStatus.ReadOnly),))
    for items, expected in ((plain, set()), (plain + [init], {7}), ([sync, copied], {7}),
                            ([init, sync] + plain[:3], {7}), ([], set())):
        for container in (tuple, list):
            stream = Stream({7: spec}, container(items))
            assert fast_init_targets(stream) == ref_init_targets(stream) == expected


@pytest.mark.parametrize("workload", ["transformer", "mixed", "elementwise"])
def test_context_of_matches_refimpl_on_executed_steps(workload: str) -> None:
    from fuselab import workloads
    from fastplan.launch.launch import context_of as fast_context_of
    from fastplan.stream.processor import StreamPlanner
    from fastplan.fusers.registry import FusionRegistry
    from refimpl.devices import profile_named
    from refimpl.planner.launch.launch import context_of as ref_context_of

    profile = profile_named("metal")
    stream = workloads.build(workload, 120)
    planner = StreamPlanner(FusionRegistry().fusers(profile))
    planner.run(stream)
    fused = [item for item in planner.queue.executed if item.step.kind == "fused"]
    assert fused
    for item in fused:
        args = (item.segment, item.tensors_global2relative, item.shapes_relative2global,
                item.scalars)
        assert fast_context_of(*args) == ref_context_of(*args)


def test_context_of_fails_as_refimpl_on_an_out_without_dtype() -> None:
    from fastplan.launch.launch import context_of as fast_context_of
    from refimpl.planner.launch.launch import context_of as ref_context_of

    @dataclasses.dataclass(frozen=True)
    class Odd:  # an id and a shape, no dtype
        id: int
        shape: tuple

    x = TensorIr(0, (2, 3), DType.F32, TensorStatus.ReadOnly)
    exp = op_named("Float.Exp")
    desc = exp.struct(x, Odd(1, (2, 3)))
    op = OperationIr(exp, desc)
    errors = []
    for context_of in (fast_context_of, ref_context_of):
        with pytest.raises(AttributeError) as caught:
            context_of((op,), {0: 0, 1: 1}, {}, ())
        errors.append(type(caught.value))
    assert errors[0] is errors[1]


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
    from fastplan.launch.launch_stream import LaunchMemo, launch_plan_stream
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


def test_live_table_probe_after_growth_and_removals() -> None:
    """``Memory``'s lookups probe the live table inline (``live_find``): ids that collide,
    a table grown several times and entries removed between them are found as a dict
    finds them."""
    from fastplan.launch.handles import Memory as FastMemory
    from refimpl.planner.launch.handles import Memory as RefMemory

    fast, ref = FastMemory(), RefMemory(with_values=False)
    ids = [k * 2**32 for k in range(40)] + list(range(300, 700, 3)) + [2**64 - 1, 2**63]
    for memory in (fast, ref):
        for n, tid in enumerate(ids):
            memory.register(tid, memory.alloc((2, n + 1), DType.F32))
        for tid in ids[::3]:
            memory.remove(tid)
    assert fast.handles == ref.handles
    for tid in ids + [1, 2**32 + 1, 299]:
        assert (tid in fast.handles) == (tid in ref.handles)
        if tid in ref.handles:
            assert fast.handle(tid) == ref.handle(tid)
            assert fast.users(ref.handle(tid).buffer) == ref.users(ref.handle(tid).buffer)


def test_memo_walk_matches_refimpl_on_a_transformer() -> None:
    """Many executions replayed from the memo (keys read through ``live_find``), with and
    without a warm memo, against refimpl's walk."""
    from fuselab import workloads
    from fastplan.launch.launch_stream import LaunchMemo, launch_plan_stream
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
