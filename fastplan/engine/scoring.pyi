"""Type stubs for the compiled fastplan.engine.scoring module (twin of
refimpl.planner.engine.scoring)."""

from refimpl.ir import OperationIr
from refimpl.planner.engine.trace import FuseTrace

FACTOR_IO: int
FACTOR_LAUNCH: int
FACTOR_PENALTY: int

class Scoring:
    num_reads: int
    num_writes: int
    num_ops: int
    def __init__(self, num_reads: int = 0, num_writes: int = 0, num_ops: int = 0) -> None: ...
    def clone(self) -> Scoring: ...
    def reset(self) -> None: ...
    def register(self, op: OperationIr) -> None: ...
    def evaluate(self, trace: FuseTrace) -> int: ...
    def calculate_score(self, reads_fused: int, writes_fused: int, num_penalty: int) -> int: ...
