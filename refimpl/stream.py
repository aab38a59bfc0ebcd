"""The op stream: inputs that exist before it, then ``OperationIr``s and ``Sync`` points.

burn counterpart: the operation queue a ``burn-fusion`` stream accumulates
(``crates/burn-fusion/src/stream/queue``); the JSON form (format version 1, SPEC §2) is
fuselab's own and is documented in ``docs/stream-format.md``.

``stream_from_json`` parses a document (text, bytes or the decoded object) into a ``Stream``
and, unless ``validate=False``, runs ``refimpl.validate.validate_stream`` on it. Every parsing
error is a typed ``StreamError`` naming the op index and the field (``"lhs.status"``,
``"inputs.3.strides"``). ``stream_to_json`` writes the canonical text: fixed layout (one input
or op per line), keys in SCHEMA order, inputs by ascending id, scalars and inline data spelt
in their dtype's family (``2.0`` for a float op); the same stream always gives the same bytes,
and ``stream_to_json(stream_from_json(text))`` is a fixed point after one round trip.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from refimpl.data import InputSpec  # there so that validate needs no stream; public here too
from refimpl.dtypes import DType, DTypeClass
from refimpl.errors import (DTypeError, FieldTypeError, MissingFieldError, StatusError,
                            StreamError, StreamFormatError, UnknownOpError)
from refimpl.ir import FieldKind, OperationIr, StreamItem, Sync, TensorIr, TensorStatus
from refimpl.ops import OP_BY_NAME, Op
from refimpl.validate import validate_stream

__all__ = [
    "InputSpec",
    "Stream",
    "FORMAT_VERSION",
    "stream_from_json",
    "stream_to_json",
    "load_stream",
    "save_stream",
]

FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class Stream:
    """A whole stream: ``inputs`` by tensor id, then ``items`` in order."""

    inputs: dict[int, InputSpec]
    items: tuple[StreamItem, ...]

    # Positions in ``items`` are the op indices everywhere (plans, errors): a ``Sync`` takes a
    # position like any op, exactly as in the JSON ``ops`` list.

    @property
    def ops(self) -> tuple[OperationIr, ...]:
        """The operations, syncs left out."""
        return tuple(item for item in self.items if isinstance(item, OperationIr))

    def syncs(self) -> tuple[Sync, ...]:
        return tuple(item for item in self.items if isinstance(item, Sync))

    def to_json(self) -> str:
        """The canonical JSON text (``stream_to_json``)."""
        return stream_to_json(self)

    @staticmethod
    def from_json(source: str | bytes | dict, *, validate: bool = True) -> Stream:
        """Parse a JSON stream (``stream_from_json``)."""
        return stream_from_json(source, validate=validate)


# --- reading --------------------------------------------------------------------------------

_TOP_KEYS = ("version", "inputs", "ops")
_INPUT_KEYS = ("shape", "dtype", "strides", "data", "random")
_INPUT_REQUIRED = ("shape", "dtype")
_TENSOR_KEYS = ("id", "shape", "dtype", "status")
_SYNC_KEYS = ("op", "tensors")
_ID_TEXT = re.compile(r"0|[1-9][0-9]*")
_MAX_ID = 2**64 - 1  # burn's TensorId is a u64


@dataclass(frozen=True, slots=True)
class _At:
    """Where the parser is: op index (``None`` in ``inputs``), op name and op (for scalars)."""

    index: int | None = None
    name: str | None = None
    op: Op | None = None

    def fail(self, cls: type[StreamError], where: str | None, message: str):
        raise cls(message, op_index=self.index, field=where, op_name=self.name)


def stream_from_json(source: str | bytes | dict, *, validate: bool = True) -> Stream:
    """Parse a version-1 JSON stream (text, bytes or decoded object) into a ``Stream``."""
    doc = _decode(source) if isinstance(source, str | bytes | bytearray) else source
    if not isinstance(doc, dict):
        raise StreamFormatError(f"a stream is a JSON object, got {_kind(doc)}")
    _check_top(doc)
    inputs = _parse_inputs(doc.get("inputs", {}))
    items = tuple(_parse_item(i, obj) for i, obj in enumerate(doc["ops"]))
    stream = Stream(inputs=inputs, items=items)
    if validate:
        validate_stream(stream)
    return stream


def load_stream(path: str | Path, *, validate: bool = True) -> Stream:
    """Read and parse a stream file (UTF-8 JSON)."""
    return stream_from_json(Path(path).read_bytes(), validate=validate)


def _decode(source: str | bytes | bytearray) -> Any:
    try:
        text = source if isinstance(source, str) else bytes(source).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StreamFormatError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise StreamFormatError(f"bad JSON: {exc.msg} at line {exc.lineno} column "
                                f"{exc.colno}") from None
    except RecursionError:
        raise StreamFormatError("bad JSON: nested too deeply") from None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise StreamFormatError(f"duplicate key {key!r}", field=key)
        obj[key] = value
    return obj


def _check_top(doc: dict) -> None:
    for key in ("version", "ops"):
        if key not in doc:
            raise StreamFormatError(f"missing top-level key {key!r}", field=key)
    for key in sorted(doc, key=str):
        if key not in _TOP_KEYS:
            raise StreamFormatError(f"unknown top-level key {key!r}", field=key)
    version = doc["version"]
    if not _is_int(version) or version != FORMAT_VERSION:
        raise StreamFormatError(f"version {version!r} is not supported (this is version "
                                f"{FORMAT_VERSION})", field="version")
    if not isinstance(doc.get("inputs", {}), dict):
        raise StreamFormatError(f"inputs is an object, got {_kind(doc['inputs'])}",
                                field="inputs")
    if not isinstance(doc["ops"], list):
        raise StreamFormatError(f"ops is a list, got {_kind(doc['ops'])}", field="ops")


def _parse_inputs(obj: dict) -> dict[int, InputSpec]:
    at, specs = _At(), {}
    for key in sorted(obj, key=str):
        if not isinstance(key, str) or not _ID_TEXT.fullmatch(key) or int(key) > _MAX_ID:
            at.fail(FieldTypeError, f"inputs.{key}", "an input key is a tensor id in decimal")
    for tid in sorted(int(key) for key in obj):
        specs[tid] = _parse_input(obj[str(tid)], f"inputs.{tid}", at)
    return specs


def _parse_input(obj: Any, where: str, at: _At) -> InputSpec:
    _check_keys(obj, _INPUT_REQUIRED, _INPUT_KEYS, where, at)
    for key in ("strides", "data", "random"):
        if key in obj and obj[key] is None:
            at.fail(FieldTypeError, f"{where}.{key}", f"{key} is null; leave it out instead")
    strides = obj.get("strides")
    random = obj.get("random")
    if random is not None and not _is_int(random):
        at.fail(FieldTypeError, f"{where}.random", f"random is a seed (an integer), got "
                f"{_kind(random)}")
    return InputSpec(
        shape=_ints(obj["shape"], f"{where}.shape", at),
        dtype=_dtype(obj["dtype"], f"{where}.dtype", at),
        strides=None if strides is None else _ints(strides, f"{where}.strides", at),
        data=obj.get("data"),
        random=random,
    )


def _parse_item(index: int, obj: Any) -> StreamItem:
    at = _At(index)
    if not isinstance(obj, dict):
        at.fail(FieldTypeError, None, f"an op is a JSON object, got {_kind(obj)}")
    if "op" not in obj:
        at.fail(MissingFieldError, "op", "missing field 'op'")
    name = obj["op"]
    if not isinstance(name, str):
        at.fail(FieldTypeError, "op", f"op is a name, got {_kind(name)}")
    if name == "Sync":
        return _parse_sync(obj, _At(index, "Sync"))
    if name not in OP_BY_NAME:
        near = difflib.get_close_matches(name, list(OP_BY_NAME), n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        at.fail(UnknownOpError, "op", f"unknown op {name!r}{hint}")
    return _parse_op(obj, _At(index, name, OP_BY_NAME[name]))


def _parse_sync(obj: dict, at: _At) -> Sync:
    _check_keys(obj, _SYNC_KEYS, _SYNC_KEYS, None, at)
    ids = obj["tensors"]
    if not isinstance(ids, list):
        at.fail(FieldTypeError, "tensors", f"tensors is a list of ids, got {_kind(ids)}")
    return Sync(tuple(_id(v, f"tensors.{j}", at) for j, v in enumerate(ids)))


def _parse_op(obj: dict, at: _At) -> OperationIr:
    struct = at.op.struct
    names = ("op",) + tuple(name for name, _ in struct.SCHEMA)
    _check_keys(obj, names, names, None, at)
    values = {name: _FIELD_PARSERS[kind](obj[name], name, at) for name, kind in struct.SCHEMA}
    return OperationIr(at.op, struct(**values))


def _check_keys(obj: Any, required: tuple[str, ...], allowed: tuple[str, ...],
                where: str | None, at: _At) -> None:
    prefix = f"{where}." if where else ""
    if not isinstance(obj, dict):
        at.fail(FieldTypeError, where, f"expected a JSON object, got {_kind(obj)}")
    for key in required:
        if key not in obj:
            at.fail(MissingFieldError, prefix + key, f"missing field {key!r}")
    for key in sorted(obj, key=str):
        if key not in allowed:
            at.fail(MissingFieldError, prefix + key,
                    f"unknown field {key!r} (fields: {', '.join(allowed)})")


def _tensor(value: Any, where: str, at: _At) -> TensorIr:
    _check_keys(value, _TENSOR_KEYS, _TENSOR_KEYS, where, at)
    return TensorIr(
        id=_id(value["id"], f"{where}.id", at),
        shape=_ints(value["shape"], f"{where}.shape", at),
        dtype=_dtype(value["dtype"], f"{where}.dtype", at),
        status=_status(value["status"], f"{where}.status", at),
    )


def _tensors(value: Any, where: str, at: _At) -> tuple[TensorIr, ...]:
    if not isinstance(value, list) or not value:
        at.fail(FieldTypeError, where, f"expected a non-empty list of tensors, got "
                f"{_kind(value)}")
    return tuple(_tensor(t, f"{where}.{i}", at) for i, t in enumerate(value))


def _scalar(value: Any, where: str, at: _At) -> Any:
    """A JSON number (or bool) converted to the op family's scalar type where exact."""
    if not isinstance(value, int | float):
        at.fail(FieldTypeError, where, f"a scalar is a JSON number, got {_kind(value)}")
    if isinstance(value, bool):
        return value
    family = at.op.family
    if family is DTypeClass.FLOAT:
        try:
            return float(value)
        except OverflowError:
            at.fail(FieldTypeError, where, "number too large for a float")
    if family is DTypeClass.INT and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _int(value: Any, where: str, at: _At) -> int:
    if not _is_int(value):
        at.fail(FieldTypeError, where, f"expected an integer, got {_kind(value)}")
    return value


