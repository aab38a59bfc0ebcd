"""Type stubs for the compiled fastplan.launch.launch_planners module (twin of
refimpl.planner.launch.launch_planners)."""

from refimpl.ir import TensorIr
from refimpl.planner.engine.fuse_ir import FuseOp
from refimpl.planner.engine.trace import FuseArg, FuseType
from refimpl.planner.launch.handles import Handle

class HandleInput:
    relative: TensorIr
    glob: TensorIr
    precision: FuseType
    handle: Handle
    strides: tuple[int, ...]
    vector_size: int
    broadcasted: bool
    def __init__(self, relative: TensorIr, glob: TensorIr, precision: FuseType, handle: Handle,
                 strides: tuple[int, ...], vector_size: int = 1,
                 broadcasted: bool = False) -> None: ...

class HandleOutput:
    relative: TensorIr
    glob: TensorIr
    precision: FuseType
    handle: Handle
    kind: str
    input_pos: int | None
    vectorization: int
    def __init__(self, relative: TensorIr, glob: TensorIr, precision: FuseType, handle: Handle,
                 kind: str, input_pos: int | None = None, vectorization: int = 1) -> None: ...

class ReferenceSelection:
    kind: str
    arg: FuseArg | None
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dims: tuple[int, int]
    pos: int
    def __init__(self, kind: str = "Searching", arg: FuseArg | None = None,
                 shape: tuple[int, ...] = (), strides: tuple[int, ...] = (),
                 dims: tuple[int, int] = (0, 0), pos: int = 0) -> None: ...
    def found(self) -> bool: ...
    def concrete(self) -> tuple[tuple[int, ...], tuple[int, ...]] | None: ...

class BlockPlan:
    reads: dict[int, list[FuseOp]]
    writes: dict[int, list[FuseOp]]
    reference: ReferenceSelection
    width: int
    inplaces: list[tuple[int, TensorIr, tuple[int, ...]]]
    potential_ref: tuple | None
    def __init__(self, reads: dict[int, list[FuseOp]], writes: dict[int, list[FuseOp]],
                 reference: ReferenceSelection | None = None, width: int = 0,
                 inplaces: list[tuple[int, TensorIr, tuple[int, ...]]] | None = None,
                 potential_ref: tuple | None = None) -> None: ...

class PlanningState:
    trace: object
    context: object
    memory: object
    rank: int
    blocks: list[BlockPlan]
    inputs: list[HandleInput]
    outputs: list[HandleOutput | None]
    runtime_layouts: list[tuple[tuple[int, ...], tuple[int, ...]]]
    vectorizations: dict
    def __init__(self, trace: object, context: object, memory: object, rank: int,
                 blocks: list[BlockPlan], inputs: list[HandleInput] | None = None,
                 outputs: list[HandleOutput | None] | None = None,
                 runtime_layouts: list[tuple[tuple[int, ...], tuple[int, ...]]] | None = None,
                 vectorizations: dict | None = None) -> None: ...

def plan_inputs(state: PlanningState) -> None: ...
def may_permute_layout(settings: object, ops: tuple[FuseOp, ...]) -> bool: ...
def plan_outputs(state: PlanningState) -> None: ...
