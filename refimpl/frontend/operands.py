"""From a Tensor call's arguments to the op it records: the op chosen by dtype class, the
operand-struct builders, scalars, output dtypes, and Python-style dims, shapes and slices;
``record`` hands a call to the session of its first operand.

burn counterpart: the ``Fusion`` backend's ops (``crates/burn-fusion/src/ops/*.rs``), which
pick the ``OperationIr`` variant for the element kind and build its operand struct with
``ScalarIr::with_dtype`` scalars, and the argument handling of burn's ``Tensor`` API
(``crates/burn-tensor/src/tensor/api/*.rs``: negative dims, ``reshape``'s ``-1``, ranges).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from refimpl.dtypes import DType, DTypeClass
from refimpl.errors import DTypeError, ShapeError
from refimpl.ir import (BinaryOpIr, CreationOpIr, DropOpIr, FieldKind, OperationIr,
                        ReduceDimOpIr, ScalarOpIr, ShapeOpIr, TensorIr, TensorStatus, UnaryOpIr)
from refimpl.ops import OP_BY_NAME, Op, OutDType

__all__ = ["DEFAULT_FLOAT", "DEFAULT_INT", "DEFAULT_FOR_KIND", "Build", "resolve", "cast_key",
           "bitwise_variants", "invert_variant", "snapshot", "operation", "scalar_desc",
           "drop_desc", "unary", "binary", "scalar_op", "shape_op",
           "creation", "reduce", "record", "is_number", "scalar", "out_dtype", "tensor_fields",
           "check_dtypes", "dim_index", "pair2", "parse_dtype", "check_shape", "reshape_target",
           "expand_target", "slice_ranges"]

DEFAULT_FLOAT = DType.F32  # burn's default FloatElem
DEFAULT_INT = DType.I32  # burn's IntElem on cubecl: argmax/argmin outputs, .int()

F, I, B = DTypeClass.FLOAT, DTypeClass.INT, DTypeClass.BOOL

# Input dtype by the numpy kind of host data when tensor() is given none.
DEFAULT_FOR_KIND = {"b": DType.BOOL, "i": DEFAULT_INT, "u": DEFAULT_INT}

# --- op selection ---------------------------------------------------------------------------
# An op is chosen as (group, variant); the group and the first operand's dtype class give the
# category, e.g. ("Numeric", "Add") on i32 -> "NumericInt.Add".
_CATEGORIES = {
    "Base": {F: "BaseFloat", I: "BaseInt", B: "BaseBool"},
    "Numeric": {F: "NumericFloat", I: "NumericInt"},
    "Kind": {F: "Float", I: "Int", B: "Bool"},
    "Module": {F: "Module"},
}

# Casts by (from class, to class); same class -> Base*.Cast. No cast produces bool (burn has
# none; compare instead).
_CASTS = {
    (F, F): ("Base", "Cast"), (I, I): ("Base", "Cast"),
    (F, I): ("Kind", "IntoInt"), (I, F): ("Kind", "IntoFloat"),
    (B, F): ("Kind", "IntoFloat"), (B, I): ("Kind", "IntoInt"),
}

# Bitwise operators by dtype class: (tensor variant, scalar variant). Bool tensors use
# BoolOperationIr's And / Or / Not; other classes fall back to the int row and fail to resolve.
_BITWISE = {
    "and": {I: ("BitwiseAnd", "BitwiseAndScalar"), B: ("And", None)},
    "or": {I: ("BitwiseOr", "BitwiseOrScalar"), B: ("Or", None)},
    "xor": {I: ("BitwiseXor", "BitwiseXorScalar")},
    "lshift": {I: ("BitwiseLeftShift", "BitwiseLeftShiftScalar")},
    "rshift": {I: ("BitwiseRightShift", "BitwiseRightShiftScalar")},
}
_INVERT = {I: "BitwiseNot", B: "Not"}

# Default output dtype per OutDType rule when the call gives none.
_DEFAULT_OUT = {OutDType.INT: DEFAULT_INT, OutDType.FLOAT: DEFAULT_FLOAT}


def resolve(key: tuple[str, str], dtype: DType, index: int) -> Op:
    """The op ``key = (group, variant)`` names for a first operand of ``dtype``."""
    group, variant = key
    category = _CATEGORIES[group].get(dtype.cls)
    op = OP_BY_NAME.get(f"{category}.{variant}")
    if op is None:
        raise DTypeError(f"{variant} does not take {dtype.value} tensors (burn has no "
                         f"{category or group}.{variant})", op_index=index, op_name=variant)
    return op


def cast_key(source: DType, target: DType) -> tuple[str, str] | None:
    """The cast op's key from ``source`` to ``target``; ``None`` for the same dtype."""
    if source is target:
        return None
    key = _CASTS.get((source.cls, target.cls))
    if key is None:
        raise DTypeError(f"no cast from {source.value} to {target.value} (burn has none; "
                         "compare instead, e.g. t.not_equal(0))")
    return key


