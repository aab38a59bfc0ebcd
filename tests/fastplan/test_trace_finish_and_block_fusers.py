"""The fusers' finishes, objects built at their slot offsets
(``builder._make``/``_make2``, registered tensors without ``make_frozen``), settings codes found
by address, compared with refimpl's results value for value and class for class."""

from __future__ import annotations

import dataclasses

import pytest

import fastplan
import fastplan.engine.builder as fbuilder
import fastplan.fusers.reduce_broadcasted as frb
import refimpl.planner.engine.builder as rbuilder
import refimpl.planner.fusers.reduce_broadcasted as rrb
from refimpl.dtypes import DType
from refimpl.ir import TensorIr
from refimpl.planner.engine.settings import (
    ELEMENTWISE_SETTINGS,
    REDUCE_READ_SETTINGS,
    REDUCE_WRITE_SETTINGS,
)
from refimpl.planner.engine.trace import (
    BinaryFuseArgs, FuseBlock, FuseOp, FuseResources, FuseTrace, RegisteredTensor,
)
from tests.fastplan.helpers import WORKFLOWS
from tests.planner.fuser_ops import NI, RO, RW, t

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")


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
def test_trace_finish_equals_refimpl_class_for_class(settings):
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


def test_finishing_twice_builds_equal_fresh_objects():
    fuser = fbuilder.TraceFuser(ELEMENTWISE_SETTINGS)
    fuser.fuse_operation(FuseOp("Add", BinaryFuseArgs(
        fuser.input(t(0, (1, 2))), fuser.input(t(1, (1, 2))), fuser.output(t(2, (1, 2), NI)))))
    first, second = fuser.finish((1, 2)), fuser.finish((1, 2))
    assert first == second
    assert first.resources.outputs[0] is not second.resources.outputs[0]


def test_settings_found_by_address_past_the_table():
    # more distinct (equal) settings objects than the table of addresses holds: each still
    # gives its settings back, equal to the one refimpl keeps
    copies = [dataclasses.replace(REDUCE_READ_SETTINGS) for _ in range(100)]
    for settings in copies + copies[:5]:
        fast, ref = _scenario(fbuilder, settings), _scenario(rbuilder, settings)
        assert fast == ref
        assert fast.blocks[0].settings == settings
    assert fbuilder.TraceFuser(ELEMENTWISE_SETTINGS).settings == ELEMENTWISE_SETTINGS
    changed = dataclasses.replace(ELEMENTWISE_SETTINGS, broadcast=not ELEMENTWISE_SETTINGS.broadcast)
    assert fbuilder.TraceFuser(changed).settings == changed


@pytest.mark.parametrize("steps", WORKFLOWS)
def test_reduce_broadcasted_finish_classes(steps):
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
