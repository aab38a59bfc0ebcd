"""The spec checker for op streams: ``validate_stream`` accepts exactly the valid streams.

burn counterpart: none as one function. burn spreads these rules over ``TensorCheck``
(``burn-tensor/src/tensor/api/check.rs``), the ``FusionTensor`` reference counts that decide
``TensorStatus`` (``burn-fusion/src/tensor.rs``) and the ``HandleContainer`` that panics on a
missing handle (``burn-ir/src/handle.rs``); fuselab raises a typed error (SPEC §8) naming the
op index and field instead.

The checks, in the order they run (the first failure is the error raised):

1. ``inputs``, by ascending id: dimensions, dtype, strides (non-negative, one per dim, no two
   elements at one offset), exactly one of ``data`` / ``random``, ``data`` in shape and dtype.
2. Each item in order. A ``Sync`` names live tensors. An op: its tensor fields in ``SCHEMA``
   order (dimensions; an input must be live, not ``NotInit``, and equal to the tensor's
   definition in shape and dtype; the output must be a fresh id with status ``NotInit``), then
   dtypes, then scalars, then the shape rule (``refimpl.shapes``) and ``out.shape``.

Liveness: the stream inputs are live from the start, except those an ``Init`` op creates (live
from that op on). A use with status ``ReadWrite`` consumes the tensor and a ``Drop`` releases
it: after the op, any further use, sync or drop of the id is an error (``StatusError`` after a
``ReadWrite`` use, ``TensorIdError`` after a ``Drop``). Ids are never reused.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from refimpl.data import InputSpec
from refimpl.dtypes import DType, DTypeClass
from refimpl.errors import (DTypeError, FieldTypeError, InputDataError, ShapeError, StatusError,
                            StrideError, TensorIdError)
from refimpl.ir import FieldKind, OperationIr, ScalarOpIr, Sync, TensorIr, TensorStatus
from refimpl.ops import OpKind, OutDType
from refimpl.shapes import expected_shape

if TYPE_CHECKING:  # stream imports validate; validate only names Stream in annotations
    from refimpl.stream import Stream

__all__ = ["validate_stream", "MAX_RANK", "MAX_DIM", "MAX_NUMEL", "MAX_STRIDE_CHECK",
           "tensor_fields"]

MAX_RANK = 32  # a higher rank is "absurd" (numpy holds at most 64 dimensions)
MAX_DIM = 2**31 - 1  # a larger dimension is "absurd"
MAX_NUMEL = 2**40  # so is a tensor with more elements
MAX_STRIDE_CHECK = 2**22  # interleaved strides are checked element by element up to this size

_INDEX_FIELDS = ("indices",)  # int tensors that address another operand
_MASK_FIELDS = ("mask",)  # bool tensors that select between operands
_PRECISION_FIELD = {ScalarOpIr: "lhs"}  # scalars take this field's dtype; others take out's


def tensor_fields(op: OperationIr) -> tuple[tuple[str, TensorIr], ...]:
    """Every tensor of ``op`` with its field path (``"lhs"``, ``"tensors.1"``), SCHEMA order."""
    found: list[tuple[str, TensorIr]] = []
    for name, kind in op.desc.SCHEMA:
        if kind is FieldKind.TENSOR:
            found.append((name, getattr(op.desc, name)))
        elif kind is FieldKind.TENSORS:
            found.extend((f"{name}.{i}", t) for i, t in enumerate(getattr(op.desc, name)))
    return tuple(found)


@dataclass
class _State:
    """What the walk knows about every id: its definition, and where it ended or starts."""

    defined: dict[int, tuple[tuple[int, ...], DType]] = field(default_factory=dict)
    ended: dict[int, tuple[str, int]] = field(default_factory=dict)  # id -> (how, op index)
    pending: dict[int, int] = field(default_factory=dict)  # Init target -> its Init's index
    planned: dict[int, tuple[tuple[int, ...], DType]] = field(default_factory=dict)  # its spec


def validate_stream(stream: Stream) -> None:
    """Raise the first ``StreamError`` of ``stream``; return ``None`` if it is valid."""
    _check_inputs(stream)
    state = _start(stream)
    for index, item in enumerate(stream.items):
        if isinstance(item, Sync):
            _check_sync(item, index, state)
        elif isinstance(item, OperationIr):
            _check_op(item, index, state)
        else:
            raise FieldTypeError(f"item is a {type(item).__name__}, not an op or a Sync",
                                 op_index=index)


def _start(stream: Stream) -> _State:
    state = _State()
    for index, item in enumerate(stream.items):
        if isinstance(item, OperationIr) and item.op.kind is OpKind.INIT:
            target = item.desc.out.id
            if target in stream.inputs and target not in state.pending:
                state.pending[target] = index
    for tid in sorted(stream.inputs):
        spec = stream.inputs[tid]
        target = state.planned if tid in state.pending else state.defined
        target[tid] = (tuple(spec.shape), spec.dtype)
    return state


# --- inputs ---------------------------------------------------------------------------------


def _check_inputs(stream: Stream) -> None:
    for tid in stream.inputs:
        if not _is_int(tid) or tid < 0:
            raise FieldTypeError(f"tensor id {tid!r} is not a non-negative integer",
                                 field=f"inputs.{tid}")
    for tid in sorted(stream.inputs):
        where = f"inputs.{tid}"
        spec = stream.inputs[tid]
        if not isinstance(spec, InputSpec):
            raise FieldTypeError(f"{type(spec).__name__} {spec!r} is not an InputSpec",
                                 field=where)
        _check_dims(spec.shape, None, None, f"{where}.shape")
        if not isinstance(spec.dtype, DType):
            raise DTypeError(f"{spec.dtype!r} is not a DType", field=f"{where}.dtype")
        _check_strides(spec, f"{where}.strides")
        _check_source(spec, where)


def _check_strides(spec: InputSpec, where: str) -> None:
    shape, strides = tuple(spec.shape), spec.strides
    if strides is None:
        return
    if not isinstance(strides, tuple | list) or len(strides) != len(shape):
        raise StrideError(f"strides {strides!r} do not match shape {list(shape)}", field=where)
    for s in strides:
        if not _is_int(s) or s < 0:
            raise StrideError(f"strides must be non-negative integers, got {list(strides)}",
                              field=where)
    if _numel(shape) == 0 or _nested(shape, strides):
        return
    if _numel(shape) > MAX_STRIDE_CHECK:
        raise StrideError(f"strides {list(strides)} interleave dims of shape {list(shape)}; "
                          f"such layouts are checked only up to {MAX_STRIDE_CHECK} elements",
                          field=where)
    _check_no_alias(shape, tuple(strides), where)


def _nested(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Each stride (dims of size > 1, by stride) exceeds every offset the smaller ones reach."""
    reach = 0
    for stride, size in sorted((s, n) for n, s in zip(shape, strides) if n > 1):
        if stride <= reach:
            return False
        reach += (size - 1) * stride
    return True


