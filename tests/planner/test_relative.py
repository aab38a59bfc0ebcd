"""The relative form of a ``Drop``, on refimpl and on fastplan (the ``planner_impl`` fixture).

burn's ``FusionTensor::drop`` (``crates/burn-fusion/src/tensor.rs``) swaps an empty shape into
the tensor and moves the *real* shape into the ``TensorIr`` it registers as
``OperationIr::Drop``; ``stream/context.rs`` relativises it with ``TensorIr::to_relative``, as
any tensor. So a drop's dims get shape ids, and a tensor first seen through its drop shifts the
shape ids of everything after it in the segment.
"""

from __future__ import annotations

from refimpl.dtypes import DType
from refimpl.ir import OperationIr, TensorIr
from refimpl.planner.stream.cache import ExecutionPlan
from refimpl.planner.search.strategy import BlockOptimization, Operations
from tests.planner.fuser_ops import NI, RO, RW, drop, op, t


def _exp(a: int, out: int, shape) -> OperationIr:
    return op("Float.Exp", input=t(a, shape, RO), out=t(out, shape, NI))


def _relative(impl, ops) -> list[OperationIr]:
    converter = impl.stream.relative.OperationConverter()
    return [impl.stream.relative.to_relative(o, converter) for o in ops]


def test_relative_drop_keeps_its_real_shape_as_shape_ids(planner_impl):
    converter = planner_impl.stream.relative.OperationConverter()
    relative = planner_impl.stream.relative.to_relative(drop(42, (4, 1, 8)), converter)
    assert relative == drop(0, (1, 0, 2))
    assert converter.num_relative_shapes() == 3
    assert converter.shapes_relative2global == {0: 1, 1: 4, 2: 8}
    assert converter.tensors_relative2global[0] == t(42, (4, 1, 8), RW)


def test_relative_drop_of_a_known_tensor_reuses_its_shape_ids(planner_impl):
    rel_exp, rel_drop = _relative(planner_impl, [_exp(3, 4, (6, 5)), drop(3, (6, 5))])
    assert rel_exp == _exp(0, 1, (1, 2))
    assert rel_drop == drop(0, (1, 2))


def test_relative_tensor_first_seen_through_its_drop_shifts_later_shape_ids(planner_impl):
    # the drop hands out ids 1 (7) and 2 (3): the exp's dims 3 and 9 get ids 2 and 3
    after_drop = _relative(planner_impl, [drop(8, (7, 3)), _exp(0, 1, (3, 9))])
    assert after_drop == [drop(0, (1, 2)), _exp(1, 2, (2, 3))]
    alone = _relative(planner_impl, [_exp(0, 1, (3, 9))])
    assert alone == [_exp(0, 1, (1, 2))]


def test_relative_segments_differing_only_in_a_dropped_shape_differ(planner_impl):
    first = _relative(planner_impl, [_exp(0, 1, (4, 4)), drop(2, (4, 8))])
    second = _relative(planner_impl, [_exp(0, 1, (4, 4)), drop(2, (4, 4))])
    assert first[0] == second[0] and first[1] != second[1]


def test_relative_plan_index_tells_dropped_shapes_apart(planner_impl):
    store = planner_impl.stream.cache.ExecutionPlanStore()
    ordering = (0,)
    plan = ExecutionPlan((drop(0, (1, 2)),), [],
                         BlockOptimization(Operations(ordering), ordering))
    plan_id = store.add(plan)
    [same_pattern] = _relative(planner_impl, [drop(5, (16, 2))])
    [square] = _relative(planner_impl, [drop(5, (16, 16))])
    assert store.find(same_pattern) == [plan_id]
    assert store.find(square) == []


def test_relative_queue_counts_the_shape_ids_of_a_drop(planner_impl):
    queue = planner_impl.stream.processor.StreamPlanner([]).queue
    queue.add(0, drop(9, (4, 6)))
    queue.add(1, _exp(10, 11, (6, 5)))
    assert list(queue.shapes_assigned) == [3, 4]
    assert list(queue.operations()) == [drop(0, (1, 2)), _exp(1, 2, (2, 3))]
    assert queue.converter.tensors_relative2global[0] == t(9, (4, 6), RW)
    assert queue.converter.shapes_relative2global == {0: 1, 1: 4, 2: 6, 3: 5}


def _queue_state(impl, ops) -> tuple:
    """What the queue of ``impl`` holds after queuing ``ops``: relative ops, shape ids handed
    out, and the converter's maps (the key objects included: 2.0 is not 2 in JSON)."""
    queue = impl.stream.processor.StreamPlanner([]).queue
    for index, operation in enumerate(ops):
        queue.add(index, operation)
    converter = queue.converter
    shapes = [(type(k).__name__, k, v) for k, v in converter.shapes_global2relative.items()]
    return (list(queue.operations()), list(queue.shapes_assigned), shapes,
            converter.shapes_relative2global, converter.tensors_global2relative)


def test_relative_queue_with_many_distinct_dims_matches_refimpl(planner_impl):
    """More distinct dims in one segment than fastplan keeps in its small table (64)."""
    import refimpl.planner as reference

    ops = [_exp(2 * k, 2 * k + 1, (k + 2, 3 * k + 100)) for k in range(40)]
    assert _queue_state(planner_impl, ops) == _queue_state(reference, ops)


def test_relative_queue_with_dims_of_other_types_matches_refimpl(planner_impl):
    """Dims that are no exact int64 int (a float equal to an int, a bool, an int past 64
    bits) take the converter's dict, as refimpl's: equal values share a shape id, and the
    first one seen is the key."""
    import refimpl.planner as reference

    ops = [_exp(1, 2, (4, 6)), _exp(3, 4, (6.0, 4)), _exp(5, 6, (True, 2**70)),
           _exp(7, 8, (2**70, 1, 4))]
    assert _queue_state(planner_impl, ops) == _queue_state(reference, ops)


def test_def_twins_relative_conversion(run_both):
    stream = [op("NumericFloat.MulScalar", lhs=t(40, (512, 32)), rhs=2.5, out=t(41, (512, 32), NI)),
              op("BaseFloat.Slice", tensor=t(41, (512, 32), RW), ranges=((0, 8), (1, 3)),
                 out=t(42, (8, 2), NI)),
              op("Drop", tensor=t(40, (512, 32), RW)),
              op("BaseFloat.Cat", tensors=(t(42, (8, 2)), t(43, (8, 2))), dim=0,
                 out=t(44, (16, 2), NI)),
              op("NumericFloat.Clamp", tensor=t(44, (16, 2), RW), min=-1.0, max=1.0,
                 out=t(45, (16, 2), NI))]

    def scenario(relative_module):
        converter = relative_module.OperationConverter()
        converted = [relative_module.to_relative(o, converter) for o in stream]
        fields = (converter.tensors_relative2global, converter.tensors_global2relative,
                  converter.shapes_global2relative, converter.shapes_relative2global,
                  converter.scalars, converter.ranges, converter.num_relative_shapes(),
                  converter.global_shape((1, 2)), converter.dim(7), converter.scalar(1.5),
                  converter.range((2, 3)))
        converter.clear()
        return converted, fields, converter.tensor(TensorIr(5, (3,), DType.F32, RO))

    assert run_both("stream.relative", scenario)[0] == "ok"
