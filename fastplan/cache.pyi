"""Type stubs for the compiled fastplan.cache module (twin of refimpl.planner.cache)."""

from collections.abc import Sequence

from refimpl.ir import OperationIr
from refimpl.planner.cache import (
    Action as Action,
    Always as Always,
    Defer as Defer,
    Execute as Execute,
    ExecutionMode as ExecutionMode,
    ExecutionPlan as ExecutionPlan,
    ExecutionTrigger as ExecutionTrigger,
    Explore as Explore,
    OnOperations as OnOperations,
    OnSync as OnSync,
)

class ExecutionPlanStore:
    plans: list[ExecutionPlan]
    def __init__(self) -> None: ...
    def __len__(self) -> int: ...
    def find(self, first: OperationIr) -> list[int]: ...
    def add(self, plan: ExecutionPlan) -> int: ...
    def get(self, plan_id: int) -> ExecutionPlan: ...
    def add_trigger(self, plan_id: int, trigger: ExecutionTrigger) -> None: ...

class Policy:
    candidates: list[object]
    availables: list[object]
    num_operations: int
    @property
    def found(self) -> tuple[int, int] | None: ...
    def __init__(self) -> None: ...
    def reset(self) -> None: ...
    def action(self, store: ExecutionPlanStore, operations: Sequence[OperationIr],
               mode: ExecutionMode) -> Action: ...
    def update(self, store: ExecutionPlanStore, operation: OperationIr) -> None: ...
