"""The ReduceBroadcasted fuser: reduce blocks chained with the element-wise ops that broadcast
their results back (softmax, layer norm) into one plan.

burn counterpart: ``crates/burn-cubecl-fusion/src/optim/reduce_broadcasted/fuser/{base,block,
full,full_analyzer}.rs`` (``ReduceBroadcastedFuser``, ``ReduceBlockFuser``,
``ReduceBroadcastedFullFuser``, ``FullFuserAnalyzer``) and ``optimization.rs``; notes §8.3.

Each block is a ``ReduceFuser`` (a trailing block may hold element-wise ops only). An op goes to
the last block; if that block refuses it, a new block starts when the op is a reduction like
the first one (same input shape, last axis) or an element-wise op on that full shape. Once the
fuser is ready, every op is first tried on a copy, and refused if the single trace over all
blocks (the "full" fuser) would no longer cover every op (burn #4695).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import ClassVar, Union

from refimpl.ir import OperationIr, TensorIr
from refimpl.planner.engine.builder import Refusal
from refimpl.planner.engine.fuser import FuserProperties, FuserStatus
from refimpl.planner.engine.settings import (
    REDUCE_BROADCASTED_READ_SETTINGS, REDUCE_BROADCASTED_WRITE_SETTINGS,
    reduce_broadcasted_next_read_settings,
)
from refimpl.planner.engine.trace import FuseArg, FuseTrace
from refimpl.planner.engine.trace_fuser import TraceOperationFuser
from refimpl.planner.fusers.elemwise import ElemwiseOptimization, FusedOptimization
from refimpl.planner.fusers.reduce import (
    FusedElemwiseInfo, FusedReduce, FusedReduceInfo, ReduceFuser, ReduceOptimization,
)

__all__ = [
    "NAME", "ReduceBroadcastedState", "ReduceBroadcastedStatus", "ReduceBlockFusionAnalysis",
    "ReduceBlockKind", "ReduceBlockFuser", "FullFuserAnalyzer", "ReduceBroadcastedFuseBlock",
    "ReduceBroadcastedInfo", "ReduceBroadcastedFullFuser", "ReduceBroadcastedOptimization",
    "ReduceBroadcastedFuser",
]

NAME = "ReduceBroadcasted"


class ReduceBroadcastedState(enum.Enum):
    Starting = "Starting"  # no reduction yet
    Init = "Init"  # a reduction fixed the input shape and axis
    Closed = "Closed"
    Abort = "Abort"  # the first reduction was not along the last axis


@dataclass(frozen=True, slots=True)
class ReduceBroadcastedStatus:
    """burn ``ReduceBroadcastedStatus``; ``shape_id``/``axis`` only for ``Init``."""

    state: ReduceBroadcastedState
    shape_id: tuple[int, ...] = ()
    axis: int = 0


STARTING = ReduceBroadcastedStatus(ReduceBroadcastedState.Starting)


class ReduceBlockFusionAnalysis(enum.Enum):
    Accept = "Accept"
    Refuse = "Refuse"
    NewBlockRequired = "NewBlockRequired"


@dataclass(frozen=True, slots=True)
class ReduceBlockKind:
    """burn ``ReduceBlockKind``: element-wise (``reduce is None``) or a reduce block whose
    reduction is its op number ``ops_index``."""

    ops_index: int = 0
    reduce: FusedReduce | None = None

    @property
    def is_elemwise(self) -> bool:
        return self.reduce is None


ELEMWISE_BLOCK = ReduceBlockKind()


class ReduceBlockFuser:
    """burn ``ReduceBlockFuser``: one block, its ops, and its kind."""

    def __init__(self, fuser: ReduceFuser) -> None:
        self.fuser = fuser.clone()
        self.ops: list[OperationIr] = []
        self.kind = ELEMWISE_BLOCK

    def clone(self) -> ReduceBlockFuser:
        other = ReduceBlockFuser(self.fuser)
        other.ops, other.kind = list(self.ops), self.kind
        return other

    def analyze(self, op: OperationIr, status: ReduceBroadcastedStatus,
                default: ReduceFuser) -> tuple[ReduceBlockFusionAnalysis, str | None]:
        """Whether this block takes ``op``, a new block must, or nobody (with the reason)."""
        trial = self.fuser.clone()
        trial.fuse(op)
        if trial.len() > self.fuser.len():
            return ReduceBlockFusionAnalysis.Accept, None
        if self.fuser.reduce is None:
            return ReduceBlockFusionAnalysis.Refuse, trial.closed_reason
        inner = self.fuser.fuser
        if inner.num_views > 0 and inner.fuser.fuser.num_multi_block_local_inputs() > 0:
            return ReduceBlockFusionAnalysis.Refuse, "view in a broadcast block"
        fresh = default.clone()
        fresh.fuse(op)
        if fresh.len() == default.len():
            return ReduceBlockFusionAnalysis.Refuse, fresh.closed_reason
        return _new_block_analysis(fresh.reduce_info(), status)

    def fuse(self, op: OperationIr) -> None:
        self.fuser.fuse(op)
        self.ops.append(op)
        if self.fuser.reduce is not None and self.kind.is_elemwise:
            self.kind = ReduceBlockKind(len(self.ops) - 1, self.fuser.reduce)

    def properties(self) -> FuserProperties:
        properties = self.fuser.properties()
        if self.kind.is_elemwise:  # element-wise blocks are always ready to run
            return FuserProperties(score=properties.score, ready=True)
        return properties

    def finish(self, full: ReduceBroadcastedFullFuser) -> tuple[FusedOptimization, int]:
        """This block's own optimization (its fallback) and the ops it covers."""
        full.register(self)
        if self.kind.is_elemwise:
            num_ops = self.fuser.fuser_read_fallback.len()
            return ElemwiseOptimization(self.fuser.fuser_read_fallback.finish(), num_ops), num_ops
        return self.fuser.finish(), self.fuser.len()


