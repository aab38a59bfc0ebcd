"""The plan cache: relative keys, the plan index, the policy, and reuse across iterations, on
refimpl and on fastplan (the ``planner_impl`` fixture).

burn counterparts: ``stream/context.rs`` tests (relative ids and shapes, scalars),
``stream/store/index.rs`` tests, ``stream/execution/policy.rs`` tests (notes §2.4, §9.4).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, note

from refimpl.devices import profile_named
from refimpl.dtypes import DType
from refimpl.ir import BinaryOpIr, OperationIr, ScalarOpIr, Sync, TensorIr, TensorStatus, UnaryOpIr
from refimpl.ops import op_named
from refimpl.planner.stream.cache import (
    Always,
    Defer,
    Execute,
    ExecutionMode,
    ExecutionPlan,
    Explore,
    OnOperations,
    Policy,
)
from refimpl.planner.stream.cache import ExecutionPlanStore as ReferenceStore
from refimpl.planner.stream.relative import OperationConverter, to_relative
from refimpl.planner.search.strategy import BlockOptimization, Operations, Optimization
from refimpl.seed import SEED_STREAMS
from refimpl.strategies import streams
from refimpl.stream import InputSpec, Stream, stream_to_json
from tests.planner.burn_mocks import TestOptimizationBuilder, operation_1, operation_2, operation_3
from tests.planner.helpers import ShapeIdOptimization

RO, RW, NEW = TensorStatus.ReadOnly, TensorStatus.ReadWrite, TensorStatus.NotInit


def _t(tid: int, shape, status=RO) -> TensorIr:
    return TensorIr(tid, tuple(shape), DType.F32, status)


def _mul(a, b, out, shape) -> OperationIr:
    return OperationIr(op_named("NumericFloat.Mul"),
                       BinaryOpIr(_t(a, shape, RW), _t(b, shape, RW), _t(out, shape, NEW)))


def _add_scalar(a, value, out, shape) -> OperationIr:
    return OperationIr(op_named("NumericFloat.AddScalar"),
                       ScalarOpIr(_t(a, shape, RW), value, _t(out, shape, NEW)))


def _exp(a, out, shape) -> OperationIr:
    return OperationIr(op_named("Float.Exp"), UnaryOpIr(_t(a, shape, RW), _t(out, shape, NEW)))


def _expression(base: int, shape, scalar: float) -> Stream:
    """``((a * b) + scalar).exp()`` then a read, with tensor ids starting at ``base``."""
    a, b, m, s, e = base, base + 1, base + 2, base + 3, base + 4
    items = (_mul(a, b, m, shape), _add_scalar(m, scalar, s, shape), _exp(s, e, shape),
             Sync((e,)))
    inputs = {a: InputSpec(tuple(shape), DType.F32, random=1),
              b: InputSpec(tuple(shape), DType.F32, random=2)}
    return Stream(inputs, items)


def _relative(impl, stream: Stream) -> list[OperationIr]:
    converter = impl.stream.relative.OperationConverter()
    return [impl.stream.relative.to_relative(op, converter) for op in stream.ops]


def _planner_for(impl, stream: Stream):
    """A planner whose single mock fuser is ready on exactly this stream's relative ops."""
    return impl.stream.processor.StreamPlanner([TestOptimizationBuilder(0, _relative(impl, stream))])


# --- relative form (stream/context.rs tests) -------------------------------------------------


def test_cache_relative_ids_by_first_appearance_and_shape_ids(planner_impl):
    converter = planner_impl.stream.relative.OperationConverter()
    first = converter.tensor(_t(500, (512, 32, 2048)))
    second = converter.tensor(_t(501, (512, 128, 2048)))
    assert first == _t(0, (1, 2, 3))
    assert second == _t(1, (1, 4, 3))


def test_cache_relative_size_one_is_shape_id_zero(planner_impl):
    converter = planner_impl.stream.relative.OperationConverter()
    assert converter.tensor(_t(9, (1, 8))).shape == (0, 1)
    assert converter.tensor(_t(4, (8, 1, 1))).shape == (1, 0, 0)


def test_cache_relative_scalars_become_placeholders(planner_impl):
    converter = planner_impl.stream.relative.OperationConverter()
    first = planner_impl.stream.relative.to_relative(_add_scalar(3, 1.0, 4, (2, 2)), converter)
    second = planner_impl.stream.relative.to_relative(_add_scalar(4, 7, 5, (2, 2)), converter)
    assert (first.desc.rhs, second.desc.rhs) == (0, 1)
    assert converter.scalars == [1.0, 7]