def _ints(value: Any, where: str, at: _At) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(_is_int(v) for v in value):
        at.fail(FieldTypeError, where, f"expected a list of integers, got {_kind(value)}")
    return tuple(value)


def _ranges(value: Any, where: str, at: _At) -> tuple[tuple[int, int], ...]:
    if not isinstance(value, list):
        at.fail(FieldTypeError, where, f"expected a list of [start, end] pairs, got "
                f"{_kind(value)}")
    for i, pair in enumerate(value):
        if not isinstance(pair, list) or len(pair) != 2 or not all(_is_int(v) for v in pair):
            at.fail(FieldTypeError, f"{where}.{i}", "a range is [start, end] (two integers)")
    return tuple((pair[0], pair[1]) for pair in value)


def _typed(kind: type, text: str):
    """A parser for a field holding one JSON type (``bool``, ``str``)."""

    def parse(value: Any, where: str, at: _At) -> Any:
        if not isinstance(value, kind):
            at.fail(FieldTypeError, where, f"expected {text}, got {_kind(value)}")
        return value

    return parse


def _id(value: Any, where: str, at: _At) -> int:
    if not _is_int(value) or not 0 <= value <= _MAX_ID:
        at.fail(FieldTypeError, where, f"a tensor id is an integer in [0, 2**64), got "
                f"{value!r}")
    return value


