"""The Reduce fuser: element-wise ops fused on read, a per-axis reduction, ops fused on write.

burn counterpart: ``crates/burn-cubecl-fusion/src/optim/reduce/fuser.rs`` (``ReduceFuser``,
``ReduceFuserInfo``) and ``optim/reduce/optimization.rs`` (``ReduceOptimization``,
``FusedReduce``, ``ReduceInstruction``); notes §8.2. The registry builds it with
``ReduceSettings::Always`` (fuse-on-write whatever the axis), the only mode modelled here.

``fuser`` holds two blocks: the read block (ops before the reduction) and, after ``next_block``,
the write block (ops after it). ``fuser_read_fallback`` and ``fuser_write_fallback`` are the
element-wise traces run around an unfused reduction. The reduction itself is not an op of any
trace: ``len`` adds 1 once it is captured, and only then is the fuser ready. A reduction as the
first op closes the fuser (its input shape cannot match the empty reference shape).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar, Union

from refimpl.ir import OperationIr, ReduceDimOpIr
from refimpl.ops import OpKind
from refimpl.planner.engine.builder import Refusal
from refimpl.planner.engine.fuser import FuserProperties, FuserStatus
from refimpl.planner.engine.settings import (
    REDUCE_FALLBACK_SETTINGS, REDUCE_READ_SETTINGS, REDUCE_WRITE_SETTINGS,
)
from refimpl.planner.engine.trace import FuseArg, FuseTrace, FuseType
from refimpl.planner.engine.trace_fuser import TraceOperationFuser
from refimpl.planner.fusers.elemwise import FusedOptimization

__all__ = [
    "ReduceInstruction", "FusedReduce", "FusedReduceInfo", "FusedElemwiseInfo",
    "ReduceFuserInfo", "ReduceOptimization", "ReduceFuser", "NAME", "REASON_REDUCE_SHAPE",
]

NAME = "Reduce"
REASON_REDUCE_SHAPE = "reduce input shape"  # input shape != the read block's reference shape

# burn ``ReduceInstruction`` by op variant: the per-axis reductions the fuser accepts.
ReduceInstruction = MappingProxyType({
    "SumDim": "Sum", "MeanDim": "Mean", "ProdDim": "Prod", "ArgMax": "ArgMax",
    "ArgMin": "ArgMin", "MinDim": "Min", "MaxDim": "Max", "MaxAbsDim": "MaxAbs",
    "AnyDim": "Any", "AllDim": "All",
})

# Sum, Mean and Prod accumulate narrow types in a wider one; the others keep the input type.
_WIDENING = ("Sum", "Mean", "Prod")
_WIDER = MappingProxyType({
    FuseType.F16: FuseType.F32, FuseType.BF16: FuseType.F32,
    FuseType.I16: FuseType.I32, FuseType.I8: FuseType.I32,
    FuseType.U16: FuseType.U32, FuseType.U8: FuseType.U32,
})


@dataclass(frozen=True, slots=True)
class FusedReduce:
    """burn ``FusedReduce``: the reduction's input (a multi-block value), output, accumulator
    type, axis, relative op and instruction."""

    input: FuseArg
    output: FuseArg
    acc: FuseType
    axis: int
    op: ReduceDimOpIr
    inst: str


@dataclass(frozen=True, slots=True)
class FusedReduceInfo:
    """burn ``ReduceFuserInfo::FusedReduce``."""

    shape_input_id: tuple[int, ...]
    axis: int


@dataclass(frozen=True, slots=True)
class FusedElemwiseInfo:
    """burn ``ReduceFuserInfo::FusedElemwise``."""

    shape_id: tuple[int, ...]


ReduceFuserInfo = Union[FusedReduceInfo, FusedElemwiseInfo]


@dataclass(frozen=True, slots=True)
class ReduceOptimization(FusedOptimization):
    """burn ``ReduceOptimization``: the fused trace (read block + write block) and the two
    fallback traces; ``num_ops_read`` ops run before the unfused reduction in the fallback."""

    name: ClassVar[str] = NAME
    trace: FuseTrace
    trace_read_fallback: FuseTrace
    trace_write_fallback: FuseTrace
    num_ops: int
    num_ops_read: int
    reduce: FusedReduce

    def traces(self) -> tuple[FuseTrace, ...]:
        return (self.trace, self.trace_read_fallback, self.trace_write_fallback)


def _accumulator(inst: str, ty: FuseType) -> FuseType:
    return _WIDER.get(ty, ty) if inst in _WIDENING else ty


class ReduceFuser:
    """burn ``ReduceFuser`` (``ReduceSettings::Always``)."""

    name = NAME

    def __init__(self, max_bindings: int) -> None:
        self.fuser = TraceOperationFuser(max_bindings, REDUCE_READ_SETTINGS)
        self.fuser_read_fallback = TraceOperationFuser(max_bindings, REDUCE_FALLBACK_SETTINGS)
        self.fuser_write_fallback = TraceOperationFuser(max_bindings, REDUCE_FALLBACK_SETTINGS)
        self.settings_write = REDUCE_WRITE_SETTINGS
        self.reduce: FusedReduce | None = None

    def clone(self) -> ReduceFuser:
        other = ReduceFuser.__new__(ReduceFuser)
        other.fuser = self.fuser.clone()
        other.fuser_read_fallback = self.fuser_read_fallback.clone()
        other.fuser_write_fallback = self.fuser_write_fallback.clone()
        other.settings_write, other.reduce = self.settings_write, self.reduce
        return other

    def reduce_info(self) -> ReduceFuserInfo:
        """What the block holds: a reduction (its input shape and axis) or element-wise ops."""
        if self.reduce is not None:
            return FusedReduceInfo(self.reduce.op.input.shape, self.reduce.axis)
        return FusedElemwiseInfo(self.fuser_read_fallback.current_output_shape)

    def _on_reduce(self, op: ReduceDimOpIr, inst: str) -> None:
        if self.fuser.current_output_shape != op.input.shape:
            self.fuser.close(REASON_REDUCE_SHAPE)
            self.fuser_read_fallback.close(REASON_REDUCE_SHAPE)
            return
        try:
            [source] = self.fuser.next_block((op.input,), self.settings_write, False)
        except Refusal as refusal:  # burn panics here (an indexed reduce input): we close
            self.fuser.close(refusal.reason)
            self.fuser_read_fallback.close(refusal.reason)
            return
        output = self.fuser.output_unhandled(op.out)
        acc = _accumulator(inst, source.precision())
        self.reduce = FusedReduce(source, output, acc, op.axis, op, inst)
        self.fuser_read_fallback.close("reduce captured")

    def _on_elemwise(self, operation: OperationIr, fallback: TraceOperationFuser) -> None:
        reason = self.fuser.refusal(operation) or fallback.refusal(operation)
        if reason is None:
            self.fuser.fuse(operation)
            fallback.fuse(operation)
        else:
            self.fuser.close(reason)
            fallback.close(reason)

    def fuse(self, operation: OperationIr) -> None:
        if self.fuser.status() is FuserStatus.Closed:
            return
        if self.reduce is not None:
            self._on_elemwise(operation, self.fuser_write_fallback)
        elif operation.op.kind is OpKind.REDUCE_DIM:
            self._on_reduce(operation.desc, ReduceInstruction[operation.op.variant])
        else:
            self._on_elemwise(operation, self.fuser_read_fallback)

    def finish(self) -> ReduceOptimization:
        """burn ``finish_reduce``: the optimization with its three traces."""
        if self.reduce is None:
            raise RuntimeError("the Reduce fuser holds no reduction: it is never ready")
        trace = self.fuser.finish()
        read_fallback = self.fuser_read_fallback.finish()
        write_fallback = self.fuser_write_fallback.finish()
        return ReduceOptimization(trace, read_fallback, write_fallback, self.len(),
                                  self.fuser_read_fallback.len(), self.reduce)

    def reset(self) -> None:
        self.fuser.reset()
        self.fuser_read_fallback.reset()
        self.fuser_write_fallback.reset()
        self.reduce = None

    def status(self) -> FuserStatus:
        return self.fuser.status()

    def properties(self) -> FuserProperties:
        properties = self.fuser.properties()
        return FuserProperties(score=properties.score, ready=self.reduce is not None)

    def len(self) -> int:
        return self.fuser.len() + (1 if self.reduce is not None else 0)

    @property
    def closed_reason(self) -> str | None:
        return self.fuser.closed_reason

    @property
    def max_bindings(self) -> int:
        return self.fuser.max_bindings

    def estimate_bindings(self) -> int:
        return self.fuser.estimate_bindings()
