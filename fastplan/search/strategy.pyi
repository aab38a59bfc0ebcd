"""Type stubs for the compiled fastplan.search.strategy module (twin of
refimpl.planner.search.strategy)."""

from collections.abc import Sequence

from refimpl.planner.search.strategy import (
    BlockOptimization as BlockOptimization,
    Composed as Composed,
    ExecutionStrategy as ExecutionStrategy,
    Operations as Operations,
    Optimization as Optimization,
)

def leaves(strategy: ExecutionStrategy) -> list[ExecutionStrategy]: ...
def strategy_len(strategy: ExecutionStrategy) -> int: ...
def map_ordering(strategy: ExecutionStrategy, mapping: Sequence[int]) -> ExecutionStrategy: ...
def map_block_ordering(block_opt: BlockOptimization,
                       mapping: Sequence[int]) -> BlockOptimization: ...
def include_trailing(block_opt: BlockOptimization,
                     num_operations: int) -> BlockOptimization: ...
def max_relative_shape_id(strategy: ExecutionStrategy) -> int | None: ...
