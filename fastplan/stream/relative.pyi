"""Type stubs for the compiled fastplan.stream.relative module (twin of
refimpl.planner.stream.relative)."""

from refimpl.ir import OperationIr, Scalar, TensorIr

class OperationConverter:
    tensors_relative2global: dict[int, TensorIr]
    tensors_global2relative: dict[int, int]
    shapes_global2relative: dict[int, int]
    shapes_relative2global: dict[int, int]
    scalars: list[Scalar]
    ranges: list[tuple[int, int]]
    def __init__(
        self,
        tensors_relative2global: dict[int, TensorIr] | None = None,
        tensors_global2relative: dict[int, int] | None = None,
        shapes_global2relative: dict[int, int] | None = None,
        shapes_relative2global: dict[int, int] | None = None,
        scalars: list[Scalar] | None = None,
        ranges: list[tuple[int, int]] | None = None,
    ) -> None: ...
    def clear(self) -> None: ...
    def num_relative_shapes(self) -> int: ...
    def dim(self, value: int) -> int: ...
    def tensor(self, tensor: TensorIr) -> TensorIr: ...
    def scalar(self, value: Scalar) -> int: ...
    def range(self, value: tuple[int, int]) -> tuple[int, int]: ...
    def global_shape(self, relative: tuple[int, ...]) -> tuple[int, ...]: ...

def to_relative(op: OperationIr, converter: OperationConverter) -> OperationIr: ...

class EncodedOp:
    """A relative op as C values (C-level API; ``encode_op`` is for tests)."""

    source: OperationIr
    @property
    def code(self) -> int: ...
    @property
    def tensor_ids(self) -> tuple[int, ...]: ...

def encode_op(operation: OperationIr) -> EncodedOp: ...
