"""The Matmul fuser: a ``Float.Matmul`` followed by element-wise ops fused into its epilogue.

burn counterpart: ``crates/burn-cubecl-fusion/src/optim/matmul/fuser.rs`` (``MatmulFuser``) and
``optim/matmul/optimization.rs`` (``MatmulOptimization``, ``FusedMatmul``); notes §8.1.

Two traces grow side by side: ``fuser`` (the epilogue run by the matmul kernel as it writes)
and ``fuser_fallback`` (the matmul alone, then the tail as one element-wise kernel, which reads
the matmul result as a plain input). An op joins only if both accept it. The matmul itself is
not scored, so a lone matmul is never ready; ``len`` counts it (+1), as burn does, even when the
fuser closed on a first op that was not a matmul.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from refimpl.ir import BinaryOpIr, OperationIr
from refimpl.ops import OpKind
from refimpl.planner.engine.fuser import FuserProperties, FuserStatus
from refimpl.planner.engine.settings import MATMUL_FALLBACK_SETTINGS, MATMUL_SETTINGS
from refimpl.planner.engine.trace import FuseArg, FuseTrace
from refimpl.planner.engine.trace_fuser import TraceOperationFuser
from refimpl.planner.fusers.elemwise import FusedOptimization

__all__ = ["FusedMatmul", "MatmulOptimization", "MatmulFuser", "NAME", "REASON_NOT_MATMUL"]

NAME = "Matmul"
REASON_NOT_MATMUL = "first op not a matmul"


@dataclass(frozen=True, slots=True)
class FusedMatmul:
    """burn ``FusedMatmul``: the matmul's operands and output as trace arguments."""

    lhs: FuseArg
    rhs: FuseArg
    out: FuseArg
    op: BinaryOpIr


@dataclass(frozen=True, slots=True)
class MatmulOptimization(FusedOptimization):
    """burn ``MatmulOptimization``: the fused trace (main) and the fallback trace; autotune
    picks between them, the fallback being candidate 0."""

    name: ClassVar[str] = NAME
    trace: FuseTrace
    trace_fallback: FuseTrace
    num_ops: int
    matmul: FusedMatmul

    def traces(self) -> tuple[FuseTrace, ...]:
        return (self.trace, self.trace_fallback)


class MatmulFuser:
    """burn ``MatmulFuser``."""

    name = NAME

    def __init__(self, max_bindings: int) -> None:
        self.fuser = TraceOperationFuser(max_bindings, MATMUL_SETTINGS)
        self.fuser_fallback = TraceOperationFuser(max_bindings, MATMUL_FALLBACK_SETTINGS)
        self.matmul: FusedMatmul | None = None

    def clone(self) -> MatmulFuser:
        other = MatmulFuser.__new__(MatmulFuser)
        other.fuser, other.fuser_fallback = self.fuser.clone(), self.fuser_fallback.clone()
        other.matmul = self.matmul
        return other

    def _close(self, reason: str) -> None:
        self.fuser.close(reason)
        self.fuser_fallback.close(reason)

    def _on_matmul(self, op: BinaryOpIr) -> None:
        lhs = self.fuser.input_unhandled(op.lhs)
        rhs = self.fuser.input_unhandled(op.rhs)
        out = self.fuser.output_unhandled(op.out)
        self.matmul = FusedMatmul(lhs, rhs, out, op)

    def fuse(self, operation: OperationIr) -> None:
        if self.fuser.status() is FuserStatus.Closed:
            return
        if self.matmul is None:
            if operation.op.kind is OpKind.MATMUL:
                self._on_matmul(operation.desc)
            else:
                self._close(REASON_NOT_MATMUL)
            return
        reason = self.fuser.refusal(operation) or self.fuser_fallback.refusal(operation)
        if reason is None:
            self.fuser.fuse(operation)
            self.fuser_fallback.fuse(operation)
        else:
            self._close(reason)

    def finish(self) -> MatmulOptimization:
        if self.matmul is None:
            raise RuntimeError("the Matmul fuser holds no matmul: it is never ready")
        trace, fallback = self.fuser.finish(), self.fuser_fallback.finish()
        return MatmulOptimization(trace, fallback, self.len(), self.matmul)

    def reset(self) -> None:
        self.fuser.reset()
        self.fuser_fallback.reset()
        self.matmul = None

    def status(self) -> FuserStatus:
        return self.fuser.status()

    def properties(self) -> FuserProperties:
        return self.fuser.properties()

    def len(self) -> int:
        return self.fuser.len() + 1  # the matmul is not registered in the trace fuser

    @property
    def closed_reason(self) -> str | None:
        return self.fuser.closed_reason

    @property
    def max_bindings(self) -> int:
        return self.fuser.max_bindings

    def estimate_bindings(self) -> int:
        return self.fuser.estimate_bindings()
