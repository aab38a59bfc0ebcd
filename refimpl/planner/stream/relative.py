"""The relative form of an op stream: the key plans are cached under.

burn counterpart: ``crates/burn-fusion/src/stream/context.rs`` (``OperationConverter``,
``RelativeOps``; notes §2.4).

Within one segment of the queue, tensor ids are renumbered by first appearance (0, 1, 2, ...),
and every dimension *value* gets a shape id: the value 1 is pre-mapped to id 0, every new value
gets the next id. Equal values share an id, so relative shapes compare like real ones, and "size
1" is always id 0 — the fusers' broadcasting rules rely on that. Scalars and slice ranges are
replaced by positional placeholders and stashed, so streams that differ only in them share a
plan. Statuses and dtypes are kept.

>>> from refimpl.dtypes import DType
>>> from refimpl.ir import TensorIr, TensorStatus
>>> c = OperationConverter()
>>> c.tensor(TensorIr(7, (512, 32, 2048), DType.F32, TensorStatus.ReadOnly)).shape
(1, 2, 3)
>>> c.tensor(TensorIr(9, (512, 128, 2048), DType.F32, TensorStatus.ReadOnly)).shape
(1, 4, 3)
>>> c.tensor(TensorIr(9, (1, 128), DType.F32, TensorStatus.ReadOnly)).id
1
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from refimpl.ir import FieldKind, OperationIr, Scalar, TensorIr

__all__ = ["OperationConverter", "to_relative"]


@dataclass
class OperationConverter:
    """Maps between global (real) and relative ids for one segment (burn
    ``OperationConverter``). ``clear()`` starts a new segment."""

    tensors_relative2global: dict[int, TensorIr] = field(default_factory=dict)
    tensors_global2relative: dict[int, int] = field(default_factory=dict)
    shapes_global2relative: dict[int, int] = field(default_factory=lambda: {1: 0})
    shapes_relative2global: dict[int, int] = field(default_factory=lambda: {0: 1})
    scalars: list[Scalar] = field(default_factory=list)
    ranges: list[tuple[int, int]] = field(default_factory=list)

    def clear(self) -> None:
        """Forget every mapping (a new segment); size 1 stays shape id 0."""
        self.tensors_relative2global.clear()
        self.tensors_global2relative.clear()
        self.shapes_global2relative.clear()
        self.shapes_relative2global.clear()
        self.shapes_global2relative[1] = 0
        self.shapes_relative2global[0] = 1
        self.scalars.clear()
        self.ranges.clear()

    def num_relative_shapes(self) -> int:
        """How many shape ids have been handed out (burn ``num_relative_shapes``)."""
        return len(self.shapes_relative2global)

    def dim(self, value: int) -> int:
        """The shape id of one dimension value, allocating the next id if it is new."""
        found = self.shapes_global2relative.get(value)
        if found is None:
            found = len(self.shapes_global2relative)
            self.shapes_global2relative[value] = found
            self.shapes_relative2global[found] = value
        return found

    def tensor(self, tensor: TensorIr) -> TensorIr:
        """The relative snapshot of one tensor use."""
        rel_id = self.tensors_global2relative.get(tensor.id)
        if rel_id is None:
            rel_id = len(self.tensors_global2relative)
            self.tensors_global2relative[tensor.id] = rel_id
        self.tensors_relative2global[rel_id] = tensor
        shape = tuple(self.dim(d) for d in tensor.shape)
        return TensorIr(rel_id, shape, tensor.dtype, tensor.status)

    def scalar(self, value: Scalar) -> int:
        """Stash a scalar; its placeholder is its position."""
        self.scalars.append(value)
        return len(self.scalars) - 1

    def range(self, value: tuple[int, int]) -> tuple[int, int]:
        """Stash a slice range; its placeholder is ``(position, position)``."""
        self.ranges.append(value)
        k = len(self.ranges) - 1
        return (k, k)

    def global_shape(self, relative: tuple[int, ...]) -> tuple[int, ...]:
        """Real dimensions of a relative shape."""
        return tuple(self.shapes_relative2global[d] for d in relative)


def to_relative(op: OperationIr, converter: OperationConverter) -> OperationIr:
    """The relative form of one op, walking its operand struct's SCHEMA in field order.

    A ``Drop`` is no exception: burn's ``FusionTensor::drop`` moves the tensor's real shape into
    the ``TensorIr`` it registers, so its dims get shape ids like any other tensor's.
    """
    changes = {}
    for name, kind in op.desc.SCHEMA:
        value = getattr(op.desc, name)
        if kind is FieldKind.TENSOR:
            changes[name] = converter.tensor(value)
        elif kind is FieldKind.TENSORS:
            changes[name] = tuple(converter.tensor(t) for t in value)
        elif kind is FieldKind.SCALAR:
            changes[name] = converter.scalar(value)
        elif kind is FieldKind.RANGES:
            changes[name] = tuple(converter.range(r) for r in value)
    return OperationIr(op.op, dataclasses.replace(op.desc, **changes))