def _new_block_analysis(info: FusedReduceInfo | FusedElemwiseInfo,
                        status: ReduceBroadcastedStatus,
                        ) -> tuple[ReduceBlockFusionAnalysis, str | None]:
    if status.state is not ReduceBroadcastedState.Init:
        return ReduceBlockFusionAnalysis.Refuse, "no reduction to broadcast"
    if isinstance(info, FusedReduceInfo):
        same = info.shape_input_id == status.shape_id and info.axis == status.axis
        reason = "reduce shape or axis differs"
    else:
        same = info.shape_id == status.shape_id
        reason = "broadcast shape differs"
    if same:
        return ReduceBlockFusionAnalysis.NewBlockRequired, None
    return ReduceBlockFusionAnalysis.Refuse, reason


class FullFuserAnalyzer:
    """burn ``FullFuserAnalyzer``: for every block boundary of the full trace, which tensors the
    new block receives from an earlier block (tensor, block position)."""

    def __init__(self, blocks: list[ReduceBlockFuser]) -> None:
        self._analyses: list[list[tuple[TensorIr, int]]] = []
        self._single: dict[int, int] = {}  # ids available after a reduce's write side
        self._full: dict[int, int] = {}  # ids available on full-shape sides (kept, unused)
        self._block_data: list[tuple[TensorIr, int]] = []
        self._current_full: list[TensorIr] = []
        self._current_single: list[TensorIr] = []
        for block in blocks:
            for pos, op in enumerate(block.ops):
                if block.kind.is_elemwise or pos < block.kind.ops_index:
                    self._register(op, self._current_full)
                elif pos > block.kind.ops_index:
                    self._register(op, self._current_single)
                else:
                    self._next_block()
            self._next_block()
        self._analyses.pop(0)  # the first block receives nothing

    def _next_block(self) -> None:
        block_pos = len(self._analyses)
        self._analyses.append(self._block_data)
        self._block_data = []
        for tensor in self._current_single:
            self._single.setdefault(tensor.id, block_pos)
        for tensor in self._current_full:
            self._full.setdefault(tensor.id, block_pos)
        self._current_single, self._current_full = [], []

    def _register(self, op: OperationIr, current: list[TensorIr]) -> None:
        # Only values from a reduce's write side can be read across blocks (a broadcast);
        # full-shape values live in another reduction loop.
        for tensor in op.inputs():
            block_pos = self._single.get(tensor.id)
            if block_pos is not None:
                self._block_data.append((tensor, block_pos))
            current.append(tensor)
        current.extend(op.outputs())

    def retrieve_next(self) -> list[tuple[TensorIr, int]]:
        return self._analyses.pop(0)


