"""Type stubs for the compiled fastplan.launch.launch_vectorize module (twin of
refimpl.planner.launch.launch_vectorize)."""

from fastplan.launch.launch_planners import PlanningState

def plan_vectorization(state: PlanningState, device: object,
                       matmul_operands: tuple[int, int] | None) -> None: ...
