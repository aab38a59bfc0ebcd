"""Hand-built op sequences for the fuser tests: real ops (refimpl.ir + op_named), turned into
the relative form fusers receive (refimpl.planner.stream.relative)."""

from __future__ import annotations

from collections.abc import Iterable

from refimpl.dtypes import DType
from refimpl.ir import OperationIr, TensorIr, TensorStatus
from refimpl.ops import op_named
from refimpl.planner.stream.relative import OperationConverter, to_relative

RO = TensorStatus.ReadOnly
RW = TensorStatus.ReadWrite
NI = TensorStatus.NotInit
F32 = DType.F32


def t(tensor_id: int, shape: Iterable[int], status: TensorStatus = RO,
      dtype: DType = F32) -> TensorIr:
    """A tensor snapshot."""
    return TensorIr(tensor_id, tuple(shape), dtype, status)


def op(name: str, **fields: object) -> OperationIr:
    """A real op: ``op("NumericFloat.Add", lhs=.., rhs=.., out=..)``."""
    entry = op_named(name)
    return OperationIr(entry, entry.struct(**fields))


def drop(tensor_id: int, shape: Iterable[int], dtype: DType = F32) -> OperationIr:
    return op("Drop", tensor=t(tensor_id, shape, RW, dtype))


def relative(ops: Iterable[OperationIr]) -> list[OperationIr]:
    """The ops in relative form, one segment."""
    converter = OperationConverter()
    return [to_relative(o, converter) for o in ops]


def feed(fuser, ops: Iterable[OperationIr]):
    """Feed the relative form of ``ops`` to ``fuser``; returns the fuser."""
    for o in relative(ops):
        fuser.fuse(o)
    return fuser


def abc_exp(shape=(4, 6), a_status: TensorStatus = RW) -> list[OperationIr]:
    """``(a * b + c).exp()`` with b and c moved in (ids a=10, b=11, c=12, results 13, 14, 15)."""
    return [
        op("NumericFloat.Mul", lhs=t(10, shape, a_status), rhs=t(11, shape, RW),
           out=t(13, shape, NI)),
        op("NumericFloat.Add", lhs=t(13, shape, RW), rhs=t(12, shape, RW), out=t(14, shape, NI)),
        op("Float.Exp", input=t(14, shape, RW), out=t(15, shape, NI)),
    ]


def unary_chain(n: int, shape=(4, 6), name: str = "Float.Exp", first: int = 0,
                ) -> list[OperationIr]:
    """``x = x.f()`` n times, each op consuming the previous result (ids first..first+n)."""
    ops = []
    for i in range(n):
        status = RO if i == 0 else RW
        ops.append(op(name, input=t(first + i, shape, status), out=t(first + i + 1, shape, NI)))
    return ops


def add_chain(num_inputs: int, shape=(4, 6)) -> list[OperationIr]:
    """``x = a0 + a1; x = x + a2; ...`` reading ``num_inputs`` distinct inputs (ids 0..n-1)."""
    ops = [op("NumericFloat.Add", lhs=t(0, shape), rhs=t(1, shape), out=t(100, shape, NI))]
    for i in range(2, num_inputs):
        ops.append(op("NumericFloat.Add", lhs=t(100 + i - 2, shape, RW), rhs=t(i, shape),
                      out=t(100 + i - 1, shape, NI)))
    return ops
