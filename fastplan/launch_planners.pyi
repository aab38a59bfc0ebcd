"""Type stubs for the compiled fastplan.launch_planners module (twin of
refimpl.planner.launch_planners)."""

from refimpl.planner.fuse_ir import FuseOp
from refimpl.planner.launch_planners import (
    BlockPlan as BlockPlan,
    PlanningState as PlanningState,
    ReferenceSelection as ReferenceSelection,
)

def plan_inputs(state: PlanningState) -> None: ...
def may_permute_layout(settings: object, ops: tuple[FuseOp, ...]) -> bool: ...
def plan_outputs(state: PlanningState) -> None: ...
