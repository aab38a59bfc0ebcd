"""Type stubs for the compiled fastplan.launch.execute module (the launch walk of a stream)."""

from collections.abc import Sequence

from fastplan.launch.launch_memo import LaunchMemo
from refimpl.planner.stream.plan import PlanStep
from refimpl.planner.stream.queue import ExecutedStep
from refimpl.stream import Stream

FUSERS: dict[str, int]

def launch_records(stream: Stream, records: list[object], device: object,
                   memo: LaunchMemo | None = None) -> tuple[PlanStep, ...]: ...

def _walked_memory(stream: Stream, executed: Sequence[ExecutedStep], device: object,
                   memo: LaunchMemo | None = None) -> tuple[tuple[PlanStep, ...], object]: ...

def launch_plan_stream(stream: Stream, executed: Sequence[ExecutedStep], device: object,
                       memo: LaunchMemo | None = None) -> tuple[PlanStep, ...]: ...
