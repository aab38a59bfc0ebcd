# cython: language_level=3
"""fastplan's planner: ``plan(stream, device)`` -> the ``Plan`` burn's fusion would execute.

burn counterpart: the path a stream takes through ``burn-fusion`` (``MultiStream::register`` /
``drain`` -> ``Processor`` -> ``StreamOptimizer``) with the fusers ``burn-cubecl``'s registry
builds for a device (``fusion/registry.rs``); notes §9. Mirrors
refimpl/planner/__init__.py: same names, same order, same results (``==`` on the ``Plan``,
byte-equal canonical JSON).

``plan`` is the same straight line of named steps as refimpl's, on fastplan's modules:

1. ``resolve_device`` — a ``DeviceProfile`` (``"metal"``, ``"webgpu-default"``, ... or one
   given) fixes ``max_bindings``;
2. ``registry.fusers(profile)`` — fastplan's five built-in fusers in ``BUILTIN_NAMES`` order
   (plus any registered custom fuser);
3. ``StreamPlanner.run(stream)`` — every item fed in order: ops registered lazily, syncs
   drain, the end of the stream drains;
4. the executed steps become the ``Plan``, with their launch plans (``aliases`` per step,
   ``width`` per block) from refimpl's ``refimpl.interpreter.launch_plan_stream``, run on
   fastplan's executed steps (launch planning has no compiled twin yet).

``Plan``, ``PlanStep``, ``PlanBlock``, ``plan_to_json`` and ``plan_from_json`` are refimpl's
(plain data and its canonical JSON).

Boundary: fastplan plans streams in the typed form ``refimpl.stream``'s loader builds (every
item an ``OperationIr`` of an ``OPS`` entry or a ``Sync``, ``TensorIr`` operands with tuple
shapes, ``DType``/``TensorStatus`` members, int axes). For anything else
(``fastplan._keys.BoundaryError``), ``plan`` hands the stream to refimpl's planner, so that the
outcome, a plan or an error, is refimpl's by construction.
"""

from fastplan.processor cimport StreamPlanner as _Planner

from fastplan.processor import StreamPlanner
from fastplan.registry import FusionRegistry

from fastplan._keys import BoundaryError

from refimpl.devices import profile_named
from refimpl.interpreter import launch_plan_stream
from refimpl.planner.log import FusionLog
from refimpl.planner.plan import Plan, PlanBlock, PlanStep, plan_from_json, plan_to_json

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

_Plan = Plan


def _reference_plan(stream, device, registry, log):
    from refimpl.planner import plan as reference

    return reference(stream, device, registry, log)


def resolve_device(device):
    """A ``DeviceProfile``: a name is looked up with ``devices.profile_named``.

    Mirrors refimpl.planner.resolve_device.
    """
    return profile_named(device) if isinstance(device, str) else device


def plan(stream, device="metal", registry=None, log=None):
    """The plan for one pass over ``stream`` on ``device`` (a profile or its name).

    Mirrors refimpl.planner.plan.

    ``registry`` defaults to a fresh ``FusionRegistry`` (the five built-in fusers); ``log``
    to what ``FUSELAB_LOG`` asks for."""
    cdef _Planner planner
    profile = resolve_device(device)
    fusers = (registry if registry is not None else FusionRegistry()).fusers(profile)
    planner = StreamPlanner(fusers, log=log if log is not None else FusionLog.from_env())
    try:
        steps = planner.run(stream)
    except BoundaryError:
        # Not the typed form the stream loader builds (a str for an op, a dtype that is no
        # DType, ...): refimpl's planner decides what such a stream gives, plan or error.
        return _reference_plan(stream, device, registry, log)
    return _Plan(profile.name, _launch_planned(stream, planner, len(planner.queue.steps)
                                               - len(steps), profile))


def _launch_planned(stream, _Planner planner, start, profile):
    """The steps ``planner`` executed from ``start`` on, launch-planned: ``aliases`` per step,
    ``width`` per block. refimpl's own launch planner runs on fastplan's executed steps (equal
    to refimpl's; the unfused ones without their context, which it does not read): launch
    planning has no compiled twin yet."""
    return launch_plan_stream(stream, planner.queue.executed_since(start, False), profile)
