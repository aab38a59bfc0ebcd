"""The fusers' finishes, objects built at their slot offsets
(``builder._make``/``_make2``, registered tensors without ``make_frozen``), settings codes found
by address, compared with refimpl's results value for value and class for class; and the
search's new blocks, whose Matmul fuser is copied at the first op (one shared closed copy when
that op is no matmul), compared with refimpl's blocks fuser by fuser."""

from __future__ import annotations

import dataclasses

import pytest

import fastplan
import fastplan.builder as fbuilder
import fastplan.reduce_broadcasted as frb
import refimpl.planner.builder as rbuilder
import refimpl.planner.reduce_broadcasted as rrb
from refimpl.dtypes import DType
from refimpl.ir import TensorIr
from refimpl.planner.settings import (
    ELEMENTWISE_SETTINGS,
    REDUCE_READ_SETTINGS,
    REDUCE_WRITE_SETTINGS,
)
from refimpl.planner.trace import (
    BinaryFuseArgs, FuseBlock, FuseOp, FuseResources, FuseTrace, RegisteredTensor,
)
from tests.fastplan.test_finish_cached import WORKFLOWS
from tests.planner.fuser_ops import NI, RO, RW, op, t

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


def _streams():
    mm = op("Float.Matmul", lhs=t(10, (4, 6), RW), rhs=t(11, (6, 8), RW), out=t(12, (4, 8), NI))
    add = op("NumericFloat.Add", lhs=t(0, (1, 2), RO), rhs=t(1, (1, 2), RO), out=t(2, (1, 2), NI))
    exp = op("Float.Exp", input=t(3, (1, 2), RO), out=t(4, (1, 2), NI))
    tail = op("Float.Exp", input=t(12, (4, 8), RW), out=t(13, (4, 8), NI))
    mul = op("NumericFloat.Mul", lhs=t(2, (1, 2), RW), rhs=t(5, (1, 2), RO), out=t(6, (1, 2), NI))
    return [[add, exp, mm, tail, mul], [mm, add, tail, exp], [exp, add, mul, mm, tail]]


@pytest.mark.parametrize("ops", _streams())
def test_new_blocks_matmul_fusers_equal_refimpl(ops):
    import fastplan.matmul as fmatmul
    import fastplan.registry as fregistry
    import fastplan.search as fsearch
    import refimpl.planner.registry as rregistry
    import refimpl.planner.search as rsearch
    from refimpl.devices import profile_named

    profile = profile_named("metal")
    templates = fregistry.FusionRegistry().fusers(profile)
    fast = fsearch.StreamOptimizer(templates)
    ref = rsearch.StreamOptimizer(rregistry.FusionRegistry().fusers(profile))
    for operation in ops:
        fast.register(operation)
        ref.register(operation)
    assert len(fast.blocks) == len(ref.blocks) > 1
    shared = set()
    for mine, theirs in zip(fast.blocks, ref.blocks):
        assert list(mine.ordering) == list(theirs.ordering)
        for f, r in zip(mine.fusers, theirs.fusers):
            assert (f.status(), f.len(), f.properties()) == (r.status(), r.len(), r.properties())
            assert f.closed_reason == r.closed_reason
            if type(f) is fmatmul.MatmulFuser:
                assert all(f is not template for template in templates)
                if f.matmul is None:
                    shared.add(id(f))
        assert mine.still_optimizing() == theirs.still_optimizing()
        assert mine.has_ready_optimization() == theirs.has_ready_optimization()
        assert mine.clone().optimize() == theirs.clone().optimize()
    # every block opened by another op holds the one closed copy; the templates are untouched
    assert len(shared) <= 1
    matmul_template = next(f for f in templates if type(f) is fmatmul.MatmulFuser)
    assert matmul_template.matmul is None and matmul_template.len() == 1
    assert fast.optimize(list(ops)) == ref.optimize(list(ops))


def test_matmul_template_reset_and_reuse():
    import fastplan.matmul as fmatmul
    import refimpl.planner.matmul as rmatmul

    mm = op("Float.Matmul", lhs=t(10, (4, 6), RW), rhs=t(11, (6, 8), RW), out=t(12, (4, 8), NI))
    add = op("NumericFloat.Add", lhs=t(0, (1, 2), RO), rhs=t(1, (1, 2), RO), out=t(2, (1, 2), NI))
    fast, ref = fmatmul.MatmulFuser(8), rmatmul.MatmulFuser(8)
    fast.fuse(mm)
    ref.fuse(mm)
    fast.reset()
    ref.reset()
    for f, r in ((fast.clone(), ref.clone()), (fast, ref)):
        f.fuse(add)
        r.fuse(add)
        assert (f.status(), f.len(), f.closed_reason) == (r.status(), r.len(), r.closed_reason)
