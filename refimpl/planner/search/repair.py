"""The last pass of the search: put the strategy chunks into an order that respects every
tensor lifetime, or fall back to running the segment unfused in stream order.

burn counterpart: ``repair_order``, ``repair_order_split``, ``assemble``,
``unfused_stream_order``, ``ordering_is_valid`` and ``Chunk`` in
``crates/burn-fusion/src/search/optimization/stream.rs`` (notes §9.3 step 4).

Each top-level strategy of a ``Composed`` result is an atomic chunk (a graph node covering
its positions). Chunks are sorted topologically (ties by smallest position). On a cycle, every
unfused chunk is split into one chunk per op (fused chunks stay whole) and the sort retried; if
that still fails, or the final op order breaks a lifetime, everything runs unfused in stream
order — always valid.
"""

from __future__ import annotations

from typing import Sequence

from refimpl.ir import OperationIr, TensorStatus
from refimpl.planner.search.block import OperationNode
from refimpl.planner.search.graph import Dag, is_valid_execution_order
from refimpl.planner.search.strategy import (
    BlockOptimization,
    Composed,
    ExecutionStrategy,
    Operations,
    strategy_len,
)

__all__ = ["Chunk", "repair_order", "ordering_is_valid", "unfused_stream_order"]


class Chunk:
    """One top-level strategy seen as a single graph node over its positions."""

    __slots__ = ("positions", "produced_ids", "read_ids", "freed_ids")

    def __init__(self, positions: Sequence[int], operations: Sequence[OperationIr]):
        self.positions = tuple(positions)
        self.produced_ids: dict[int, None] = {}
        self.read_ids: dict[int, None] = {}
        self.freed_ids: dict[int, None] = {}
        for pos in self.positions:
            for tensor in operations[pos].outputs():
                self.produced_ids[tensor.id] = None
        for pos in self.positions:
            for tensor in operations[pos].inputs():
                # A ReadWrite read frees the tensor even if this chunk produced it: readers in
                # other chunks must still run first.
                if tensor.status is TensorStatus.ReadWrite:
                    self.freed_ids[tensor.id] = None
                if tensor.id not in self.produced_ids:
                    self.read_ids[tensor.id] = None

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
        return min(self.positions) if self.positions else 0


def ordering_is_valid(ordering: Sequence[int], operations: Sequence[OperationIr]) -> bool:
    """Whether running the ops at ``ordering`` in that order keeps every input live."""
    return is_valid_execution_order([OperationNode(operations[p], p) for p in ordering])


def unfused_stream_order(positions: Sequence[int]) -> BlockOptimization:
    """Every op unfused in ascending position: the always-valid last resort."""
    ordering = tuple(sorted(positions))
    return BlockOptimization(Operations(ordering), ordering)


def repair_order(opt: BlockOptimization, operations: Sequence[OperationIr]) -> BlockOptimization:
    """``opt`` with its top-level chunks in a lifetime-respecting order."""
    if not isinstance(opt.strategy, Composed):
        if ordering_is_valid(opt.ordering, operations):
            return opt
        return unfused_stream_order(opt.ordering)
    strategies = list(opt.strategy.items)
    chunks: list[Chunk] = []
    offset = 0
    for strategy in strategies:
        size = strategy_len(strategy)
        chunks.append(Chunk(opt.ordering[offset : offset + size], operations))
        offset += size
    order = Dag(chunks).topological_order()
    if order is None:
        return _repair_order_split(strategies, chunks, operations)
    return _assemble(strategies, chunks, order, operations)


def _repair_order_split(
    strategies: list[ExecutionStrategy], chunks: list[Chunk], operations: Sequence[OperationIr]
) -> BlockOptimization:
    """Retry with every unfused chunk split per op; fused chunks stay atomic."""
    split_strategies: list[ExecutionStrategy] = []
    split_chunks: list[Chunk] = []
    for strategy, chunk in zip(strategies, chunks, strict=True):
        if isinstance(strategy, Operations):
            for pos in chunk.positions:
                split_strategies.append(Operations((pos,)))
                split_chunks.append(Chunk((pos,), operations))
        else:
            split_strategies.append(strategy)
            split_chunks.append(chunk)
    order = Dag(split_chunks).topological_order()
    if order is None:
        return unfused_stream_order([p for chunk in split_chunks for p in chunk.positions])
    return _assemble(split_strategies, split_chunks, order, operations)


def _assemble(
    strategies: list[ExecutionStrategy],
    chunks: list[Chunk],
    order: list[int],
    operations: Sequence[OperationIr],
) -> BlockOptimization:
    """The strategies in chunk order; unfused stream order if the result is still invalid."""
    ordering: list[int] = []
    for index in order:
        ordering.extend(chunks[index].positions)
    if not ordering_is_valid(ordering, operations):
        return unfused_stream_order(ordering)
    return BlockOptimization(Composed(tuple(strategies[i] for i in order)), tuple(ordering))
