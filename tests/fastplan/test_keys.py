"""fastplan's op keys (``fastplan/_keys.pyx``): the search's encoding of a queued op is read
from its key, the queue takes a relative op again for an equal key only when nothing the key
holds up to ``==`` differs, and field reads are cached by exact type.

Checked on both twins elsewhere: two relative ops have equal keys exactly when they are ``==``
(``ExecutionPlanStore.find``, tests/planner/test_cache.py), and the queue maps ids and dims as
refimpl's converter does (tests/planner/test_queue_relative_ops.py)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, note

import fastplan
from refimpl.ir import OperationIr
from refimpl.planner.stream.relative import OperationConverter, to_relative
from refimpl.planner.search.strategy import BlockOptimization, Operations
from refimpl.strategies import streams
from refimpl.stream import stream_to_json
from tests.planner.burn_mocks import operation_1, operation_2

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")


def _with_scalar(op: OperationIr, value) -> OperationIr:
    return OperationIr(op.op, dataclasses.replace(op.desc, rhs=value))


def _encodings_from_keys(stream) -> list[tuple[tuple, tuple]]:
    """Per op the queue relativises: its ``EncodedOp`` read from the key, and the one encoded
    from the relative ``OperationIr`` (``fastplan.stream.relative.encode``), as C values."""
    from fastplan.stream.queue import OperationQueue
    from fastplan.stream.relative import encode_key_op, encode_op

    queue = OperationQueue()
    for index, op in enumerate(stream.ops):
        queue.add(index, op)
    relative = queue.operations()
    return [(encode_key_op(key, op).fields(), encode_op(op).fields())
            for key, op in zip(queue.keys, relative, strict=True)]


@given(stream=streams(max_ops=12, max_rank=4))
def test_encoding_read_from_a_key_is_the_ops_encoding(stream):
    """The search's ``EncodedOp`` of a queued op is read from its key (``encode_key``): it
    must hold what encoding the relative op itself gives, field by field."""
    note(stream_to_json(stream))
    for from_key, from_op in _encodings_from_keys(stream):
        assert from_key == from_op


@pytest.mark.parametrize("workload", ["elementwise", "transformer", "mixed"])
def test_encoding_read_from_a_key_on_the_benchmark_streams(workload):
    from fuselab import workloads

    pairs = _encodings_from_keys(workloads.build(workload, 400))
    assert len(pairs) > 300
    kinds = {from_key[2] for from_key, _ in pairs}  # struct codes met
    assert len(kinds) >= 3
    for from_key, from_op in pairs:
        assert from_key == from_op


def test_encoding_read_from_a_key_refuses_a_key_of_another_layout():
    from fastplan.stream.queue import OperationQueue
    from fastplan.stream.relative import encode_key_op

    queue = OperationQueue()
    queue.add(0, operation_1())
    key, op = queue.keys[0], queue.operations()[0]
    assert encode_key_op(key, op).fields()[0] == op.op.code
    with pytest.raises(ValueError, match="op code"):
        encode_key_op(key[:8], op)
    with pytest.raises(ValueError, match="op code"):  # a struct code its op does not take
        encode_key_op(key[:8] + (int.from_bytes(key[8:16], "little") + 1).to_bytes(8, "little")
                      + key[16:], op)
    for broken in (key[:-8], key + bytes(8), key[:16] + (2**40).to_bytes(8, "little") * 3):
        with pytest.raises(ValueError, match="does not hold"):
            encode_key_op(broken, op)


def _swap(first: int, out: int, dim1, dim2=0) -> OperationIr:
    from refimpl.dtypes import DType
    from refimpl.ir import SwapDimsOpIr, TensorIr, TensorStatus
    from refimpl.ops import op_named

    return OperationIr(op_named("BaseFloat.SwapDims"), SwapDimsOpIr(
        TensorIr(first, (2, 3), DType.F32, TensorStatus.ReadOnly),
        TensorIr(out, (3, 2), DType.F32, TensorStatus.NotInit), dim1, dim2))


def _relative_after_drains(ops: list[OperationIr]) -> list[OperationIr]:
    """Each op queued alone (the one before drained), as the queue relativises it."""
    from fastplan.stream.queue import OperationQueue

    queue = OperationQueue()
    found = []
    for index, op in enumerate(ops):
        queue.add(index, op)
        found.append(queue.operations()[0])
        queue.execute_unfused(BlockOptimization(Operations((0,)), (0,)))
    return found


def test_queue_takes_a_relative_op_again_only_when_indistinguishable():
    """Equal keys, equal ops: the queue reuses the relative op it built before (relative ids
    restart at each drain) unless a value the key holds only up to ``==`` differs in type or
    sign (``True`` for 1, ``-0.0`` for 0.0): what it hands out is what relativising gives."""
    ops = [_swap(10, 11, 1), _swap(20, 21, 1), _swap(30, 31, True), _swap(40, 41, 1),
           _with_scalar(operation_2(), 0.0), _with_scalar(operation_2(), -0.0)]
    found = _relative_after_drains(ops)
    expected = [to_relative(op, OperationConverter()) for op in ops]
    assert [repr(op) for op in found] == [repr(op) for op in expected]
    assert found[1] is found[0]  # taken again
    assert found[2] is not found[0] and type(found[2].desc.dim1) is bool
    assert type(found[3].desc.dim1) is int
    assert found[1] == found[2]  # equal keys all along


# --- field reads cached by exact type (``_keys.field``) -------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Slotted:
    shape: object
    other: object = None


class _SubSlotted(_Slotted):
    __slots__ = ()


class _Plain:
    def __init__(self, shape):
        self.shape = shape


def test_field_read_is_getattr_and_caches_the_exact_type():
    from fastplan._keys import FieldProbe

    probe = FieldProbe("shape")
    first, second = _Slotted((1, 2)), _Slotted((3,))
    assert probe.read(first) == (1, 2) and probe.cached is _Slotted
    assert probe.read(second) == (3,)  # served from the slot
    assert probe.read(_Plain("p")) == "p" and probe.cached is _Slotted  # no slot: not cached
    assert probe.read(_SubSlotted((4,))) == (4,) and probe.cached is _SubSlotted
    assert probe.read(second) == (3,) and probe.cached is _Slotted


def test_field_read_raises_as_getattr_does():
    from fastplan._keys import FieldProbe

    probe = FieldProbe("shape")
    probe.read(_Slotted(()))
    unset = object.__new__(_Slotted)  # the slot left empty
    with pytest.raises(AttributeError):
        probe.read(unset)
    with pytest.raises(AttributeError):
        FieldProbe("nope").read(_Slotted(()))


def test_field_read_follows_a_modified_type():
    """A class changed after the cache was filled (a property over the field, then a
    ``__getattribute__``) is read as ``getattr`` reads it: the version tag moved."""
    from fastplan._keys import FieldProbe

    @dataclasses.dataclass(slots=True)
    class Changing:
        shape: object

    probe = FieldProbe("shape")
    item = Changing("slot")
    assert probe.read(item) == "slot" and probe.cached is Changing
    member = Changing.shape
    Changing.shape = property(lambda self: "property")
    assert probe.read(item) == "property"
    Changing.shape = member
    assert probe.read(item) == "slot"
    Changing.__getattribute__ = lambda self, name: "intercepted"
    assert probe.read(item) == "intercepted"
    assert probe.read(item) == "intercepted"