def _check_no_alias(shape: tuple[int, ...], strides: tuple[int, ...], where: str) -> None:
    import numpy as np

    offsets = np.zeros(shape, dtype=np.int64)
    for axis, (size, stride) in enumerate(zip(shape, strides)):
        offsets += (np.arange(size, dtype=np.int64) * stride).reshape(
            (size,) + (1,) * (len(shape) - axis - 1))
    flat = offsets.reshape(-1)
    order = np.argsort(flat, kind="stable")
    same = np.nonzero(flat[order][1:] == flat[order][:-1])[0]
    if same.size:
        a, b = (np.unravel_index(int(order[k]), shape) for k in (same[0], same[0] + 1))
        raise StrideError(f"strides {list(strides)} put elements {[int(i) for i in a]} and "
                          f"{[int(i) for i in b]} at offset {int(flat[order[same[0]]])}",
                          field=where)


# numpy kinds inline ``data`` may have per dtype class (refimpl.data accepts the same).
_DATA_KINDS = {DTypeClass.FLOAT: "fiu", DTypeClass.INT: "iu", DTypeClass.BOOL: "b"}


def _check_source(spec: InputSpec, where: str) -> None:
    has_data, has_random = spec.data is not None, spec.random is not None
    if has_data == has_random:
        which = "both" if has_data else "neither"
        raise InputDataError(f"an input needs exactly one of 'data' and 'random', got {which}",
                             field=f"{where}.data")
    if has_random:
        if not _is_int(spec.random) or spec.random < 0:
            raise InputDataError(f"random seed {spec.random!r} is not a non-negative integer",
                                 field=f"{where}.random")
        return
    _check_data(spec, f"{where}.data")


