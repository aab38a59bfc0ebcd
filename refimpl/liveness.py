"""Derive burn's tensor statuses and ``Drop`` ops for a hand-written stream.

burn counterpart: the reference counting of ``FusionTensor`` (``crates/burn-fusion/src/
tensor.rs``): ``into_ir`` gives ``ReadWrite`` when the handle being consumed is the last
reference and ``ReadOnly`` otherwise, outputs are ``NotInit`` (``to_ir_out``), and dropping
the last reference of a tensor that was never consumed ``ReadWrite`` registers
``OperationIr::Drop`` (notes §2.1).

A hand-written stream says which tensors the user touches, not when the user lets go of
them. ``with_liveness`` assumes the user releases every tensor right after its *last
mention*, where a mention is a use as an op input, a listing in a ``Sync``, or an explicit
``Drop`` (which therefore marks a release point: writing ``Drop`` late keeps a tensor held).
The rule, per tensor id:

1. An op output is ``NotInit``.
2. A use as an op input is ``ReadWrite`` iff it is the tensor's last mention (and, when the
   op names the tensor more than once, the last of those operands in field order, as
   ``x.clone() * x`` gives ``ReadOnly, ReadWrite`` in burn); every other use is ``ReadOnly``.
   So a tensor synced later is ``ReadOnly`` at every use before that sync: the user holds it.
3. A tensor whose last mention is a ``Sync`` gets no ``Drop`` (the read-back takes it, as
   burn's ``into_data`` does).
4. An explicit ``Drop`` stays where it is, with status ``ReadWrite`` (burn's Drop carries
   ``ReadWrite``).
5. A tensor produced by an op and never mentioned gets a ``Drop`` right after that op (the
   result was discarded). A stream input never mentioned gets nothing: the user still holds
   it.

Snapshots keep their shapes and dtypes; only statuses change and drops are inserted. The
result is validated (``validate=False`` skips that): a structurally broken stream (unknown
ids, a use after an explicit Drop, ...) is reported, not repaired.
"""

from __future__ import annotations

from dataclasses import replace

from refimpl.ir import FieldKind, OperationIr, StreamItem, Sync, TensorIr, TensorStatus
from refimpl.ops import OpKind, op_named
from refimpl.stream import Stream, stream_from_json, stream_to_json
from refimpl.validate import validate_stream

__all__ = ["with_liveness", "liveness_json", "last_mentions"]

_DROP = op_named("Drop")


def last_mentions(stream: Stream) -> dict[int, int]:
    """Tensor id → position of its last mention (op input, Sync listing or Drop)."""
    last: dict[int, int] = {}
    for pos, item in enumerate(stream.items):
        ids = item.tensors if isinstance(item, Sync) else (t.id for t in item.inputs())
        for tid in ids:
            last[tid] = pos
    return last


def with_liveness(stream: Stream, *, validate: bool = True) -> Stream:
    """``stream`` with burn's statuses and drops derived from liveness (rules in the docstring)."""
    last = last_mentions(stream)
    items: list[StreamItem] = []
    for pos, item in enumerate(stream.items):
        if isinstance(item, Sync):
            items.append(item)
            continue
        items.append(_restatus(item, pos, last))
        for out in item.outputs():
            if out.id not in last:
                items.append(_drop(out))
    result = Stream(inputs=stream.inputs, items=tuple(items))
    if validate:
        validate_stream(result)
    return result


def liveness_json(source: str | bytes | dict) -> str:
    """JSON in, JSON out: parse without validating, derive liveness, validate, write."""
    return stream_to_json(with_liveness(stream_from_json(source, validate=False)))


def _restatus(op: OperationIr, pos: int, last: dict[int, int]) -> OperationIr:
    """The op with every operand's status set by the rule."""
    if op.op.kind is OpKind.DROP:
        return OperationIr(op.op, replace(op.desc, tensor=_with(op.desc.tensor, True)))
    final = _final_operand(op) if op.inputs() else {}
    changes = {}
    for name, kind in op.desc.SCHEMA:
        value = getattr(op.desc, name)
        if name == "out":
            changes[name] = value.with_status(TensorStatus.NotInit)
        elif kind is FieldKind.TENSOR:
            changes[name] = _with(value, last.get(value.id) == pos and final[value.id] == name)
        elif kind is FieldKind.TENSORS:
            changes[name] = tuple(
                _with(t, last.get(t.id) == pos and final[t.id] == f"{name}.{i}")
                for i, t in enumerate(value))
    return OperationIr(op.op, replace(op.desc, **changes))


def _final_operand(op: OperationIr) -> dict[int, str]:
    """Tensor id → path of the op's last input operand naming it (field order)."""
    final: dict[int, str] = {}
    for name, kind in op.desc.SCHEMA:
        if name == "out":
            continue
        if kind is FieldKind.TENSOR:
            final[getattr(op.desc, name).id] = name
        elif kind is FieldKind.TENSORS:
            for i, t in enumerate(getattr(op.desc, name)):
                final[t.id] = f"{name}.{i}"
    return final


def _with(t: TensorIr, consumed: bool) -> TensorIr:
    return t.with_status(TensorStatus.ReadWrite if consumed else TensorStatus.ReadOnly)


def _drop(t: TensorIr) -> OperationIr:
    """burn's ``OperationIr::Drop`` for a tensor released without a ReadWrite use."""
    return OperationIr(_DROP, _DROP.struct(tensor=t.with_status(TensorStatus.ReadWrite)))
