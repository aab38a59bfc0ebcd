"""One block of the search: ops that share tensors, fed to a private clone of every fuser.

burn counterpart: ``crates/burn-fusion/src/search/block.rs`` (``Block``, ``OperationNode``,
``RegistrationResult``, ``find_best_optimization_index``).

A block keeps its ops in registration order (which may differ from stream order after a
merge), their segment positions (``ordering``), the tensor ids it touches, and three data-flow
sets that make it a ``GraphNode``:

* ``produced`` — ids an op of the block outputs;
* ``read`` — ids the block consumes that nothing in it produced (external inputs);
* ``freed`` — ids it reads ``ReadWrite`` (last use: frees the buffer or reuses it in place).

The sets are dicts used as insertion-ordered sets, so iterating them is deterministic.

Invariants:

* Every fuser of the block has been fed exactly the block's ops, in registration order.
* ``optimize`` picks the ready fuser with the highest score strictly above 0; ties go to the
  earlier fuser (``BUILTIN_NAMES`` order); if it covers fewer ops than the block holds, the
  ordering is truncated to its prefix (the rest is left for the next round).
"""

from __future__ import annotations

import enum
import sys
from dataclasses import dataclass
from typing import Sequence

from refimpl.ir import OperationIr, TensorStatus
from refimpl.planner.engine.fuser import FuserStatus, OperationFuser
from refimpl.planner.log import NO_LOG, FusionLog, log_block
from refimpl.planner.search.graph import is_valid_execution_order
from refimpl.planner.search.strategy import BlockOptimization, Operations, Optimization

__all__ = ["RegistrationResult", "OperationNode", "Block", "find_best_fuser_index"]


class RegistrationResult(enum.Enum):
    """What ``Block.register`` did with an op."""

    Accepted = "Accepted"
    NotPartOfTheGraph = "NotPartOfTheGraph"


@dataclass(frozen=True, slots=True)
class OperationNode:
    """One op at its segment position, seen as a graph node (burn ``OperationNode``)."""

    operation: OperationIr
    pos: int

    def produced(self) -> tuple[int, ...]:
        return tuple(t.id for t in self.operation.outputs())

    def read(self) -> tuple[int, ...]:
        return tuple(t.id for t in self.operation.inputs())

    def freed(self) -> tuple[int, ...]:
        inputs = self.operation.inputs()
        return tuple(t.id for t in inputs if t.status is TensorStatus.ReadWrite)

    def produces(self, resource: int) -> bool:
        return resource in self.produced()

    def reads(self, resource: int) -> bool:
        return resource in self.read()

    def position(self) -> int:
        return self.pos


def find_best_fuser_index(fusers: Sequence[OperationFuser]) -> tuple[int, int] | None:
    """``(index, score)`` of the ready fuser with the best score > 0, or ``None``.

    A score of 0 is never chosen (running unfused is as good); ties keep the earlier fuser.
    """
    best: tuple[int, int] | None = None
    best_score = 0
    for index, fuser in enumerate(fusers):
        properties = fuser.properties()
        if properties.ready and properties.score > best_score:
            best = (index, properties.score)
            best_score = properties.score
    return best