@dataclass(frozen=True, slots=True)
class ReduceBroadcastedFuseBlock:
    """burn ``ReduceBroadcastedFuseBlock``: one reduction of the full trace."""

    inst: str
    input: FuseArg
    output: FuseArg


@dataclass(frozen=True, slots=True)
class ReduceBroadcastedInfo:
    """burn ``ReduceBroadcastedInfo``: the single trace over every block, and its reductions."""

    blocks: tuple[ReduceBroadcastedFuseBlock, ...]
    trace: FuseTrace
    reduce_axis: int


class ReduceBroadcastedFullFuser:
    """burn ``ReduceBroadcastedFullFuser``: builds one trace over every block."""

    def __init__(self, max_bindings: int, analyzer: FullFuserAnalyzer) -> None:
        self.fuser = TraceOperationFuser(max_bindings, REDUCE_BROADCASTED_READ_SETTINGS)
        self.analyzer = analyzer
        self.blocks: list[ReduceBlockKind] = []

    def num_ops_fused(self) -> int:
        """Ops in the full trace, each reduction counted once."""
        return self.fuser.num_ops + sum(1 for kind in self.blocks if not kind.is_elemwise)

    def _receive(self) -> None:
        for tensor, block_pos in self.analyzer.retrieve_next():
            self.fuser.block_local_input(tensor, block_pos, False)

    def register(self, block: ReduceBlockFuser) -> None:
        """Append one block's ops (and its reduction) to the full trace."""
        if self.fuser.len() != 0:
            self.fuser.next_block((), reduce_broadcasted_next_read_settings(), False)
            self._receive()
        kind = block.kind
        if kind.is_elemwise:
            for op in block.ops:
                self.fuser.fuse(op)
            self.blocks.append(ELEMWISE_BLOCK)
            return
        for op in block.ops[:kind.ops_index]:
            self.fuser.fuse(op)
        reduce = kind.reduce
        [source] = self.fuser.next_block((reduce.op.input,), REDUCE_BROADCASTED_WRITE_SETTINGS,
                                         False)
        output = self.fuser.output_unhandled(reduce.op.out)
        self._receive()
        fused = FusedReduce(source, output, reduce.acc, reduce.axis, reduce.op, reduce.inst)
        self.blocks.append(ReduceBlockKind(kind.ops_index, fused))
        for op in block.ops[kind.ops_index + 1:]:
            self.fuser.fuse(op)

    def finish(self) -> ReduceBroadcastedInfo:
        reductions, axis = [], 0
        for kind in self.blocks:
            if kind.reduce is not None:
                reductions.append(ReduceBroadcastedFuseBlock(
                    kind.reduce.inst, kind.reduce.input, kind.reduce.output))
                axis = kind.reduce.axis
        return ReduceBroadcastedInfo(tuple(reductions), self.fuser.finish(), axis)


BlockOptimization = Union[ReduceOptimization, ElemwiseOptimization]


@dataclass(frozen=True, slots=True)
class ReduceBroadcastedOptimization(FusedOptimization):
    """burn ``ReduceBroadcastedOptimization``: the per-block optimizations (the fallback, the
    only path run without autotune) and the full trace (main)."""

    name: ClassVar[str] = NAME
    fallbacks: tuple[BlockOptimization, ...]
    broadcasted: ReduceBroadcastedInfo
    num_ops: int

    def main_trace(self) -> FuseTrace:
        return self.broadcasted.trace

    def traces(self) -> tuple[FuseTrace, ...]:
        return (self.broadcasted.trace,) + tuple(
            trace for fallback in self.fallbacks for trace in fallback.traces())


def _finish_blocks(blocks: list[ReduceBlockFuser], max_bindings: int,
                   ) -> tuple[list[FusedOptimization], ReduceBroadcastedFullFuser, int]:
    full = ReduceBroadcastedFullFuser(max_bindings, FullFuserAnalyzer(blocks))
    fallbacks, num_ops = [], 0
    for block in blocks:
        optimization, covered = block.finish(full)
        fallbacks.append(optimization)
        num_ops += covered
    return fallbacks, full, num_ops