def _named(value: Any, where: str, at: _At, enum: type, cls: type[StreamError]) -> Any:
    """A member of ``enum`` (DType, TensorStatus) by its stream name; unknown names → ``cls``."""
    names = tuple(member.value for member in enum)
    if not isinstance(value, str):
        at.fail(FieldTypeError, where, f"expected a name, got {_kind(value)}")
    if value not in names:
        at.fail(cls, where, f"unknown {enum.__name__} {value!r} (one of {', '.join(names)})")
    return enum(value)


def _dtype(value: Any, where: str, at: _At) -> DType:
    return _named(value, where, at, DType, DTypeError)


def _status(value: Any, where: str, at: _At) -> TensorStatus:
    return _named(value, where, at, TensorStatus, StatusError)


# One parser per FieldKind: (JSON value, field path, position) -> Python value.
_FIELD_PARSERS = {
    FieldKind.TENSOR: _tensor,
    FieldKind.TENSORS: _tensors,
    FieldKind.SCALAR: _scalar,
    FieldKind.INT: _int,
    FieldKind.INTS: _ints,
    FieldKind.RANGES: _ranges,
    FieldKind.BOOL: _typed(bool, "true or false"),
    FieldKind.TEXT: _typed(str, "a string"),
}


# --- writing --------------------------------------------------------------------------------