def _check_data(spec: InputSpec, where: str) -> None:
    import numpy as np

    try:
        values = np.array(spec.data)
    except (ValueError, OverflowError, TypeError):
        raise InputDataError("data is not a rectangular array of numbers", field=where) from None
    if values.shape != tuple(spec.shape):
        raise InputDataError(f"data has shape {list(values.shape)}, the input is "
                             f"{list(spec.shape)}", field=where)
    if values.size and values.dtype.kind not in _DATA_KINDS[spec.dtype.cls]:
        raise InputDataError(f"data holds {values.dtype.name} values, not {spec.dtype.value}",
                             field=where)
    if values.size and spec.dtype.is_int:
        info = np.iinfo(spec.dtype.numpy)
        if int(values.min()) < info.min or int(values.max()) > info.max:
            raise InputDataError(f"data values do not fit {spec.dtype.value}", field=where)


# --- items ----------------------------------------------------------------------------------


def _check_sync(sync: Sync, index: int, state: _State) -> None:
    seen: set[int] = set()
    for j, tid in enumerate(sync.tensors):
        where = f"tensors.{j}"
        if not _is_int(tid):
            raise FieldTypeError(f"{tid!r} is not a tensor id", op_index=index, field=where,
                                 op_name="Sync")
        if tid in seen:
            raise TensorIdError(f"tensor {tid} is listed twice", op_index=index, field=where,
                                op_name="Sync")
        seen.add(tid)
        _check_live(tid, index, where, "Sync", state)


def _check_op(op: OperationIr, index: int, state: _State) -> None:
    if not isinstance(op.desc, op.op.struct):
        raise FieldTypeError(f"operands are a {type(op.desc).__name__}, not a "
                             f"{op.op.struct.__name__}", op_index=index, op_name=op.name)
    for name, kind in op.desc.SCHEMA:
        if not _FIELD_OK[kind](getattr(op.desc, name)):
            raise FieldTypeError(f"{getattr(op.desc, name)!r} is not a valid {kind.value} "
                                 "field", op_index=index, field=name, op_name=op.name)
    tensors = tensor_fields(op)
    for path, tensor in tensors:
        _check_snapshot_types(tensor, index, op.name, path)
        _check_dims(tensor.shape, index, op.name, f"{path}.shape")
        if path == "out":
            _check_output(op, tensor, index, state)
        else:
            _check_use(op, path, tensor, index, state)
    _check_dtypes(op, index, tensors)
    _check_scalars(op, index)
    _check_out_shape(op, index)
    _apply(op, index, tensors, state)


# Python-level shape of each FieldKind (the JSON parser produces exactly these).
_FIELD_OK: dict[FieldKind, Callable[[Any], bool]] = {
    FieldKind.TENSOR: lambda v: True,  # checked operand by operand
    FieldKind.TENSORS: lambda v: isinstance(v, tuple | list) and len(v) > 0,
    FieldKind.SCALAR: lambda v: True,  # checked by _check_scalars, with the op's family
    FieldKind.INT: lambda v: _is_int(v),
    FieldKind.INTS: lambda v: isinstance(v, tuple | list) and all(_is_int(x) for x in v),
    FieldKind.RANGES: lambda v: isinstance(v, tuple | list) and all(
        isinstance(r, tuple | list) and len(r) == 2 and all(_is_int(x) for x in r) for r in v),
    FieldKind.BOOL: lambda v: isinstance(v, bool),
    FieldKind.TEXT: lambda v: isinstance(v, str),
}


def _check_live(tid: int, index: int, where: str, name: str, state: _State) -> None:
    if tid in state.ended:
        how, at = state.ended[tid]
        cls, text = _ENDED[how]
        raise cls(f"tensor {tid} was {text} at op {at}: nothing may use it after that",
                  op_index=index, field=where, op_name=name)
    if tid in state.pending:
        raise TensorIdError(f"tensor {tid} is created by the Init at op {state.pending[tid]}",
                            op_index=index, field=where, op_name=name)
    if tid not in state.defined:
        raise TensorIdError(f"unknown tensor {tid}", op_index=index, field=where, op_name=name)


