"""Type stubs for the compiled fastplan.planner module (twin of refimpl/planner/__init__.py)."""

from typing import Any

from fastplan.stream.processor import StreamPlanner as StreamPlanner
from refimpl.planner.log import FusionLog
from refimpl.planner.stream.plan import (
    Plan as Plan,
    PlanBlock as PlanBlock,
    PlanStep as PlanStep,
    plan_from_json as plan_from_json,
    plan_to_json as plan_to_json,
)
from refimpl.stream import Stream

def resolve_device(device: Any) -> Any: ...
def plan(stream: Stream, device: Any = "metal", registry: Any = None,
         log: FusionLog | None = None) -> Plan: ...
