"""The trace builder (``builder``: ``TraceFuser``, ``FuseBlockBuilder``, ``LocalVariablePool``)
and the traces the fusers finish, on refimpl and on fastplan (the ``planner_impl`` fixture):
every call gives refimpl's result (or raises refimpl's error class), and a finished trace equals
refimpl's value for value and class for class, whatever settings object the fuser was given.

fastplan builds the finished objects at their slot offsets (``builder._make``/``_make2``,
registered tensors without ``make_frozen``) and finds settings codes by address."""

from __future__ import annotations

import dataclasses

import pytest

import refimpl.planner.engine.builder as rbuilder
import refimpl.planner.fusers.reduce_broadcasted as rrb
from refimpl.dtypes import DType
from refimpl.ir import TensorIr, TensorStatus
from refimpl.planner.engine.builder import Refusal
from refimpl.planner.engine.settings import (
    ELEMENTWISE_SETTINGS,
    REDUCE_READ_SETTINGS,
    REDUCE_WRITE_SETTINGS,
)
from refimpl.planner.engine.trace import (
    BinaryFuseArgs, BlockLocal, CatArgs, FuseBlock, FuseOp, FuseResources, FuseTrace, FuseType,
    Input, RegisteredTensor, RegisteredTensors, Scalar, UnaryFuseArgs,
)
from tests.planner.fuser_ops import NI, RO, RW, t
from tests.planner.helpers import WORKFLOWS

F = FuseType.F32


def _classes(value, seen=None):
    """Every (path, class) in a finished trace: equal values of another class would pass ==
    where a dataclass compares its fields only."""
    found = []
    if isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            found += [(f"[{i}]{p}", c) for p, c in _classes(item)]
        return found
    found.append(("", type(value)))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            found += [(f".{field.name}{p}", c) for p, c in _classes(getattr(value, field.name))]
    return found


def _scenario(builder, settings):
    fuser = builder.TraceFuser(settings)
    a, b = t(0, (1, 2)), t(1, (1, 2), RW, DType.F16)
    out = [fuser.input(a), fuser.input(b), fuser.output(t(2, (1, 2), NI))]
    fuser.fuse_operation(FuseOp("Add", BinaryFuseArgs(*out)))
    scalar = fuser.scalar(0, DType.I32)
    out2 = fuser.output(t(3, (1, 2), NI, DType.I32))
    fuser.fuse_operation(FuseOp("Mul", BinaryFuseArgs(out[2], scalar, out2)))
    fuser.next_block((1, 2), REDUCE_WRITE_SETTINGS)
    local = fuser.block_local_input(t(2, (1, 2), RO), 0, False)
    out3 = fuser.output(t(4, (1, 2), NI))
    fuser.fuse_operation(FuseOp("Sub", BinaryFuseArgs(local, out2, out3)))
    fuser.fuse_dropped(t(2, (1, 2), RW))
    return fuser.finish((1, 2))


@pytest.mark.parametrize("settings", [ELEMENTWISE_SETTINGS, REDUCE_READ_SETTINGS])
def test_trace_finish_equals_refimpl_class_for_class(planner_impl, settings):
    fbuilder = planner_impl.engine.builder
    fast, ref = _scenario(fbuilder, settings), _scenario(rbuilder, settings)
    assert fast == ref
    assert _classes(fast) == _classes(ref)
    assert type(fast) is FuseTrace and type(fast.resources) is FuseResources
    assert all(type(block) is FuseBlock for block in fast.blocks)
    registered = fast.resources.inputs + fast.resources.outputs
    assert registered and all(type(r) is RegisteredTensor and type(r.tensor) is TensorIr
                              for r in registered)
    # the registered tensors carry their dtype and status, not the first ones seen
    assert {r.tensor.dtype for r in registered} >= {DType.F16, DType.I32}
    assert {r.tensor.status for r in registered} == {r.tensor.status for r in
                                                     ref.resources.inputs + ref.resources.outputs}


def test_finishing_twice_builds_equal_fresh_objects(planner_impl):
    fbuilder = planner_impl.engine.builder
    fuser = fbuilder.TraceFuser(ELEMENTWISE_SETTINGS)
    fuser.fuse_operation(FuseOp("Add", BinaryFuseArgs(
        fuser.input(t(0, (1, 2))), fuser.input(t(1, (1, 2))), fuser.output(t(2, (1, 2), NI)))))
    first, second = fuser.finish((1, 2)), fuser.finish((1, 2))
    assert first == second
    assert first.resources.outputs[0] is not second.resources.outputs[0]


