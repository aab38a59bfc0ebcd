"""How much a fused trace saves: global reads and writes avoided, kernel launches saved.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/scoring.rs`` (``Scoring``); notes §9.2.

While fusing, every accepted op (``Drop`` included) adds its unfused I/O: one read per input
tensor, one write per output tensor, one launch. ``evaluate`` compares that with the trace's
global reads (``Input``/``Output`` sources, plus one penalty per read through a reshape or
swap_dims view) and global writes (``Output`` targets):

    score = max(0, unfused_io - fused_io) * 100 + (num_ops - 1) * 10 - penalty * 50   (>= 0)

>>> Scoring(num_reads=2, num_writes=2, num_ops=2).calculate_score(1, 1, 0)
210
>>> Scoring(num_reads=2, num_writes=2, num_ops=2).calculate_score(1, 1, 1)
160
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from refimpl.ir import OperationIr
from refimpl.planner.engine.trace import (
    FuseArg, FuseOp, FuseTrace, Input, InputReshaped, InputSwapDims, Output, UnaryFuseArgs,
)

__all__ = ["Scoring", "FACTOR_IO", "FACTOR_LAUNCH", "FACTOR_PENALTY"]

FACTOR_IO = 100  # per global read or write saved
FACTOR_LAUNCH = 10  # per kernel launch saved (one launch is always needed)
FACTOR_PENALTY = 50  # per read through a fused view (index math on every element)

_GLOBAL = (Input, Output)
_VIEWS = (InputReshaped, InputSwapDims)


@dataclass(slots=True)
class Scoring:
    """burn ``Scoring``: the unfused I/O of the ops registered so far."""

    num_reads: int = 0
    num_writes: int = 0
    num_ops: int = 0

    def clone(self) -> Scoring:
        return Scoring(self.num_reads, self.num_writes, self.num_ops)

    def reset(self) -> None:
        self.num_reads = self.num_writes = self.num_ops = 0

    def register(self, op: OperationIr) -> None:
        """Count an accepted op's unfused I/O (a ``Drop`` counts one read and one op)."""
        self.num_writes += len(op.outputs())
        self.num_reads += len(op.inputs())
        self.num_ops += 1

    def evaluate(self, trace: FuseTrace) -> int:
        """The score of ``trace`` against the registered unfused I/O."""
        reads = writes = penalty = 0
        for block in trace.blocks:
            for _, ops in block.reads:
                io, views = _count_fused_io(ops, lambda args: args.input)
                reads, penalty = reads + io, penalty + views
            for _, ops in block.writes:
                io, views = _count_fused_io(ops, lambda args: args.out)
                writes, penalty = writes + io, penalty + views
        return self.calculate_score(reads, writes, penalty)

    def calculate_score(self, reads_fused: int, writes_fused: int, num_penalty: int) -> int:
        """burn's formula (saturating at 0)."""
        fused = reads_fused + writes_fused
        unfused = self.num_reads + self.num_writes
        score_io = 0 if fused >= unfused else (unfused - fused) * FACTOR_IO
        score_launch = max(self.num_ops - 1, 0) * FACTOR_LAUNCH
        return max(score_io + score_launch - num_penalty * FACTOR_PENALTY, 0)


def _count_fused_io(ops: tuple[FuseOp, ...],
                    side: Callable[[UnaryFuseArgs], FuseArg]) -> tuple[int, int]:
    """(global accesses, view penalties) of the ``Assign`` ops of one tensor's reads/writes."""
    io = views = 0
    for op in ops:
        arg = side(op.args)
        if isinstance(arg, _VIEWS):
            io, views = io + 1, views + 1
        elif isinstance(arg, _GLOBAL):
            io += 1
    return io, views