# How a tensor ended -> the error a later mention raises, and how the message says it.
_ENDED = {"Drop": (TensorIdError, "dropped"), "ReadWrite": (StatusError, "consumed (ReadWrite)")}


def _check_use(op: OperationIr, path: str, t: TensorIr, index: int, state: _State) -> None:
    _check_live(t.id, index, f"{path}.id", op.name, state)
    if t.status is TensorStatus.NotInit:
        raise StatusError(f"input tensor {t.id} has status NotInit", op_index=index,
                          field=f"{path}.status", op_name=op.name)
    if op.op.kind is OpKind.DROP and t.status is not TensorStatus.ReadWrite:
        raise StatusError(f"a Drop must carry status ReadWrite, got {t.status.value}",
                          op_index=index, field=f"{path}.status", op_name=op.name)
    _check_definition(op, path, t, state.defined[t.id], index)


def _check_definition(op: OperationIr, path: str, t: TensorIr,
                      defined: tuple[tuple[int, ...], DType], index: int) -> None:
    shape, dtype = defined
    if tuple(t.shape) != shape:
        raise ShapeError(f"tensor {t.id} is {list(shape)}, this snapshot says {list(t.shape)}",
                         op_index=index, field=f"{path}.shape", op_name=op.name)
    if t.dtype is not dtype:
        raise DTypeError(f"tensor {t.id} is {dtype.value}, this snapshot says "
                         f"{_dtype_name(t.dtype)}", op_index=index, field=f"{path}.dtype",
                         op_name=op.name)


def _check_output(op: OperationIr, t: TensorIr, index: int, state: _State) -> None:
    if t.status is not TensorStatus.NotInit:
        raise StatusError(f"an output must have status NotInit, got {t.status.value}",
                          op_index=index, field="out.status", op_name=op.name)
    if op.op.kind is OpKind.INIT:
        if state.pending.get(t.id) != index:
            raise TensorIdError(f"Init must create an input not yet live; tensor {t.id} is not",
                                op_index=index, field="out.id", op_name=op.name)
        _check_definition(op, "out", t, state.planned[t.id], index)
        return
    if t.id in state.defined or t.id in state.pending or t.id in state.ended:
        raise TensorIdError(f"output id {t.id} is already in use", op_index=index,
                            field="out.id", op_name=op.name)


def _apply(op: OperationIr, index: int, tensors, state: _State) -> None:
    how = "Drop" if op.op.kind is OpKind.DROP else "ReadWrite"
    for path, t in tensors:
        if path == "out":
            state.pending.pop(t.id, None)
            state.defined[t.id] = (tuple(t.shape), t.dtype)
        elif how == "Drop" or t.status is TensorStatus.ReadWrite:
            state.ended.setdefault(t.id, (how, index))


# --- dimensions, dtypes, scalars, shapes ----------------------------------------------------


def _check_snapshot_types(t: Any, index: int, name: str, path: str) -> None:
    """A Python-built stream holds real ``TensorIr`` values (the JSON parser guarantees it)."""
    if not isinstance(t, TensorIr):
        raise FieldTypeError(f"{t!r} is not a TensorIr", op_index=index, field=path,
                             op_name=name)
    if not _is_int(t.id) or t.id < 0:
        raise FieldTypeError(f"tensor id {t.id!r} is not a non-negative integer",
                             op_index=index, field=f"{path}.id", op_name=name)
    if not isinstance(t.dtype, DType):
        raise DTypeError(f"{t.dtype!r} is not a DType", op_index=index, field=f"{path}.dtype",
                         op_name=name)
    if not isinstance(t.status, TensorStatus):
        raise StatusError(f"{t.status!r} is not a TensorStatus", op_index=index,
                          field=f"{path}.status", op_name=name)


def _check_dims(shape: Any, index: int | None, name: str | None, where: str) -> None:
    if not isinstance(shape, tuple | list) or not all(_is_int(d) for d in shape):
        raise FieldTypeError(f"shape {shape!r} is not a list of integers", op_index=index,
                             field=where, op_name=name)
    if not 1 <= len(shape) <= MAX_RANK:
        raise ShapeError(f"rank {len(shape)}: burn tensors have at least one dimension, and a "
                         f"rank above {MAX_RANK} is absurd", op_index=index, field=where,
                         op_name=name)
    for d in shape:
        if d < 0:
            raise ShapeError(f"negative dimension in {list(shape)}", op_index=index,
                             field=where, op_name=name)
        if d > MAX_DIM:
            raise ShapeError(f"absurd dimension {d} (> 2**31-1) in {list(shape)}",
                             op_index=index, field=where, op_name=name)
    if _numel(shape) > MAX_NUMEL:
        raise ShapeError(f"absurd size: {list(shape)} has more than 2**40 elements",
                         op_index=index, field=where, op_name=name)


