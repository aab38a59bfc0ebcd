"""Type stubs for the compiled fastplan.launch_vectorize module (twin of
refimpl.planner.launch_vectorize)."""

from fastplan.launch_planners import PlanningState

def plan_vectorization(state: PlanningState, device: object,
                       matmul_operands: tuple[int, int] | None) -> None: ...
