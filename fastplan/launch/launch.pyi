"""Type stubs for the compiled fastplan.launch.launch module (twin of
refimpl.planner.launch.launch)."""

from collections.abc import Mapping

from refimpl.ir import OperationIr, Scalar
from refimpl.planner.engine.trace import FuseTrace
from refimpl.planner.launch.handles import Memory
from refimpl.planner.launch.launch import (
    ConcreteLayout as ConcreteLayout,
    FuseBlockConfig as FuseBlockConfig,
    FusedContext as FusedContext,
    Launch as Launch,
    LaunchError as LaunchError,
    LaunchInput as LaunchInput,
    LaunchOutput as LaunchOutput,
    LaunchPlan as LaunchPlan,
    RefLayout as RefLayout,
    ReshapedLayout as ReshapedLayout,
    RuntimeLayout as RuntimeLayout,
    ShapeLayout as ShapeLayout,
    SwapDimsLayout as SwapDimsLayout,
)

def config_id(config: FuseBlockConfig) -> str: ...
def context_of(segment: tuple[OperationIr, ...], global2relative: Mapping[int, int],
               shapes: Mapping[int, int], scalars: tuple[Scalar, ...]) -> FusedContext: ...
def plan_launch(trace: FuseTrace, context: FusedContext, memory: Memory, device: object,
                matmul_operands: tuple[int, int] | None = None) -> Launch: ...
