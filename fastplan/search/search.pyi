"""Type stubs for the compiled fastplan.search.search module (twin of
refimpl.planner.search.search)."""

from collections.abc import Sequence

from fastplan.search.block import Block
from refimpl.ir import OperationIr
from refimpl.planner.engine.fuser import OperationFuser
from refimpl.planner.log import FusionLog
from refimpl.planner.search.search import BlocksOptimizerResult as BlocksOptimizerResult
from refimpl.planner.search.strategy import BlockOptimization

MAX_BLOCKS: int

class BlocksOptimizer:
    blocks: list[Block]
    num_ops: int
    log: FusionLog
    def __init__(self, blocks: list[Block], log: FusionLog = ...) -> None: ...
    def optimize(self) -> BlocksOptimizerResult: ...
    def _merging_pass(self) -> None: ...

class StreamOptimizer:
    fusers: list[OperationFuser]
    blocks: list[Block]
    length: int
    stopped: bool
    max_blocks: int | None
    log: FusionLog
    def __init__(self, fusers: Sequence[OperationFuser], max_blocks: int | None = 5,
                 log: FusionLog = ...) -> None: ...
    def register(self, operation: OperationIr) -> None: ...
    def still_optimizing(self) -> bool: ...
    def reset(self) -> None: ...
    def _on_dependent_op(self, operation: OperationIr) -> None: ...
    def new_empty_search(self) -> StreamOptimizer: ...
    def _first_pass(self) -> BlocksOptimizerResult: ...
    def optimize(self, operations: Sequence[OperationIr]) -> BlockOptimization: ...
