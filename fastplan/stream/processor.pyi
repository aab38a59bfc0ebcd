"""Type stubs for the compiled fastplan.stream.processor module (twin of
refimpl.planner.stream.processor)."""

from collections.abc import Sequence

from fastplan.search.search import StreamOptimizer
from fastplan.stream.cache import ExecutionPlanStore, Policy
from fastplan.stream.queue import OperationQueue
from refimpl.ir import OperationIr
from refimpl.planner.engine.fuser import OperationFuser
from refimpl.planner.log import FusionLog
from refimpl.planner.stream.cache import ExecutionMode
from refimpl.planner.stream.plan import PlanStep
from refimpl.planner.stream.processor import (
    Exploration as Exploration,
    StreamSegment as StreamSegment,
)
from refimpl.stream import Stream

class Explorer:
    optimizer: StreamOptimizer
    num_deferred: int
    num_explored: int
    is_still_optimizing: bool
    num_explorations: int
    max_explorations: int | None
    log: FusionLog
    def __init__(self, fusers: Sequence[OperationFuser], max_blocks: int | None = 5,
                 max_explorations: int | None = None, log: FusionLog = ...) -> None: ...
    def on_new_operation(self) -> None: ...
    def is_up_to_date(self) -> bool: ...
    def reset(self, operations: Sequence[OperationIr]) -> None: ...
    def explore(self, operations: Sequence[OperationIr], mode: ExecutionMode) -> Exploration: ...
    def _update(self, operations: Sequence[OperationIr]) -> None: ...

class Processor:
    policy: Policy
    explorer: Explorer
    num_cache_hits: int
    log: FusionLog
    def __init__(self, fusers: Sequence[OperationFuser], max_blocks: int | None = 5,
                 max_explorations: int | None = None, log: FusionLog = ...) -> None: ...
    @property
    def num_explorations(self) -> int: ...
    def process(self, segment: StreamSegment, store: ExecutionPlanStore,
                mode: ExecutionMode) -> None: ...

class StreamPlanner:
    store: ExecutionPlanStore
    processor: Processor
    queue: OperationQueue
    def __init__(self, fusers: Sequence[OperationFuser], *, max_blocks: int | None = 5,
                 max_explorations: int | None = None, log: FusionLog = ...) -> None: ...
    @property
    def num_explorations(self) -> int: ...
    @property
    def num_cache_hits(self) -> int: ...
    def register(self, index: int, operation: OperationIr) -> None: ...
    def sync(self, tensors: Sequence[int] = ()) -> None: ...
    def drain(self) -> None: ...
    def forget_steps(self) -> None: ...
    def run(self, stream: Stream) -> list[PlanStep]: ...
    def launch_planned(self, stream: Stream, start: int = ..., device: object = ...,
                       memo: object = ...) -> tuple[PlanStep, ...]: ...