def bitwise_variants(name: str, dtype: DType) -> tuple[str | None, str | None]:
    """(tensor variant, scalar variant) of the bitwise operator ``name`` for ``dtype``."""
    table = _BITWISE[name]
    return table.get(dtype.cls, table[I])


def invert_variant(dtype: DType) -> str:
    """``~``: ``BitwiseNot`` on ints, ``Not`` on bools."""
    return _INVERT.get(dtype.cls, _INVERT[I])


# --- frozen IR objects, filled slot by slot ----------------------------------------------------
# The frozen dataclasses' ``__init__`` sets each field through ``object.__setattr__``; the
# recording path makes several per op, so it fills their ``__slots__`` through the member
# descriptors instead: the same objects (``==``, same fields), fewer calls.
_new = object.__new__
_T_ID, _T_SHAPE, _T_DTYPE, _T_STATUS = (TensorIr.__dict__[name].__set__
                                        for name in ("id", "shape", "dtype", "status"))
_OP_OP, _OP_DESC = (OperationIr.__dict__[name].__set__ for name in ("op", "desc"))
_S_LHS, _S_RHS, _S_OUT = (ScalarOpIr.__dict__[name].__set__ for name in ("lhs", "rhs", "out"))
_DROP_TENSOR = DropOpIr.__dict__["tensor"].__set__
assert all(tuple(f.name for f in dataclasses.fields(cls)) == names for cls, names in (
    (TensorIr, ("id", "shape", "dtype", "status")), (OperationIr, ("op", "desc")),
    (ScalarOpIr, ("lhs", "rhs", "out")), (DropOpIr, ("tensor",))))


def snapshot(tid: int, shape: tuple[int, ...], dtype: DType, status: TensorStatus) -> TensorIr:
    """``TensorIr(tid, shape, dtype, status)``, filled slot by slot."""
    t = _new(TensorIr)
    _T_ID(t, tid)
    _T_SHAPE(t, shape)
    _T_DTYPE(t, dtype)
    _T_STATUS(t, status)
    return t


def operation(op: Op, desc: Any) -> OperationIr:
    """``OperationIr(op, desc)``, filled slot by slot."""
    item = _new(OperationIr)
    _OP_OP(item, op)
    _OP_DESC(item, desc)
    return item


def scalar_desc(lhs: TensorIr, rhs: Any, out: TensorIr) -> ScalarOpIr:
    """``ScalarOpIr(lhs, rhs, out)``, filled slot by slot."""
    desc = _new(ScalarOpIr)
    _S_LHS(desc, lhs)
    _S_RHS(desc, rhs)
    _S_OUT(desc, out)
    return desc


def drop_desc(tensor: TensorIr) -> DropOpIr:
    """``DropOpIr(tensor)``, filled slot by slot."""
    desc = _new(DropOpIr)
    _DROP_TENSOR(desc, tensor)
    return desc


# --- operand structs (build(inputs, out, scalars) -> desc) ----------------------------------
Build = Callable[[tuple, TensorIr, tuple], Any]


def unary(i: tuple, o: TensorIr, s: tuple) -> UnaryOpIr:
    return UnaryOpIr(i[0], o)


def binary(i: tuple, o: TensorIr, s: tuple) -> BinaryOpIr:
    return BinaryOpIr(i[0], i[1], o)


def scalar_op(i: tuple, o: TensorIr, s: tuple) -> ScalarOpIr:
    return ScalarOpIr(i[0], s[0], o)


def shape_op(i: tuple, o: TensorIr, s: tuple) -> ShapeOpIr:
    return ShapeOpIr(i[0], o)


def creation(i: tuple, o: TensorIr, s: tuple) -> CreationOpIr:
    return CreationOpIr(o)


def reduce(dim: int, rank: int) -> Build:
    """A ``ReduceDimOpIr`` along ``dim`` of a rank-``rank`` input (negative: from the end)."""
    axis = dim_index(dim, rank)
    return lambda i, o, s: ReduceDimOpIr(i[0], o, axis)


def record(path: str, key: tuple[str, str], operands: tuple, build: Build, scalars: tuple = (),
           **options: Any) -> Any:
    """Record one op on the session of its first operand (``Session._record``, which reads
    the operands' reference counts first; ``path`` names the call path for that)."""
    return operands[0]._state.session._record(path, key, operands, build, scalars, **options)


# --- scalars, dtypes and operand fields -----------------------------------------------------


def is_number(value: Any) -> bool:
    if type(value) is float or type(value) is int:  # the common case, without the ABC check
        return True
    return isinstance(value, numbers.Number) and not isinstance(value, complex)


def scalar(value: Any, op: Op, precision: DType, index: int) -> float | int | bool:
    """A scalar operand in the op family's type (burn ``ScalarIr::with_dtype``)."""
    if not is_number(value) and not isinstance(value, np.bool_):
        raise DTypeError(f"scalar {value!r} is not a number", op_index=index, op_name=op.name)
    if op.family is B:
        return bool(value)
    if op.family is not I:
        return float(value)
    if not isinstance(value, numbers.Integral) and not float(value).is_integer():
        raise DTypeError(f"{op.name} takes an integral scalar, got {value!r}",
                         op_index=index, op_name=op.name)
    whole = int(value)
    info = np.iinfo(precision.numpy) if precision.is_int else None
    if info is not None and not info.min <= whole <= info.max:
        raise DTypeError(f"scalar {whole} is out of range for {precision.value}",
                         op_index=index, op_name=op.name)
    return whole