class ReduceBroadcastedFuser:
    """burn ``ReduceBroadcastedFuser``."""

    name = NAME

    def __init__(self, max_bindings: int) -> None:
        self.fuser_default = ReduceFuser(max_bindings)
        self.blocks = [ReduceBlockFuser(self.fuser_default)]
        self.num_ops = 0
        self.state = STARTING
        self.max_bindings = max_bindings
        self.closed_reason: str | None = None

    def clone(self) -> ReduceBroadcastedFuser:
        other = ReduceBroadcastedFuser.__new__(ReduceBroadcastedFuser)
        other.__dict__.update(self.__dict__)
        other.blocks = [block.clone() for block in self.blocks]
        return other

    def _set_closed(self, state: ReduceBroadcastedState, reason: str | None) -> None:
        self.state = ReduceBroadcastedStatus(state)
        self.closed_reason = reason

    def is_consistent(self) -> bool:
        """Dry run: the full trace and the per-block fallbacks both cover every op."""
        try:
            fallbacks, full, num_ops = _finish_blocks([b.clone() for b in self.blocks],
                                                      self.max_bindings)
        except Refusal:  # burn panics (an indexed tensor crossing blocks): not consistent
            return False
        num_ops_fallback = sum(optimization.len() for optimization in fallbacks)
        return full.num_ops_fused() == num_ops and num_ops_fallback == num_ops

    def _fuse_no_check(self, op: OperationIr) -> None:
        block = self.blocks[-1]
        analysis, reason = block.analyze(op, self.state, self.fuser_default)
        if analysis is ReduceBlockFusionAnalysis.Refuse:
            self._set_closed(ReduceBroadcastedState.Closed, reason)
            return
        info = block.fuser.reduce_info()
        if analysis is ReduceBlockFusionAnalysis.Accept:
            block.fuse(op)
            info = block.fuser.reduce_info()
        else:
            fresh = ReduceBlockFuser(self.fuser_default)
            fresh.fuse(op)
            self.blocks.append(fresh)
        self.num_ops += 1
        if isinstance(info, FusedReduceInfo):
            if info.axis != len(info.shape_input_id) - 1:
                self._set_closed(ReduceBroadcastedState.Abort, "reduce axis not last")
            else:
                self.state = ReduceBroadcastedStatus(
                    ReduceBroadcastedState.Init, info.shape_input_id, info.axis)

    def fuse(self, operation: OperationIr) -> None:
        if self.state.state in (ReduceBroadcastedState.Closed, ReduceBroadcastedState.Abort):
            return
        trial = self.clone()
        trial._fuse_no_check(operation)
        if trial.properties().ready and not trial.is_consistent():
            self._set_closed(ReduceBroadcastedState.Closed, "inconsistent trace")
        else:
            self._fuse_no_check(operation)

    def finish(self) -> ReduceBroadcastedOptimization:
        fallbacks, full, num_ops = _finish_blocks(self.blocks, self.max_bindings)
        return ReduceBroadcastedOptimization(tuple(fallbacks), full.finish(), num_ops)

    def reset(self) -> None:
        self.blocks = [ReduceBlockFuser(self.fuser_default)]
        self.num_ops = 0
        self.state = STARTING
        self.closed_reason = None

    def status(self) -> FuserStatus:
        if self.state.state in (ReduceBroadcastedState.Closed, ReduceBroadcastedState.Abort):
            return FuserStatus.Closed
        return self.blocks[-1].fuser.status()

    def properties(self) -> FuserProperties:
        state = self.state.state
        if state in (ReduceBroadcastedState.Starting, ReduceBroadcastedState.Abort):
            ready = False
        elif state is ReduceBroadcastedState.Closed and len(self.blocks) == 1:
            ready = not self.blocks[0].kind.is_elemwise
        else:
            ready = True
        score = 0
        for block in self.blocks:
            properties = block.properties()
            score += properties.score
            ready = properties.ready and ready
        return FuserProperties(score=score, ready=ready)

    def len(self) -> int:
        return self.num_ops

    def estimate_bindings(self) -> int:
        """Bindings of the last block's fused trace (the full trace exists only at finish)."""
        return self.blocks[-1].fuser.estimate_bindings()