# How each OutDType rule constrains ``out.dtype`` given the op's main dtype.
_OUT_DTYPE: dict[OutDType, tuple[Callable[[DType, DType | None, DTypeClass | None], bool], str]] = {
    OutDType.SAME: (lambda out, main, fam: main is None or out is main, "the operands' dtype"),
    OutDType.BOOL: (lambda out, main, fam: out is DType.BOOL, "bool"),
    OutDType.INT: (lambda out, main, fam: out.is_int, "an int dtype"),
    OutDType.FLOAT: (lambda out, main, fam: out.is_float, "a float dtype"),
    OutDType.FAMILY: (lambda out, main, fam: fam is None or out.cls is fam,
                      "a dtype of the op's family"),
}


def _check_dtypes(op: OperationIr, index: int, tensors) -> None:
    family = op.op.family
    main: DType | None = None
    for path, t in tensors:
        base = path.split(".")[0]
        if path == "out":
            continue
        if base in _MASK_FIELDS:
            _expect(t.dtype is DType.BOOL, op, index, path, t, "bool")
        elif base in _INDEX_FIELDS:
            _expect(t.dtype.is_int, op, index, path, t, "an int dtype")
        else:
            _expect(family is None or t.dtype.cls is family, op, index, path, t,
                    f"a {family.value if family else ''} dtype ({op.op.category.value})")
            _expect(main is None or t.dtype is main, op, index, path, t,
                    f"{main.value if main else ''} (the first operand's dtype)")
            main = main or t.dtype
    if op.outputs():
        allowed, text = _OUT_DTYPE[op.op.out_dtype]
        _expect(allowed(op.desc.out.dtype, main, family), op, index, "out", op.desc.out, text)


def _expect(ok: bool, op: OperationIr, index: int, path: str, t: TensorIr, text: str) -> None:
    if not ok:
        raise DTypeError(f"{op.name} needs {text} here, got {_dtype_name(t.dtype)}",
                         op_index=index, field=f"{path}.dtype", op_name=op.name)


def _check_scalars(op: OperationIr, index: int) -> None:
    family = op.op.family
    precision_field = _PRECISION_FIELD.get(type(op.desc), "out")
    for name, kind in op.desc.SCHEMA:
        if kind is not FieldKind.SCALAR:
            continue
        value = getattr(op.desc, name)
        problem = _scalar_problem(value, family, getattr(op.desc, precision_field).dtype)
        if problem:
            raise DTypeError(f"scalar {value!r}: {problem}", op_index=index, field=name,
                             op_name=op.name)


def _scalar_problem(value: Any, family: DTypeClass | None, dtype: DType) -> str | None:
    """Why ``value`` cannot be a scalar of an op of ``family`` at precision ``dtype``."""
    import numpy as np

    is_bool = isinstance(value, bool | np.bool_)
    if family is DTypeClass.BOOL:
        return None if is_bool else "a bool op takes true or false"
    if is_bool or not isinstance(value, numbers.Real):
        return "a numeric op takes a number"
    if family is not DTypeClass.INT:
        return None
    if isinstance(value, numbers.Integral):
        whole = int(value)
    elif float(value).is_integer():
        whole = int(value)
    else:
        return "an int op takes an integral number"
    if dtype.is_int:
        info = np.iinfo(dtype.numpy)
        if not info.min <= whole <= info.max:
            return f"out of range for {dtype.value}"
    return None


def _check_out_shape(op: OperationIr, index: int) -> None:
    expected = expected_shape(op, index)
    if expected is not None and tuple(op.desc.out.shape) != tuple(expected):
        raise ShapeError(f"{op.name} gives shape {list(expected)}, out says "
                         f"{list(op.desc.out.shape)}", op_index=index, field="out.shape",
                         op_name=op.name)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _dtype_name(dtype: Any) -> str:
    return dtype.value if isinstance(dtype, DType) else repr(dtype)

