"""The NHWCRelayout fuser: element-wise ops whose result feeds a pooling / interpolate op are
fused, and that result is written channels-last so the module op reads it directly.

burn counterpart: ``crates/burn-cubecl-fusion/src/optim/nhwc_relayout/fuser.rs``
(``NHWCRelayoutFuser``) and ``optim/nhwc_relayout/optimization.rs``; notes §8.4.

The module op (kind ``MODULE``) is captured only when its input ``x`` is consumed
``ReadWrite`` (no other reader expects NCHW); the fuser then closes. It is ready only when at
least one element-wise op was fused before it, and then scores the trace's score + 100. The
module op itself runs unfused after the trace (``len`` counts it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from refimpl.ir import OperationIr, TensorStatus
from refimpl.ops import OpKind
from refimpl.planner.engine.fuser import FuserProperties, FuserStatus
from refimpl.planner.engine.settings import NHWC_RELAYOUT_SETTINGS
from refimpl.planner.engine.trace import FuseTrace
from refimpl.planner.engine.trace_fuser import TraceOperationFuser
from refimpl.planner.fusers.elemwise import FusedOptimization

__all__ = ["NAME", "NHWC_SCORE_BONUS", "nhwc_permutation", "NHWCRelayoutOptimization",
           "NHWCRelayoutFuser"]

NAME = "NHWCRelayout"
NHWC_SCORE_BONUS = 100  # burn: a flat bonus, marked provisional in its source


def nhwc_permutation(rank: int) -> tuple[int, ...]:
    """Where each dim's stride goes: N stays first, channels (dim 1) last, the rest move up.

    >>> nhwc_permutation(4)
    (0, 3, 1, 2)
    """
    if rank < 2:
        return (0,) * rank
    return (0, rank - 1) + tuple(range(1, rank - 1))


@dataclass(frozen=True, slots=True)
class NHWCRelayoutOptimization(FusedOptimization):
    """burn ``NHWCRelayoutOptimization``: the element-wise trace; the module op (the last of
    ``num_ops``) runs unfused afterwards."""

    name: ClassVar[str] = NAME
    trace: FuseTrace
    num_ops: int


class NHWCRelayoutFuser:
    """burn ``NHWCRelayoutFuser``."""

    name = NAME

    def __init__(self, max_bindings: int) -> None:
        self.fuser = TraceOperationFuser(max_bindings, NHWC_RELAYOUT_SETTINGS)
        self.op: OperationIr | None = None
        self._status = self.fuser.status()

    def clone(self) -> NHWCRelayoutFuser:
        other = NHWCRelayoutFuser.__new__(NHWCRelayoutFuser)
        other.fuser, other.op, other._status = self.fuser.clone(), self.op, self._status
        return other

    def fuse(self, operation: OperationIr) -> None:
        if self._status is FuserStatus.Closed:
            return
        if operation.op.kind is OpKind.MODULE and \
                operation.desc.x.status is TensorStatus.ReadWrite:
            self.op = operation
            x = operation.desc.x
            self.fuser.output_nhwc_layout(x, nhwc_permutation(len(x.shape)))
            self._status = FuserStatus.Closed
            return
        self.fuser.fuse(operation)
        self._status = self.fuser.status()

    def finish(self) -> NHWCRelayoutOptimization:
        return NHWCRelayoutOptimization(self.fuser.finish(), self.len())

    def reset(self) -> None:
        self.fuser.reset()
        self.op = None
        self._status = self.fuser.status()

    def status(self) -> FuserStatus:
        return self._status

    def properties(self) -> FuserProperties:
        properties = self.fuser.properties()
        bonus = NHWC_SCORE_BONUS if self.op is not None else 0
        return FuserProperties(score=properties.score + bonus,
                               ready=properties.ready and self.op is not None)

    def len(self) -> int:
        return self.fuser.len() + (1 if self.op is not None else 0)

    @property
    def closed_reason(self) -> str | None:
        if self.op is not None:
            return "module op captured"
        return self.fuser.closed_reason

    @property
    def max_bindings(self) -> int:
        return self.fuser.max_bindings

    def estimate_bindings(self) -> int:
        return self.fuser.estimate_bindings()