def test_cache_relative_key_ignores_ids_sizes_and_scalars(planner_impl):
    base = _relative(planner_impl, _expression(0, (4, 6), 2.0))
    assert base == _relative(planner_impl, _expression(70, (8, 16), -1.5))
    assert base != _relative(planner_impl, _expression(0, (1, 6), 2.0))


# --- reuse across iterations -----------------------------------------------------------------


def test_cache_repeated_iteration_is_a_cache_hit_without_new_exploration(planner_impl):
    stream = _expression(0, (4, 6), 2.0)
    planner = _planner_for(planner_impl, stream)
    first = planner.run(stream)
    assert (planner.num_explorations, planner.num_cache_hits) == (1, 0)
    second = planner.run(stream)
    assert (planner.num_explorations, planner.num_cache_hits) == (1, 1)
    assert first == second
    assert [step.kind for step in first] == ["fused"] and first[0].ops == (0, 1, 2)
    assert len(planner.store) == 1


def test_cache_same_relative_stream_with_other_ids_shapes_scalars_hits(planner_impl):
    planner = _planner_for(planner_impl, _expression(0, (4, 6), 2.0))
    planner.run(_expression(0, (4, 6), 2.0))
    steps = planner.run(_expression(70, (8, 16), -1.5))
    assert (planner.num_explorations, planner.num_cache_hits) == (1, 1)
    assert steps[0].ops == (0, 1, 2)


def test_cache_different_relative_shape_is_a_miss(planner_impl):
    planner = _planner_for(planner_impl, _expression(0, (4, 6), 2.0))
    planner.run(_expression(0, (4, 6), 2.0))
    steps = planner.run(_expression(0, (1, 6), 2.0))
    # The mock closes on the first op (its relative shape differs): each op is explored and
    # run on its own, and nothing comes from the cache.
    assert (planner.num_explorations, planner.num_cache_hits) == (4, 0)
    assert [(step.kind, step.ops) for step in steps] == [
        ("unfused", (0,)), ("unfused", (1,)), ("unfused", (2,))]


def test_cache_sync_of_materialised_tensor_does_not_drain(planner_impl):
    stream = _expression(0, (4, 6), 2.0)
    items = (Sync((0,)),) + stream.items[:1] + (Sync((1,)),) + stream.items[1:]
    planner = _planner_for(planner_impl, stream)
    steps = planner.run(Stream(stream.inputs, items))
    assert [step.ops for step in steps] == [(1, 3, 4)]


def test_cache_sync_of_pending_result_splits_the_stream(planner_impl):
    stream = _expression(0, (4, 6), 2.0)
    items = stream.items[:1] + (Sync((2,)),) + stream.items[1:]
    steps = _planner_for(planner_impl, stream).run(Stream(stream.inputs, items))
    assert [(step.kind, step.ops) for step in steps] == [
        ("unfused", (0,)), ("unfused", (2,)), ("unfused", (3,))]


def test_cache_plan_naming_unassigned_shape_id_runs_unfused(planner_impl):
    planner = planner_impl.stream.processor.StreamPlanner([])
    op = _exp(0, 1, (4, 6))  # assigns shape ids 0 (size 1), 1 and 2
    planner.queue.add(0, op)
    for shape_id, kind in ((2, "fused"), (3, "unfused")):
        strategy = Optimization(ShapeIdOptimization(shape_id), (0,), 10)
        relative = planner_impl.stream.relative.to_relative(op, planner_impl.stream.relative.OperationConverter())
        plan_id = planner.store.add(ExecutionPlan((relative,), [Always()],
                                                  BlockOptimization(strategy, (0,))))
        planner.queue.execute(plan_id, planner.store)
        assert planner.queue.steps[-1].kind == kind
        planner.queue.add(0, op)


# --- plan index (stream/store/index.rs tests) ------------------------------------------------


def _plan(ops) -> ExecutionPlan:
    ordering = tuple(range(len(ops)))
    return ExecutionPlan(tuple(ops), [], BlockOptimization(Operations(ordering), ordering))


def test_cache_index_finds_plans_by_first_operation(planner_impl):
    store = planner_impl.stream.cache.ExecutionPlanStore()
    o1, o2, o3 = operation_1(), operation_2(), operation_3()
    first = store.add(_plan([o1, o2, o1]))
    second = store.add(_plan([o1, o1, o2]))
    third = store.add(_plan([o3, o1]))
    assert store.find(o1) == [first, second]
    assert store.find(o3) == [third]
    assert store.find(o2) == []


def test_cache_add_trigger_records_each_trigger_once(planner_impl):
    store = planner_impl.stream.cache.ExecutionPlanStore()
    plan_id = store.add(_plan([operation_1()]))
    for trigger in (Always(), OnOperations((operation_2(),)), Always()):
        store.add_trigger(plan_id, trigger)
    assert store.get(plan_id).triggers == [Always(), OnOperations((operation_2(),))]