def test_settings_found_by_address_past_the_table(planner_impl):
    # more distinct (equal) settings objects than the table of addresses holds: each still
    # gives its settings back, equal to the one refimpl keeps
    fbuilder = planner_impl.engine.builder
    copies = [dataclasses.replace(REDUCE_READ_SETTINGS) for _ in range(100)]
    for settings in copies + copies[:5]:
        fast, ref = _scenario(fbuilder, settings), _scenario(rbuilder, settings)
        assert fast == ref
        assert fast.blocks[0].settings == settings
    assert fbuilder.TraceFuser(ELEMENTWISE_SETTINGS).settings == ELEMENTWISE_SETTINGS
    changed = dataclasses.replace(ELEMENTWISE_SETTINGS, broadcast=not ELEMENTWISE_SETTINGS.broadcast)
    assert fbuilder.TraceFuser(changed).settings == changed


@pytest.mark.parametrize("steps", WORKFLOWS)
def test_reduce_broadcasted_finish_classes(planner_impl, steps):
    frb = planner_impl.fusers.reduce_broadcasted
    fast, ref = frb.ReduceBroadcastedFuser(28), rrb.ReduceBroadcastedFuser(28)
    finished = 0
    for step in steps:
        fast.fuse(step)
        ref.fuse(step)
        if ref.properties().ready:
            mine, theirs = fast.finish(), ref.finish()
            assert mine == theirs
            assert _classes(mine) == _classes(theirs)
            finished += 1
    assert finished > 0


# --- every call of the builder's classes ------------------------------------------------------


def test_def_twins_trace_fuser_calls(run_both):
    def scenario(builder):
        fuser = builder.TraceFuser(ELEMENTWISE_SETTINGS)
        a, b = t(0, (1, 2)), t(1, (1, 2))
        out = [fuser.input(a), fuser.input(b), fuser.output(t(2, (1, 2), NI))]
        fuser.fuse_operation(FuseOp("Add", BinaryFuseArgs(*out)))
        out.append(fuser.scalar(0, DType.F16))
        out.append(fuser.input_indexed(t(5, (3,))))
        fuser.fuse_operation(FuseOp("Cat", CatArgs((out[-1],), out[2], 0)))
        fuser.fuse_dropped(t(2, (1, 2), RW))
        out.append((fuser.num_ops_fused(), fuser.estimate_bindings()))
        fuser.next_block((1, 2), REDUCE_WRITE_SETTINGS)
        out.append(fuser.block_local_input(t(2, (1, 2), RO), 0, True))
        out.append(fuser.output_unhandled(t(9, (1, 0), NI)))
        out.append(fuser.input_unhandled(t(8, (1, 0))))
        fuser.output_nhwc_layout(t(9, (1, 0)), (0, 1))
        out.append(fuser.num_multi_block_local_inputs())
        clone = fuser.clone()
        clone.input(t(11, (1, 0)))
        out.append(fuser.finish((1, 0)))
        out.append(clone.finish((1, 0)))
        return out

    assert run_both("engine.builder", scenario)[0] == "ok"


def test_def_twins_block_builder_and_pool(run_both):
    def scenario(builder):
        resources = builder.ResourcesBuilder()
        block = builder.FuseBlockBuilder(REDUCE_READ_SETTINGS)
        results = [block.input(t(0, (0, 2)), resources), block.output(t(1, (0, 2), NI), resources)]
        results.append(block.multi_block_variable(0, t(1, (0, 2)), False))
        results.append(block.multi_block_variable(0, t(7, (0, 2)), False))
        results.append(block.input_swap_dims(t(0, (0, 2)), t(3, (2, 0), NI), (0, 1), resources))
        results.append(block.input_reshaped(t(0, (0, 2)), t(4, (0, 0, 2), NI), resources))
        buffers = [5]
        results.append(block.tensor_writes(resources, buffers).freeze())
        outputs = RegisteredTensors()
        results.append(block.build(resources, outputs, buffers))
        results += [outputs.freeze(), tuple(buffers), resources.freeze(outputs)]
        try:
            block.input_swap_dims(t(1, (0, 2)), t(6, (2, 0), NI), (0, 1), resources)
        except Refusal as refusal:
            results.append(refusal.reason)
        pool = builder.LocalVariablePool()
        results += [pool.create(F, 3), pool.create(FuseType.F16, 3), pool.create(F, 3),
                    pool.get(F, 3), pool.get_any_precision(3), pool.get(F, 4),
                    pool.clone().get(FuseType.F16, 3)]
        return results

    assert run_both("engine.builder", scenario)[0] == "ok"


def test_def_twins_scalar_and_indexed_errors(run_both):
    def scenario(builder):
        fuser = builder.TraceFuser(ELEMENTWISE_SETTINGS)
        return fuser.scalar(2.0, DType.F32)

    assert run_both("engine.builder", scenario)[0] == "raised"
    assert Scalar(0, F) != Input(0, F)  # the twins build refimpl's classes
    assert FuseOp.assign(BlockLocal(0, F), Input(0, F)).args == UnaryFuseArgs(BlockLocal(0, F),
                                                                             Input(0, F))
    assert TensorStatus.ReadWrite is RW
