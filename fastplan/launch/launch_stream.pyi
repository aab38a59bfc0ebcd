"""Type stubs for the compiled fastplan.launch.launch_stream module (launch planning of a
stream)."""

from collections.abc import Sequence

from refimpl.planner.stream.plan import PlanStep
from refimpl.planner.stream.queue import ExecutedStep
from refimpl.stream import Stream

MEMO_CAPACITY: int
LAYOUT_CAPACITY: int

class LaunchMemo:
    hits: int
    misses: int
    keep_steps: bool
    def __init__(self) -> None: ...
    def __len__(self) -> int: ...

def launch_plan_stream(stream: Stream, executed: Sequence[ExecutedStep], device: object,
                       memo: LaunchMemo | None = None) -> tuple[PlanStep, ...]: ...

def launch_records(stream: Stream, records: list[object], device: object,
                   memo: LaunchMemo | None = None) -> tuple[PlanStep, ...]: ...

def _walked_memory(stream: Stream, executed: Sequence[ExecutedStep], device: object,
                   memo: LaunchMemo | None = None) -> tuple[tuple[PlanStep, ...], object]: ...
