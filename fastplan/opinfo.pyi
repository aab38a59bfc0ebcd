"""Type stubs for the compiled fastplan.opinfo module."""

import enum
from collections.abc import Sequence

from refimpl.ops import Op, OpKind

NO_FAMILY: int

class OpKindC(enum.IntEnum):
    ELEMENTWISE = 0
    VIEW = 1
    INDEXED = 2
    REDUCE_DIM = 3
    REDUCE_FULL = 4
    MATMUL = 5
    MOVEMENT = 6
    MODULE = 7
    INIT = 8
    DROP = 9
    OTHER = 10

class OpTable:
    @property
    def size(self) -> int: ...
    @property
    def kind(self) -> memoryview: ...
    @property
    def fuses(self) -> memoryview: ...
    @property
    def struct_code(self) -> memoryview: ...
    @property
    def family(self) -> memoryview: ...
    def __init__(self, ops: Sequence[Op] = ...) -> None: ...
    def __len__(self) -> int: ...
    def kind_of(self, code: int) -> OpKind: ...

OP_TABLE: OpTable
