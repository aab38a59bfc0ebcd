"""Pure-Python op table: the encoding fastplan's C tables use, and the fallback when uncompiled.

burn counterpart: none (burn matches on ``OperationIr`` variants directly). This module turns
``refimpl.ops.OPS`` into small integer columns indexed by ``Op.code``. ``fastplan.opinfo`` builds
its typed ``uint8_t[::1]`` arrays from the same ``encode_op``, so the two tables cannot drift;
``tests/fastplan/test_opinfo_parity.py`` checks both against ``OPS`` directly.
"""

from __future__ import annotations

from collections.abc import Sequence

from refimpl.dtypes import DTypeClass
from refimpl.ir import OP_IR_STRUCTS
from refimpl.ops import OPS, Op, OpKind

__all__ = ["FAMILIES", "NO_FAMILY", "OP_TABLE", "OpTable", "encode_op", "encode_ops"]

# ``family`` column: position in this tuple; ops whose category fixes no dtype class
# (``Init``, ``Drop``) get NO_FAMILY.
FAMILIES: tuple[DTypeClass, ...] = tuple(DTypeClass)
NO_FAMILY = 255


def encode_op(op: Op) -> tuple[int, int, int, int]:
    """The ``(kind, fuses, struct_code, family)`` row of one op, each fitting a ``uint8_t``."""
    family = NO_FAMILY if op.family is None else FAMILIES.index(op.family)
    return int(op.kind), int(op.fuse is not None), OP_IR_STRUCTS.index(op.struct), family


def encode_ops(ops: Sequence[Op]) -> tuple[bytes, bytes, bytes, bytes]:
    """The four columns ``(kind, fuses, struct_code, family)`` of ``ops``, as immutable bytes.

    ``ops`` must be in code order (``ops[i].code == i``), because columns are indexed by code.
    """
    for position, op in enumerate(ops):
        if op.code != position:
            raise ValueError(f"op {op.name} has code {op.code} at position {position}")
    rows = [encode_op(op) for op in ops]
    return tuple(bytes(row[i] for row in rows) for i in range(4))  # type: ignore[return-value]


class OpTable:
    """The op table as columns indexed by ``Op.code``.

    Pure-Python twin of fastplan.opinfo.OpTable; here the columns are ``bytes``.
    """

    __slots__ = ("_family", "_fuses", "_kind", "_struct_code")

    def __init__(self, ops: Sequence[Op] = OPS) -> None:
        self._kind, self._fuses, self._struct_code, self._family = encode_ops(ops)

    @property
    def size(self) -> int:
        """Number of ops in the table."""
        return len(self._kind)

    @property
    def kind(self) -> bytes:
        """``int(OpKind)`` of each op."""
        return self._kind

    @property
    def fuses(self) -> bytes:
        """1 when the element-wise fuser emits a FuseOp for the op, else 0."""
        return self._fuses

    @property
    def struct_code(self) -> bytes:
        """Index of the op's operand struct in ``refimpl.ir.OP_IR_STRUCTS``."""
        return self._struct_code

    @property
    def family(self) -> bytes:
        """Index of the op's dtype class in ``FAMILIES``, or ``NO_FAMILY``."""
        return self._family

    def __len__(self) -> int:
        return len(self._kind)

    def kind_of(self, code: int) -> OpKind:
        """The ``OpKind`` of the op with this code; ``IndexError`` outside the table."""
        if not 0 <= code < len(self._kind):
            raise IndexError(f"op code {code} out of range 0..{len(self._kind) - 1}")
        return OpKind(self._kind[code])


OP_TABLE = OpTable(OPS)
