# cython: language_level=3
"""fastplan's planner: ``plan(stream, device)`` -> the ``Plan`` burn's fusion would execute.

burn counterpart: the path a stream takes through ``burn-fusion`` (``MultiStream::register`` /
``drain`` -> ``Processor`` -> ``StreamOptimizer``) with the fusers ``burn-cubecl``'s registry
builds for a device (``fusion/registry.rs``); notes §9. Mirrors
``refimpl/planner/__init__.py``: same names, same order, same results (``==`` on the ``Plan``,
byte-equal canonical JSON).

``plan`` is the same straight line of named steps as refimpl's, on fastplan's modules:

1. ``resolve_device`` — a ``DeviceProfile`` (``"metal"``, ``"webgpu-default"``, ... or one
   given) fixes ``max_bindings``;
2. ``registry.fusers(profile)`` — fastplan's five built-in fusers in ``BUILTIN_NAMES`` order
   (plus any registered custom fuser);
3. ``StreamPlanner.run(stream)`` — every item fed in order: ops registered lazily, syncs
   drain, the end of the stream drains;
4. the executed steps become the ``Plan``, with their launch plans (``aliases`` per step,
   ``width`` per block) from ``fastplan.launch.execute.launch_plan_stream`` (the compiled
   launch planning of ``refimpl.planner.launch.execute.launch_plan_stream``, with a memo for
   this walk alone: an execution met again on the same layouts is replayed; single fused
   steps are not memoised here, ``fastplan.launch.launch_memo``'s "One walk's memo").

``Plan``, ``PlanStep``, ``PlanBlock``, ``plan_to_json`` and ``plan_from_json`` are refimpl's
(plain data and its canonical JSON).

Boundary: fastplan plans streams in the typed form ``refimpl.stream``'s loader builds (every
item an ``OperationIr`` of an ``OPS`` entry or a ``Sync``, ``TensorIr`` operands with tuple
shapes, ``DType``/``TensorStatus`` members, int axes). For anything else
(``fastplan._keys.BoundaryError``), ``plan`` hands the stream to refimpl's planner, so that the
outcome, a plan or an error, is refimpl's by construction.
"""


import gc as _gc

from fastplan.stream.processor cimport StreamPlanner as _Planner

from fastplan.fusers.registry import FusionRegistry
from fastplan.stream.processor import StreamPlanner

from fastplan._keys import BoundaryError

from refimpl.devices import profile_named
from fastplan.launch.execute import launch_records
from fastplan.launch.launch_memo import LaunchMemo
from refimpl.planner.log import FusionLog
from refimpl.planner.stream.plan import Plan, PlanBlock, PlanStep, plan_from_json, plan_to_json

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
    to what ``FUSELAB_LOG`` asks for.

    The cyclic collector stays paused for the whole call, not only inside the search and the
    launch walk (which pause it themselves): the planner makes no reference cycles and is
    dropped before the call returns, so a collection in between would only walk its live
    objects and find nothing (docs/fastplan.md, "Garbage collection"). refimpl's planner, for
    a stream outside fastplan's boundary, runs after the pause."""
    paused = _gc.isenabled()
    _gc.disable()
    try:
        return _plan(stream, device, registry, log)
    except BoundaryError:
        # Not the typed form the stream loader builds (a str for an op, a dtype that is no
        # DType, ...): refimpl's planner decides what such a stream gives, plan or error.
        pass
    finally:
        if paused:
            _gc.enable()
    return _reference_plan(stream, device, registry, log)


cdef object _plan(object stream, object device, object registry, object log):
    """``plan``, the collector paused by the caller; the planner dies on return. A stream
    outside the boundary raises ``BoundaryError`` from the search."""
    cdef _Planner planner
    profile = resolve_device(device)
    fusers = (registry if registry is not None else FusionRegistry()).fusers(profile)
    planner = StreamPlanner(fusers, log=log if log is not None else FusionLog.from_env())
    steps = planner.run(stream)
    return _Plan(profile.name, _launch_planned(stream, planner, len(planner.queue.steps)
                                               - len(steps), profile))


def _launch_planned(stream, _Planner planner, start, profile, memo=None):
    """The steps ``planner`` executed from ``start`` on, launch-planned: ``aliases`` per step,
    ``width`` per block (the unfused steps carry no context: launch planning reads none).
    ``memo``: a ``LaunchMemo`` a runtime keeps with its planner (by default one for this
    walk alone, keeping whole executions only: ``_one_walk_memo``).
    A negative ``start`` is the caller's error (``ValueError``), not refimpl's to plan."""
    records = planner.queue.records_since(start)
    if memo is None:  # this walk's own: whole executions only
        memo = _one_walk_memo()
    try:
        return launch_records(stream, records, profile, memo)
    except Exception:
        # A stream no loader would build (a dim past int64, ...) can make the compiled walk
        # fail where refimpl's fails differently: refimpl decides what it gives, as for the
        # search (see ``plan``).
        return _reference_launch(stream, planner.queue.executed_since(start, False), profile)


cdef object _one_walk_memo():
    """A ``LaunchMemo`` for one walk (``plan``'s, dropped on return): whole executions are
    stored and replayed, single fused steps are not (``keep_steps`` false: within one walk
    the step memo serves next to nothing, see ``fastplan.launch.launch_memo``, "One walk's
    memo"). A runtime passes its own memo, kept across iterations, which keeps both."""
    memo = LaunchMemo()
    memo.keep_steps = False
    return memo


def _reference_launch(stream, executed, profile):
    from refimpl.interpreter import launch_plan_stream as reference

    return reference(stream, executed, profile)
