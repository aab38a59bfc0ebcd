"""Type stubs for the compiled fastplan.stream.incremental module (twin of
refimpl.planner.stream.incremental)."""

from typing import Any

from refimpl.planner.log import FusionLog
from refimpl.planner.stream.plan import PlanStep

class IncrementalPlanner:
    profile: Any
    planner: Any
    index: int
    def __init__(self, device: Any = "metal", registry: Any = None,
                 log: FusionLog | None = None) -> None: ...
    @property
    def num_explorations(self) -> int: ...
    @property
    def num_cache_hits(self) -> int: ...
    def add(self, item: Any) -> tuple[PlanStep, ...]: ...
    def flush(self) -> tuple[PlanStep, ...]: ...
    def end_iteration(self) -> tuple[PlanStep, ...]: ...
