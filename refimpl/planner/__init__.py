"""refimpl's planner: ``plan(stream, device)`` → the ``Plan`` burn's fusion would execute.

burn counterpart: the path a stream takes through ``burn-fusion`` (``MultiStream::register`` /
``drain`` → ``Processor`` → ``StreamOptimizer``) with the fusers ``burn-cubecl``'s registry
builds for a device (``fusion/registry.rs``); notes §9.

``plan`` is a straight line of named steps:

1. ``resolve_device`` — a ``DeviceProfile`` (``"metal"``, ``"webgpu-default"``, ... or one
   given) fixes ``max_bindings``;
2. ``registry.fusers(profile)`` — the five built-in fusers in ``BUILTIN_NAMES`` order (plus
   any registered custom fuser);
3. ``StreamPlanner.run(stream)`` — every item fed in order: ops registered lazily, syncs
   drain, the end of the stream drains;
4. the executed steps become the ``Plan``, with their launch plans (``aliases`` per step,
   ``width`` per block) from the walk's layout backend
   (``refimpl.planner.launch.execute.launch_plan_stream``).

``executed_steps`` stops after step 3: the executed steps with their contexts, which every
backend of the walk runs (the interpreter, the GPU).

Importing the package loads nothing of the planner: every ``import refimpl.planner.x``
(fastplan's compiled twins import refimpl's plain-data modules) runs this file first, and
loading the whole planner here would make each such import pay for all of it. The names in
``__all__`` other than ``plan`` are loaded when first asked for (``__getattr__``); ``plan``
and ``executed_steps`` import the planner when called.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from refimpl.devices import resolve_device

if TYPE_CHECKING:
    from refimpl.planner.log import FusionLog
    from refimpl.planner.stream.plan import Plan, PlanBlock, PlanStep, plan_from_json, plan_to_json
    from refimpl.planner.stream.processor import StreamPlanner
    from refimpl.stream import Stream

__all__ = [
    "plan",
    "resolve_device",
    "Plan",
    "PlanStep",
    "PlanBlock",
    "plan_to_json",
    "plan_from_json",
    "StreamPlanner",
]

# the names of __all__ loaded on first use, and the module each is defined in
_LAZY = {"Plan": "refimpl.planner.stream.plan", "PlanStep": "refimpl.planner.stream.plan",
         "PlanBlock": "refimpl.planner.stream.plan", "plan_to_json": "refimpl.planner.stream.plan",
         "plan_from_json": "refimpl.planner.stream.plan",
         "StreamPlanner": "refimpl.planner.stream.processor"}


def __getattr__(name: str) -> Any:
    """A name of ``_LAZY``, imported from its module on first use (then kept here)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def plan(stream: Stream, device: Any = "metal", registry: Any = None,
         log: FusionLog | None = None) -> Plan:
    """The plan for one pass over ``stream`` on ``device`` (a profile or its name).

    ``registry`` defaults to a fresh ``FusionRegistry`` (the five built-in fusers); ``log``
    to what ``FUSELAB_LOG`` asks for."""
    from refimpl.planner.fusers.registry import FusionRegistry
    from refimpl.planner.log import FusionLog
    from refimpl.planner.stream.plan import Plan
    from refimpl.planner.stream.processor import StreamPlanner

    profile = resolve_device(device)
    fusers = (registry if registry is not None else FusionRegistry()).fusers(profile)
    planner = StreamPlanner(fusers, log=log if log is not None else FusionLog.from_env())
    steps = planner.run(stream)
    # launch planning (refimpl.planner.launch.launch): aliases per step, width per block
    return Plan(profile.name,
                planner.launch_planned(stream, len(planner.queue.steps) - len(steps), profile))


def executed_steps(stream: Stream, device: Any = "metal") -> tuple[Any, tuple]:
    """Plan ``stream``: the device profile and the executed steps with their contexts."""
    from refimpl.planner.fusers.registry import FusionRegistry
    from refimpl.planner.stream.processor import StreamPlanner

    profile = resolve_device(device)
    planner = StreamPlanner(FusionRegistry().fusers(profile))
    planner.run(stream)
    return profile, tuple(planner.queue.executed)