def out_dtype(op: Op, main: DType, explicit: DType | None, index: int) -> DType:
    """The output dtype by the op's ``OutDType`` rule (``explicit``: a cast's target)."""
    rule = op.out_dtype
    if rule is OutDType.SAME:
        return main
    if rule is OutDType.BOOL:
        return DType.BOOL
    out = explicit or _DEFAULT_OUT.get(rule)
    if out is None:
        raise DTypeError(f"{op.name} needs an output dtype", op_index=index, op_name=op.name)
    return out


def tensor_fields(op: Op, count: int) -> list[str]:
    """Field paths of the op's ``count`` input tensors (``tensors.k`` for Cat)."""
    fields = []
    for name, kind in op.struct.SCHEMA:
        if name != "out" and kind is FieldKind.TENSOR:
            fields.append(name)
        elif kind is FieldKind.TENSORS:
            fields.extend(f"{name}.{k}" for k in range(count))
    return fields


# Operand fields with a fixed dtype rule; every other input must match the first one's dtype.
_FIXED_DTYPE = {"mask": (lambda d: d is DType.BOOL, "bool"),
                "indices": (lambda d: d.is_int, "an int dtype")}


def check_dtypes(item: OperationIr, index: int) -> None:
    """Every input has the first one's dtype, except masks (bool) and indices (ints)."""
    inputs = item.inputs()
    main = inputs[0].dtype if inputs else None
    for name, kind in item.desc.SCHEMA:
        if name == "out" or kind not in (FieldKind.TENSOR, FieldKind.TENSORS):
            continue
        values = getattr(item.desc, name)
        for k, t in enumerate(values if kind is FieldKind.TENSORS else (values,)):
            field = f"{name}.{k}" if kind is FieldKind.TENSORS else name
            ok, text = _FIXED_DTYPE.get(name, (lambda d: d is main, main and main.value))
            if not ok(t.dtype):
                raise DTypeError(f"{item.name} needs {text} here, got {t.dtype.value}",
                                 op_index=index, field=f"{field}.dtype", op_name=item.name)


# --- Python-style arguments -----------------------------------------------------------------


def dim_index(dim: int, rank: int) -> int:
    """A dim counted from the end when negative (out-of-range dims are left to the checks)."""
    return dim + rank if -rank <= dim < 0 else dim


def pair2(value: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(value, numbers.Integral):
        return (int(value), int(value))
    return tuple(int(v) for v in value)


def parse_dtype(dtype: DType | str) -> DType:
    return dtype if isinstance(dtype, DType) else DType.parse(dtype)


def check_shape(shape: Sequence[int], what: str) -> tuple[int, ...]:
    shape = tuple(shape)
    if not shape or not all(isinstance(d, numbers.Integral) and d >= 0 for d in shape):
        raise ShapeError(f"{what}: a shape is a non-empty list of non-negative ints, got "
                         f"{list(shape)}")
    return tuple(int(d) for d in shape)


def reshape_target(shape: tuple[int, ...], target: Sequence[int]) -> tuple[int, ...]:
    """``target`` with one ``-1`` replaced by the size that keeps the element count."""
    target = tuple(int(d) for d in target)
    if target.count(-1) != 1:
        return target
    known = 1
    for d in target:
        known *= d if d != -1 else 1
    numel = math.prod(shape)
    fill = numel // known if known and numel % known == 0 else -1
    return tuple(fill if d == -1 else d for d in target)


def expand_target(shape: tuple[int, ...], target: Sequence[int]) -> tuple[int, ...]:
    """``target`` with each ``-1`` keeping the aligned (right-justified) input dim."""
    lead = len(target) - len(shape)
    return tuple(shape[k - lead] if d == -1 and k >= lead else int(d)
                 for k, d in enumerate(target))


def slice_ranges(shape: tuple[int, ...], ranges: Sequence) -> tuple[tuple[int, int], ...]:
    """One (start, end) per dim from pairs, ``slice`` objects (step 1) or ``None`` (all)."""
    sizes = tuple(shape) + (0,) * (len(ranges) - len(shape))  # extra ranges: shapes rejects
    out = []
    for d, size in enumerate(sizes):
        r = ranges[d] if d < len(ranges) else None
        if r is None:
            r = (0, size)
        elif isinstance(r, slice):
            start, stop, step = r.indices(size)
            if step != 1:
                raise ShapeError(f"slice steps other than 1 are not supported (dim {d})")
            r = (start, max(start, stop))
        start, end = (int(x) + size if int(x) < 0 else int(x) for x in r)
        out.append((start, end))
    return tuple(out)