# Keys: fastplan indexes plans by the first op's key (``fastplan/_keys.pyx``); two relative ops
# must have equal keys exactly when they are ``==``, as refimpl's store compares the ops.


def _with_scalar(op: OperationIr, value) -> OperationIr:
    return OperationIr(op.op, dataclasses.replace(op.desc, rhs=value))


def _index(store_cls, ops: list) -> list[list[int]]:
    store = store_cls()
    for op in ops:
        store.add(_plan([op]))
    return [store.find(op) for op in ops]


def _relative_ops(stream) -> list[OperationIr]:
    converter = OperationConverter()
    return [to_relative(op, converter) for op in stream.ops]


@given(first=streams(max_ops=6), second=streams(max_ops=6))
def test_keys_equal_exactly_when_ops_are_equal(planner_impl, first, second):
    note(stream_to_json(first))
    note(stream_to_json(second))
    ops = _relative_ops(first) + _relative_ops(second)
    twin = planner_impl.stream.cache.ExecutionPlanStore
    assert _index(twin, ops) == _index(ReferenceStore, ops)


@pytest.mark.parametrize("a, b", [(5, 5.0), (1, True), (0, -0.0), (2.5, 2.5), (2**70, 2**70),
                                  (2**70, float(2**70)), ("x", "x")])
def test_keys_scalar_values_compare_as_python_does(planner_impl, a, b):
    ops = [_with_scalar(operation_2(), a), _with_scalar(operation_2(), b),
           _with_scalar(operation_2(), 7)]
    twin = planner_impl.stream.cache.ExecutionPlanStore
    assert _index(twin, ops) == _index(ReferenceStore, ops)


def test_keys_distinguish_burns_test_operations(planner_impl):
    ops = [operation_1(), operation_2(), operation_3(), operation_1()]
    twin = planner_impl.stream.cache.ExecutionPlanStore
    assert _index(twin, ops) == _index(ReferenceStore, ops) == [[0, 3], [1], [2], [0, 3]]


# --- policy (stream/execution/policy.rs tests) -----------------------------------------------


def _log_chain(out_ids) -> list[OperationIr]:
    """burn's policy ``TestStream``: ``Float.Log`` ops chained from tensor 0, shape [32,32,1]."""
    ops, previous = [], 0
    for out in out_ids:
        ops.append(OperationIr(op_named("Float.Log"), UnaryOpIr(
            _t(previous, (32, 32, 1), NEW), _t(out, (32, 32, 1), NEW))))
        previous = out
    return ops


def _feed(policy: Policy, store, ops, start, stop, expected) -> None:
    for i in range(start, stop):
        policy.update(store, ops[i])
        assert policy.action(store, ops[:i], ExecutionMode.Lazy) == expected


def test_cache_policy_explores_without_plans(planner_impl):
    ops = _log_chain([1, 2, 3])
    cache = planner_impl.stream.cache
    _feed(cache.Policy(), cache.ExecutionPlanStore(), ops, 0, 3, Explore())


def test_cache_policy_sync_executes_the_plan_as_long_as_the_queue(planner_impl):
    ops = _log_chain([1, 2, 3])
    store = planner_impl.stream.cache.ExecutionPlanStore()
    short = store.add(_plan(ops[:2]))
    store.add(_plan(ops[:3]))
    policy = planner_impl.stream.cache.Policy()
    _feed(policy, store, ops, 0, 2, Defer())
    assert policy.action(store, ops[:2], ExecutionMode.Sync) == Execute(short)


def test_cache_policy_never_executes_a_plan_longer_than_the_segment(planner_impl):
    ops = _log_chain([1, 2, 3])
    store = planner_impl.stream.cache.ExecutionPlanStore()
    plan = _plan(ops)
    plan.triggers.append(Always())
    plan_id = store.add(plan)
    policy = planner_impl.stream.cache.Policy()
    for op in ops:
        policy.update(store, op)
    assert policy.action(store, ops, ExecutionMode.Lazy) == Execute(plan_id)
    assert policy.action(store, ops[:1], ExecutionMode.Lazy) != Execute(plan_id)


def test_cache_policy_executes_when_a_trigger_matches(planner_impl):
    ops = _log_chain([1, 2, 3])
    store = planner_impl.stream.cache.ExecutionPlanStore()
    plan = _plan(ops[:2])
    plan.triggers.append(OnOperations((ops[2],)))
    plan_id = store.add(plan)
    policy = planner_impl.stream.cache.Policy()
    _feed(policy, store, ops, 0, 2, Defer())
    _feed(policy, store, ops, 2, 3, Execute(plan_id))


