"""The ElementWise fuser: one block of element-wise ops, one ``elemwise_fuse`` kernel.

burn counterpart: ``crates/burn-cubecl-fusion/src/optim/elemwise/fuser.rs``
(``ElementWiseFuser``) and ``optim/elemwise/optimization.rs`` (``ElemwiseOptimization``);
notes §3, §5. Also home of ``FusedOptimization``, the read-only view every optimization of the
five fusers offers the search and the plan (burn: ``NumOperations`` + ``FusedOperation``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from refimpl.ir import OperationIr
from refimpl.planner.engine.fuser import FuserProperties, FuserStatus
from refimpl.planner.engine.settings import ELEMENTWISE_SETTINGS
from refimpl.planner.engine.trace import FuseBlock, FuseTrace
from refimpl.planner.engine.trace_fuser import TraceOperationFuser

__all__ = ["FusedOptimization", "ElemwiseOptimization", "ElementWiseFuser", "NAME"]

NAME = "ElementWise"


class FusedOptimization:
    """What the search and the plan read from any optimization: its name, how many leading ops
    of its block it covers (``len``), and its main trace (``main_trace``)."""

    __slots__ = ()
    name: ClassVar[str]

    def main_trace(self) -> FuseTrace:
        """The trace that describes the fused kernel (subclasses with several override this)."""
        return self.trace  # type: ignore[attr-defined]

    def traces(self) -> tuple[FuseTrace, ...]:
        """Every trace the optimization may run (main first)."""
        return (self.main_trace(),)

    def max_relative_shape_id(self) -> int | None:
        """The highest relative shape id any of its traces names (burn #5400): a cached plan
        naming more shape ids than a stream assigned cannot run on it."""
        found = [i for trace in self.traces() if (i := trace.max_relative_shape_id()) is not None]
        return max(found) if found else None

    def len(self) -> int:
        """Ops covered: every accepted op, drops and views included (burn ``len``)."""
        return self.num_ops  # type: ignore[attr-defined]

    def blocks(self) -> tuple[FuseBlock, ...]:
        return self.main_trace().blocks

    def global_inputs(self) -> tuple[int, ...]:
        """Relative ids read from global memory, in registration (binding) order."""
        return self.main_trace().input_ids()

    def global_outputs(self) -> tuple[int, ...]:
        """Relative ids written to global memory, in registration (binding) order."""
        return self.main_trace().output_ids()

    def block_op_names(self) -> tuple[tuple[str, ...], ...]:
        """Per block, the FuseOp names of its data ops (reads and writes excluded)."""
        return tuple(block.op_names() for block in self.blocks())


@dataclass(frozen=True, slots=True)
class ElemwiseOptimization(FusedOptimization):
    """burn ``ElemwiseOptimization``: one trace, run by the element-wise runner."""

    name: ClassVar[str] = NAME
    trace: FuseTrace
    num_ops: int


class ElementWiseFuser:
    """burn ``ElementWiseFuser``: a ``TraceOperationFuser`` with the element-wise settings."""

    name = NAME

    def __init__(self, max_bindings: int) -> None:
        self.fuser = TraceOperationFuser(max_bindings, ELEMENTWISE_SETTINGS)

    def clone(self) -> ElementWiseFuser:
        other = ElementWiseFuser.__new__(ElementWiseFuser)
        other.fuser = self.fuser.clone()
        return other

    def fuse(self, operation: OperationIr) -> None:
        self.fuser.fuse(operation)

    def finish(self) -> ElemwiseOptimization:
        return ElemwiseOptimization(self.fuser.finish(), self.len())

    def reset(self) -> None:
        self.fuser.reset()

    def status(self) -> FuserStatus:
        return self.fuser.status()

    def properties(self) -> FuserProperties:
        return self.fuser.properties()

    def len(self) -> int:
        return self.fuser.len()

    def shape_id(self) -> tuple[int, ...]:
        """The block's current reference shape (relative ids)."""
        return self.fuser.current_output_shape

    @property
    def closed_reason(self) -> str | None:
        return self.fuser.closed_reason

    @property
    def closed_log(self) -> str | None:
        return self.fuser.closed_log

    @property
    def max_bindings(self) -> int:
        return self.fuser.max_bindings

    def estimate_bindings(self) -> int:
        return self.fuser.estimate_bindings()