def stream_to_json(stream: Stream) -> str:
    """The canonical JSON text of ``stream`` (same stream, same bytes; ends with a newline)."""
    inputs = [f'  "{tid}": {_dumps(_input_json(stream.inputs[tid]))}'
              for tid in sorted(stream.inputs)]
    items = [f"  {_dumps(_item_json(item))}" for item in stream.items]
    head = ' "inputs": {\n' + ",\n".join(inputs) + "}," if inputs else ' "inputs": {},'
    tail = ' "ops": [\n' + ",\n".join(items) + "]}" if items else ' "ops": []}'
    return f'{{"version": {FORMAT_VERSION},\n{head}\n{tail}\n'


def save_stream(stream: Stream, path: str | Path) -> None:
    """Write ``stream``'s canonical JSON text to ``path`` (UTF-8)."""
    Path(path).write_text(stream_to_json(stream), encoding="utf-8")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(", ", ": "), ensure_ascii=True, allow_nan=True)


def _input_json(spec: InputSpec) -> dict:
    obj: dict[str, Any] = {"shape": list(spec.shape), "dtype": spec.dtype.value}
    if spec.strides is not None:
        obj["strides"] = list(spec.strides)
    if spec.data is not None:
        obj["data"] = _data_json(spec.data, spec.dtype)
    if spec.random is not None:
        obj["random"] = spec.random
    return obj


def _data_json(data: Any, dtype: DType) -> Any:
    """Inline data with every value spelt in the dtype's family (``1`` → ``1.0`` for f32)."""
    import numpy as np

    try:
        values = np.asarray(data)
    except (ValueError, TypeError, OverflowError):
        return data  # not valid data: written as given, validation reports it
    if values.dtype.kind not in _DATA_KINDS[dtype.cls]:
        return data
    holder = np.float64 if dtype.is_float else values.dtype
    return values.astype(holder).tolist()


# numpy kinds inline data may have per dtype class (as refimpl.validate accepts).
_DATA_KINDS = {DTypeClass.FLOAT: "fiu", DTypeClass.INT: "iu", DTypeClass.BOOL: "b"}


def _item_json(item: StreamItem) -> dict:
    if isinstance(item, Sync):
        return {"op": "Sync", "tensors": list(item.tensors)}
    obj: dict[str, Any] = {"op": item.name}
    for name, kind in item.desc.SCHEMA:
        obj[name] = _FIELD_WRITERS[kind](getattr(item.desc, name), item.op)
    return obj


def _tensor_json(t: TensorIr) -> dict:
    return {"id": t.id, "shape": list(t.shape), "dtype": t.dtype.value, "status": t.status.value}


def _scalar_json(value: Any, op: Op) -> Any:
    import numpy as np

    if isinstance(value, bool | np.bool_):
        return bool(value)
    if not isinstance(value, int | float | np.number):
        return value  # not a number: written as given, validation reports it
    if op.family is DTypeClass.FLOAT:
        return float(value)
    if op.family is DTypeClass.INT and float(value).is_integer():
        return int(value)
    return value


_FIELD_WRITERS = {
    FieldKind.TENSOR: lambda v, op: _tensor_json(v),
    FieldKind.TENSORS: lambda v, op: [_tensor_json(t) for t in v],
    FieldKind.SCALAR: _scalar_json,
    FieldKind.INT: lambda v, op: int(v),
    FieldKind.INTS: lambda v, op: [int(x) for x in v],
    FieldKind.RANGES: lambda v, op: [[int(a), int(b)] for a, b in v],
    FieldKind.BOOL: lambda v, op: bool(v),
    FieldKind.TEXT: lambda v, op: str(v),
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    """The JSON name of a value's type, for messages."""
    names = {bool: "a bool", int: "an integer", float: "a number", str: "a string",
             list: "a list", dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)