def test_cache_policy_supports_multiple_triggers_and_selects_the_right_plan(planner_impl):
    first, second = _log_chain([1, 2, 5]), _log_chain([1, 2, 6])
    store = planner_impl.stream.cache.ExecutionPlanStore()
    plan = _plan(first[:2])
    plan.triggers.extend([OnOperations((first[2],)), OnOperations((second[2],))])
    plan_id = store.add(plan)
    for ops in (first, second):
        policy = planner_impl.stream.cache.Policy()
        _feed(policy, store, ops, 0, 2, Defer())
        _feed(policy, store, ops, 2, 3, Execute(plan_id))


def test_cache_policy_invalidates_wrong_plans(planner_impl):
    reference, other = _log_chain([1, 2, 3, 4]), _log_chain([1, 2, 6, 7])
    store = planner_impl.stream.cache.ExecutionPlanStore()
    plan = _plan(reference[:3])
    plan.triggers.append(OnOperations((reference[3],)))
    store.add(plan)
    policy = planner_impl.stream.cache.Policy()
    _feed(policy, store, other, 0, 2, Defer())
    _feed(policy, store, other, 2, 4, Explore())


# --- with the real fusers --------------------------------------------------------------------


def _real_planner(impl, device: str = "metal"):
    return impl.stream.processor.StreamPlanner(impl.fusers.registry.FusionRegistry().fusers(
        profile_named(device)))


def test_cache_repeated_chain_replays_both_plans_from_the_cache(planner_impl):
    stream = SEED_STREAMS["chain"]()
    planner = _real_planner(planner_impl)
    first = planner.run(stream)
    explored = planner.num_explorations
    second = planner.run(stream)
    assert first == second
    assert planner.num_explorations == explored
    assert planner.num_cache_hits >= 2  # the 65-op plan (OnOperations) and the 35-op one (OnSync)
    triggers = [type(trigger).__name__ for p in planner.store.plans for trigger in p.triggers]
    assert "OnOperations" in triggers and "OnSync" in triggers


def _steps_forgetting_every(planner, stream: Stream, every: int) -> list:
    """The steps ``planner`` executes over ``stream``, fed item by item, its executed steps
    collected and forgotten after every ``every`` items (ops may be pending then)."""
    collected = []
    for index, item in enumerate(stream.items):
        if isinstance(item, Sync):
            planner.sync(item.tensors)
        else:
            planner.register(index, item)
        if index % every == every - 1:
            pending = list(planner.queue.global_ops)
            collected.extend(planner.queue.steps)
            planner.forget_steps()
            assert planner.queue.steps == [] and planner.queue.executed == []
            assert planner.queue.global_ops == pending  # the pending ops stay
    planner.drain()
    collected.extend(planner.queue.steps)
    planner.forget_steps()
    return collected


def test_forget_steps_keeps_pending_ops_and_the_plan_cache(planner_impl):
    """``StreamPlanner.forget_steps`` (a long-lived runtime's planner) drops the executed
    steps only: fed twice with forgetting in between, at positions where ops are pending, the
    planner executes the very steps one that never forgets does, and the second pass comes
    from the plan cache."""
    stream = SEED_STREAMS["chain"]()
    reference = _real_planner(planner_impl)
    expected = reference.run(stream) + reference.run(stream)
    for every in (1, 3, 7, 50):
        planner = _real_planner(planner_impl)
        assert _steps_forgetting_every(planner, stream, every) == expected[:len(expected) // 2]
        explored = planner.num_explorations
        assert _steps_forgetting_every(planner, stream, every) == expected[len(expected) // 2:]
        assert planner.num_explorations == explored, every


def test_launch_planned_fills_what_plan_fills(planner_impl):
    """``StreamPlanner.launch_planned`` (a runtime's launch planning) gives the steps ``plan``
    returns, from any executed step on; the same on a warm planner's next pass."""
    from refimpl.planner import plan

    stream = SEED_STREAMS["matmul_add_exp"]()
    expected = plan(stream, "webgpu-default").steps
    planner = _real_planner(planner_impl, "webgpu-default")
    planner.run(stream)
    assert planner.launch_planned(stream, 0, "webgpu-default") == expected
    assert planner.launch_planned(stream, 1, profile_named("webgpu-default")) == expected[1:]
    assert planner.launch_planned(stream, len(expected), "webgpu-default") == ()
    start = len(planner.queue.steps)
    planner.run(stream)
    assert planner.launch_planned(stream, start, "webgpu-default") == expected
    with pytest.raises(ValueError, match="no executed step at -1"):
        planner.launch_planned(stream, -1, "webgpu-default")