class Block:
    """A list of ops (not necessarily in stream order) with one clone of every fuser."""

    def __init__(self, fusers: Sequence[OperationFuser]):
        self.fusers: list[OperationFuser] = [fuser.clone() for fuser in fusers]
        self.operations: list[OperationIr] = []
        self.ordering: list[int] = []
        self.ids: set[int] = set()  # membership only
        self.produced_ids: dict[int, None] = {}
        self.read_ids: dict[int, None] = {}
        self.freed_ids: dict[int, None] = {}
        self.constituents = 0  # bit set of the original blocks this one subsumes
        self.start_pos = sys.maxsize
        self.end_pos = 0

    # --- GraphNode ---------------------------------------------------------------------------

    def produced(self) -> tuple[int, ...]:
        return tuple(self.produced_ids)

    def read(self) -> tuple[int, ...]:
        return tuple(self.read_ids)

    def freed(self) -> tuple[int, ...]:
        return tuple(self.freed_ids)

    def produces(self, resource: int) -> bool:
        return resource in self.produced_ids

    def reads(self, resource: int) -> bool:
        return resource in self.read_ids

    def position(self) -> int:
        return self.start_pos

    # --- construction ------------------------------------------------------------------------

    def clone(self) -> Block:
        """A deep copy: fusers cloned, lists and sets copied."""
        other = Block(())
        other.fusers = [fuser.clone() for fuser in self.fusers]
        other.operations = list(self.operations)
        other.ordering = list(self.ordering)
        other.ids = set(self.ids)
        other.produced_ids = dict(self.produced_ids)
        other.read_ids = dict(self.read_ids)
        other.freed_ids = dict(self.freed_ids)
        other.constituents = self.constituents
        other.start_pos = self.start_pos
        other.end_pos = self.end_pos
        return other

    def seed_constituent(self, index: int) -> None:
        """Make this block stand for original block ``index`` alone (before a merge pass)."""
        self.constituents = 1 << index

    def sort_key(self) -> int:
        """Blocks are kept sorted by start position (burn ``Block::sort``; stable)."""
        return self.start_pos

    def register(self, operation: OperationIr, pos: int, force: bool) -> RegistrationResult:
        """Add an op if it shares a tensor with the block (or ``force``, or the block is
        empty)."""
        if self.ids and not force and not self.contains_tensors(operation.nodes()):
            return RegistrationResult.NotPartOfTheGraph
        self._register_op(operation, pos)
        return RegistrationResult.Accepted

    def contains_tensors(self, tensors: Sequence) -> bool:
        """Whether any of the tensors is already touched by the block."""
        for tensor in tensors:
            if tensor.id in self.ids:
                return True
        return False

    def _register_op(self, operation: OperationIr, pos: int) -> None:
        self.operations.append(operation)
        self.ordering.append(pos)
        self.start_pos = min(self.start_pos, pos)
        self.end_pos = max(self.end_pos, pos + 1)
        for fuser in self.fusers:
            fuser.fuse(operation)
        for tensor in operation.nodes():
            self.ids.add(tensor.id)
        self._track_data_flow(operation)

    def _track_data_flow(self, operation: OperationIr) -> None:
        # An input counts as external only while nothing in the block produced it; producing
        # an id makes it internal. Order-independent, so merges in any order stay correct.
        for tensor in operation.inputs():
            if tensor.id not in self.produced_ids:
                self.read_ids[tensor.id] = None
            if tensor.status is TensorStatus.ReadWrite:
                self.freed_ids[tensor.id] = None
        for tensor in operation.outputs():
            self.produced_ids[tensor.id] = None
            self.read_ids.pop(tensor.id, None)

    # --- state -------------------------------------------------------------------------------

    def still_optimizing(self) -> bool:
        """At least one fuser is still open."""
        for fuser in self.fusers:
            if fuser.status() is FuserStatus.Open:
                return True
        return False

    def has_ready_optimization(self) -> bool:
        for fuser in self.fusers:
            if fuser.properties().ready:
                return True
        return False

    def operation_nodes(self) -> list[OperationNode]:
        """The ops in registration order as graph nodes."""
        pairs = zip(self.operations, self.ordering, strict=True)
        return [OperationNode(op, pos) for op, pos in pairs]

    def can_append(self, other: Block) -> bool:
        """Whether running ``other``'s ops after this block's respects every lifetime."""
        return is_valid_execution_order(self.operation_nodes() + other.operation_nodes())

    # --- merge and optimize ------------------------------------------------------------------

    def merge(self, other: Block) -> bool:
        """Append ``other``'s ops to this block; whether the merge is worth keeping.

        Kept if the merged block is still optimizing, or if it creates a ready fusion that
        neither side had. Mutates this block even when refused (callers merge a clone)."""
        if not self.can_append(other):
            return False
        self_ready = self.has_ready_optimization()
        other_ready = other.has_ready_optimization()
        self.constituents |= other.constituents
        for operation, pos in zip(other.operations, other.ordering, strict=True):
            self.register(operation, pos, True)
        if self.still_optimizing():
            return True
        return not self_ready and not other_ready and self.has_ready_optimization()

    def optimize(self, log: FusionLog = NO_LOG) -> BlockOptimization:
        """The block's best strategy: one fused optimization over a prefix of its ops, or all
        its ops unfused."""
        best = find_best_fuser_index(self.fusers)
        log_block(log, self, best)
        if best is None:
            ordering = tuple(self.ordering)
            return BlockOptimization(Operations(ordering), ordering)
        index, score = best
        opt = self.fusers[index].finish()
        ordering = tuple(self.ordering[: opt.len()])
        return BlockOptimization(Optimization(opt, ordering, score), ordering)

    def sorted_positions(self) -> list[int]:
        """The positions it covers, ascending (burn compares blocks this way)."""
        return sorted(self.ordering)

    def __repr__(self) -> str:
        return f"Block(pos=[{self.start_pos}, {self.end_pos}; {len(self.ordering)}])"
