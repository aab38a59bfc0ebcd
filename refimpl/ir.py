"""burn's intermediate representation: ``TensorIr``, ``TensorStatus`` and ``OperationIr``.

burn counterpart: ``crates/burn-ir/src/tensor.rs`` (``TensorIr``, ``TensorStatus``) and
``crates/burn-ir/src/operation.rs`` (``OperationIr`` and the ``*OpIr`` operand structs).

Every tensor use carries a full ``TensorIr`` snapshot (id, shape, dtype, status); the same id
appears with different statuses across ops. An ``OperationIr`` pairs an op from the op table
(``refimpl.ops``) with one operand struct whose field names are burn-ir's (``lhs``/``rhs``/
``out``, ``input``/``out``, ``tensors``/``dim``/``out``, ...). All classes are frozen
dataclasses made only of ints, tuples, strings and enums, so plans compare with ``==``.

Each operand struct declares its ``SCHEMA``: the field names in burn-ir order with the kind of
value each holds. Everything generic (``inputs()``, ``outputs()``, JSON, validation) walks the
schema; nothing lists fields by hand.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Union

from refimpl.dtypes import DType

if TYPE_CHECKING:  # ops imports ir; ir only names Op in annotations
    from refimpl.ops import Op

__all__ = [
    "TensorStatus",
    "TensorIr",
    "FieldKind",
    "Scalar",
    "UnaryOpIr",
    "BinaryOpIr",
    "ScalarOpIr",
    "ReduceDimOpIr",
    "ShapeOpIr",
    "SwapDimsOpIr",
    "PermuteOpIr",
    "FlipOpIr",
    "SliceOpIr",
    "CatOpIr",
    "GatherOpIr",
    "SelectOpIr",
    "MaskWhereOpIr",
    "MaskFillOpIr",
    "ClampOpIr",
    "FullOpIr",
    "CreationOpIr",
    "InitOperationIr",
    "DropOpIr",
    "MaxPool2dOpIr",
    "AvgPool2dOpIr",
    "AdaptiveAvgPool2dOpIr",
    "InterpolateOpIr",
    "OP_IR_STRUCTS",
    "OperationIr",
    "Sync",
    "StreamItem",
]

Scalar = Union[float, int, bool]


class TensorStatus(enum.Enum):
    """burn-ir ``TensorStatus``: what an op may do with the tensor at this use."""

    NotInit = "NotInit"  # an op output: no buffer exists yet
    ReadOnly = "ReadOnly"  # still referenced afterwards: read, never written
    ReadWrite = "ReadWrite"  # last use: the op may free it or write into its buffer


@dataclass(frozen=True, slots=True)
class TensorIr:
    """A snapshot of one tensor at one use (burn-ir ``TensorIr``)."""

    id: int
    shape: tuple[int, ...]
    dtype: DType
    status: TensorStatus

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def with_status(self, status: TensorStatus) -> TensorIr:
        """The same tensor seen with another status."""
        return TensorIr(self.id, self.shape, self.dtype, status)


class FieldKind(enum.Enum):
    """What an operand-struct field holds."""

    TENSOR = "tensor"  # one TensorIr
    TENSORS = "tensors"  # a non-empty tuple of TensorIr (Cat)
    SCALAR = "scalar"  # a number, converted to the op's scalar precision
    INT = "int"  # an axis / dimension index
    INTS = "ints"  # a tuple of ints (axes, kernel sizes, ...)
    RANGES = "ranges"  # a tuple of (start, end) pairs (Slice)
    BOOL = "bool"  # a flag
    TEXT = "text"  # a short keyword (interpolate mode)


# Every operand struct: burn-ir's name and field names, field kinds in SCHEMA. The field named
# ``out`` is the op's output; every other tensor field is an input.


@dataclass(frozen=True, slots=True)
class UnaryOpIr:
    input: TensorIr
    out: TensorIr
    SCHEMA: ClassVar = (("input", FieldKind.TENSOR), ("out", FieldKind.TENSOR))


@dataclass(frozen=True, slots=True)
class BinaryOpIr:
    lhs: TensorIr
    rhs: TensorIr
    out: TensorIr
    SCHEMA: ClassVar = (
        ("lhs", FieldKind.TENSOR),
        ("rhs", FieldKind.TENSOR),
        ("out", FieldKind.TENSOR),
    )


@dataclass(frozen=True, slots=True)
class ScalarOpIr:
    lhs: TensorIr
    rhs: Scalar
    out: TensorIr
    SCHEMA: ClassVar = (
        ("lhs", FieldKind.TENSOR),
        ("rhs", FieldKind.SCALAR),
        ("out", FieldKind.TENSOR),
    )


@dataclass(frozen=True, slots=True)
class ReduceDimOpIr:
    input: TensorIr
    out: TensorIr
    axis: int
    SCHEMA: ClassVar = (
        ("input", FieldKind.TENSOR),
        ("out", FieldKind.TENSOR),
        ("axis", FieldKind.INT),
    )


@dataclass(frozen=True, slots=True)
class ShapeOpIr:
    """Reshape and Expand: the new shape is ``out.shape``."""

    input: TensorIr
    out: TensorIr
    SCHEMA: ClassVar = (("input", FieldKind.TENSOR), ("out", FieldKind.TENSOR))


@dataclass(frozen=True, slots=True)
class SwapDimsOpIr:
    input: TensorIr
    out: TensorIr
    dim1: int
    dim2: int
    SCHEMA: ClassVar = (
        ("input", FieldKind.TENSOR),
        ("out", FieldKind.TENSOR),
        ("dim1", FieldKind.INT),
        ("dim2", FieldKind.INT),
    )


@dataclass(frozen=True, slots=True)
class PermuteOpIr:
    input: TensorIr
    out: TensorIr
    axes: tuple[int, ...]
    SCHEMA: ClassVar = (
        ("input", FieldKind.TENSOR),
        ("out", FieldKind.TENSOR),
        ("axes", FieldKind.INTS),
    )


@dataclass(frozen=True, slots=True)
class FlipOpIr:
    input: TensorIr
    out: TensorIr
    axes: tuple[int, ...]
    SCHEMA: ClassVar = (
        ("input", FieldKind.TENSOR),
        ("out", FieldKind.TENSOR),
        ("axes", FieldKind.INTS),
    )


@dataclass(frozen=True, slots=True)
class SliceOpIr:
    tensor: TensorIr
    ranges: tuple[tuple[int, int], ...]
    out: TensorIr
    SCHEMA: ClassVar = (
        ("tensor", FieldKind.TENSOR),
        ("ranges", FieldKind.RANGES),
        ("out", FieldKind.TENSOR),
    )


@dataclass(frozen=True, slots=True)
class CatOpIr:
    tensors: tuple[TensorIr, ...]
    dim: int
    out: TensorIr
    SCHEMA: ClassVar = (
        ("tensors", FieldKind.TENSORS),
        ("dim", FieldKind.INT),
        ("out", FieldKind.TENSOR),
    )


@dataclass(frozen=True, slots=True)
class GatherOpIr:
    tensor: TensorIr
    dim: int
    indices: TensorIr
    out: TensorIr
    SCHEMA: ClassVar = (
        ("tensor", FieldKind.TENSOR),
        ("dim", FieldKind.INT),
        ("indices", FieldKind.TENSOR),
        ("out", FieldKind.TENSOR),
    )


@dataclass(frozen=True, slots=True)
class SelectOpIr:
    tensor: TensorIr
    dim: int
    indices: TensorIr
    out: TensorIr
    SCHEMA: ClassVar = (
        ("tensor", FieldKind.TENSOR),
        ("dim", FieldKind.INT),
        ("indices", FieldKind.TENSOR),
        ("out", FieldKind.TENSOR),
    )


@dataclass(frozen=True, slots=True)
class MaskWhereOpIr:
    tensor: TensorIr
    mask: TensorIr
    value: TensorIr
    out: TensorIr
    SCHEMA: ClassVar = (
        ("tensor", FieldKind.TENSOR),
        ("mask", FieldKind.TENSOR),
        ("value", FieldKind.TENSOR),
        ("out", FieldKind.TENSOR),
    )


@dataclass(frozen=True, slots=True)
class MaskFillOpIr:
    tensor: TensorIr
    mask: TensorIr
    value: Scalar
    out: TensorIr
    SCHEMA: ClassVar = (
        ("tensor", FieldKind.TENSOR),
        ("mask", FieldKind.TENSOR),
        ("value", FieldKind.SCALAR),
        ("out", FieldKind.TENSOR),
    )


@dataclass(frozen=True, slots=True)
class ClampOpIr:
    tensor: TensorIr
    min: Scalar
    max: Scalar
    out: TensorIr
    SCHEMA: ClassVar = (
        ("tensor", FieldKind.TENSOR),
        ("min", FieldKind.SCALAR),
        ("max", FieldKind.SCALAR),
        ("out", FieldKind.TENSOR),
    )


@dataclass(frozen=True, slots=True)
class FullOpIr:
    out: TensorIr
    value: Scalar
    SCHEMA: ClassVar = (("out", FieldKind.TENSOR), ("value", FieldKind.SCALAR))


@dataclass(frozen=True, slots=True)
class CreationOpIr:
    out: TensorIr
    SCHEMA: ClassVar = (("out", FieldKind.TENSOR),)


@dataclass(frozen=True, slots=True)
class InitOperationIr:
    """``Init``: a tensor created from host data (``out`` names it; the data is an input)."""

    out: TensorIr
    SCHEMA: ClassVar = (("out", FieldKind.TENSOR),)


@dataclass(frozen=True, slots=True)
class DropOpIr:
    """``Drop(TensorIr)``: the tensor is released without a ``ReadWrite`` use."""

    tensor: TensorIr
    SCHEMA: ClassVar = (("tensor", FieldKind.TENSOR),)


@dataclass(frozen=True, slots=True)
class MaxPool2dOpIr:
    x: TensorIr
    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    out: TensorIr
    SCHEMA: ClassVar = (
        ("x", FieldKind.TENSOR),
        ("kernel_size", FieldKind.INTS),
        ("stride", FieldKind.INTS),
        ("padding", FieldKind.INTS),
        ("dilation", FieldKind.INTS),
        ("out", FieldKind.TENSOR),
    )


@dataclass(frozen=True, slots=True)
class AvgPool2dOpIr:
    x: TensorIr
    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    count_include_pad: bool
    out: TensorIr
    SCHEMA: ClassVar = (
        ("x", FieldKind.TENSOR),
        ("kernel_size", FieldKind.INTS),
        ("stride", FieldKind.INTS),
        ("padding", FieldKind.INTS),
        ("count_include_pad", FieldKind.BOOL),
        ("out", FieldKind.TENSOR),
    )


@dataclass(frozen=True, slots=True)
class AdaptiveAvgPool2dOpIr:
    x: TensorIr
    output_size: tuple[int, ...]
    out: TensorIr
    SCHEMA: ClassVar = (
        ("x", FieldKind.TENSOR),
        ("output_size", FieldKind.INTS),
        ("out", FieldKind.TENSOR),
    )


@dataclass(frozen=True, slots=True)
class InterpolateOpIr:
    x: TensorIr
    output_size: tuple[int, ...]
    mode: str
    out: TensorIr
    SCHEMA: ClassVar = (
        ("x", FieldKind.TENSOR),
        ("output_size", FieldKind.INTS),
        ("mode", FieldKind.TEXT),
        ("out", FieldKind.TENSOR),
    )


OP_IR_STRUCTS = (
    UnaryOpIr,
    BinaryOpIr,
    ScalarOpIr,
    ReduceDimOpIr,
    ShapeOpIr,
    SwapDimsOpIr,
    PermuteOpIr,
    FlipOpIr,
    SliceOpIr,
    CatOpIr,
    GatherOpIr,
    SelectOpIr,
    MaskWhereOpIr,
    MaskFillOpIr,
    ClampOpIr,
    FullOpIr,
    CreationOpIr,
    InitOperationIr,
    DropOpIr,
    MaxPool2dOpIr,
    AvgPool2dOpIr,
    AdaptiveAvgPool2dOpIr,
    InterpolateOpIr,
)


@dataclass(frozen=True, slots=True)
class OperationIr:
    """One recorded op: an entry of the op table plus its operand struct (burn-ir
    ``OperationIr``, e.g. ``NumericFloat(F32, Add(BinaryOpIr{..}))``)."""

    op: Op
    desc: object

    @property
    def name(self) -> str:
        """``"Category.Variant"``, as in the stream format."""
        return self.op.name

    def inputs(self) -> tuple[TensorIr, ...]:
        """Tensors the op reads, in field order (burn-ir ``OperationIr::inputs``)."""
        found: list[TensorIr] = []
        for field, kind in self.desc.SCHEMA:
            if field == "out":
                continue
            if kind is FieldKind.TENSOR:
                found.append(getattr(self.desc, field))
            elif kind is FieldKind.TENSORS:
                found.extend(getattr(self.desc, field))
        return tuple(found)

    def outputs(self) -> tuple[TensorIr, ...]:
        """Tensors the op writes (at most one here: the field ``out``)."""
        if any(field == "out" for field, _ in self.desc.SCHEMA):
            return (self.desc.out,)
        return ()

    def nodes(self) -> tuple[TensorIr, ...]:
        """Inputs then outputs (burn-ir ``OperationIr::nodes``)."""
        return self.inputs() + self.outputs()

    def scalars(self) -> tuple[Scalar, ...]:
        """Scalar operands in field order."""
        return tuple(
            getattr(self.desc, field)
            for field, kind in self.desc.SCHEMA
            if kind is FieldKind.SCALAR
        )


@dataclass(frozen=True, slots=True)
class Sync:
    """A read-back point: the listed tensors are synced to the host (burn ``into_data``)."""

    tensors: tuple[int, ...]


StreamItem = Union[OperationIr, Sync]
