"""The ``launch`` check's comparison: every launch refimpl's walk plans for a stream, planned a
second time by fastplan's launch planner on the same memory, and the first field that differs.

burn counterpart: none. Both sides port burn's ``FuseTraceLauncher::launch`` up to the kernel
(``refimpl.planner.launch.launch.plan_launch`` and its compiled twin in
``fastplan.launch.launch``); the launch plan carries what the plan JSON does not: every
binding's vector size, each block's ``FuseBlockConfig`` (reference layout, width, vector axis,
op list) and its kernel-cache key (``config_id``). refimpl's walk runs on the layout backend
(``refimpl.planner.launch.execute.LayoutBackend``: burn's decisions, no values) with its
launch planner wrapped, so that each launch is recorded with the memory it started from and
left behind, and fastplan's planner replans it on a fork of that memory.

Without the compiled twin, fastplan plays refimpl's own modules: there is no second launch
planner (``twin_planner`` gives ``None``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from refimpl.planner.launch.execute import LayoutBackend, Walk
from refimpl.planner.launch.handles import Memory
from refimpl.planner.launch.launch import LaunchError, LaunchPlan, config_id, plan_launch
from refimpl.stream import Stream

__all__ = ["LaunchCall", "Mismatch", "first_mismatch", "recorded_launches", "twin_planner"]

Planner = Callable[..., Any]
_PLURALS = ("ops", "configs", "inputs", "outputs", "aliases", "views", "sizes", "reshapes",
            "layouts", "errors", "strides")


@dataclass(frozen=True)
class LaunchCall:
    """One launch refimpl planned: the executed step it belongs to, its order in the step,
    the call's arguments, the memory before it, and refimpl's outcome (a ``LaunchPlan`` and
    the memory after it, or the ``LaunchError`` text)."""

    step: int
    order: int
    args: tuple  # (trace, context, device, matmul operands)
    before: Memory
    plan: LaunchPlan | str
    after: tuple | None


@dataclass(frozen=True)
class Mismatch:
    """The first difference between refimpl's launch and fastplan's: the symptom (a bucket
    field: what differs, without ids), the step, and where and what for people."""

    symptom: str
    step: int
    detail: str


def twin_planner() -> Planner | None:
    """fastplan's compiled ``plan_launch``, or ``None`` where fastplan plays refimpl's."""
    import fastplan

    twin = fastplan.planner_module("launch.launch").plan_launch
    return None if twin is plan_launch else twin


def _state(memory: Memory) -> tuple:
    return dict(memory.handles), dict(memory.sizes), memory.next_buffer


def recorded_launches(stream: Stream, executed: Sequence[Any], profile: Any) -> list[LaunchCall]:
    """Every launch refimpl's walk plans for ``executed`` (its fused steps, fallbacks and dry
    runs), in order; a step whose walk raises ends the record after its launches."""
    calls: list[LaunchCall] = []
    at = [0]

    def planner(trace: Any, context: Any, memory: Memory, device: Any,
                operands: tuple[int, int] | None = None) -> Any:
        before = memory.fork()
        order = sum(1 for c in calls if c.step == at[0])
        args = (trace, context, device, operands)
        try:
            launch = plan_launch(trace, context, memory, device, operands)
        except LaunchError as exc:
            calls.append(LaunchCall(at[0], order, args, before, f"LaunchError: {exc}", None))
            raise
        calls.append(LaunchCall(at[0], order, args, before, launch.plan, _state(memory)))
        return launch

    walk = Walk(stream, LayoutBackend(stream), profile, planner)
    for index, item in enumerate(executed):
        at[0] = index
        try:
            walk.execute(item)
        except Exception:  # noqa: BLE001 - the plan check reports refimpl raising
            break
    return calls


def _replanned(call: LaunchCall, twin: Planner) -> tuple[LaunchPlan | str, tuple | None]:
    trace, context, device, operands = call.args
    memory = call.before.fork()
    try:
        launch = twin(trace, context, memory, device, operands)
    except LaunchError as exc:
        return f"LaunchError: {exc}", None
    return launch.plan, _state(memory)


def _differs(what: str, where: str, ref: Any, fast: Any) -> tuple[str, str]:
    """(symptom, detail) of a field ``what`` at ``where`` that differs."""
    verb = "differ" if what.split()[-1] in _PLURALS else "differs"
    return f"{what} {verb}", f"{where}{what} refimpl {ref!r}, fastplan {fast!r}"


def _fields(role: str, ref: tuple, fast: tuple, named: str) -> tuple[str, str] | None:
    """The first differing binding of ``ref`` and ``fast`` (``LaunchInput``s or
    ``LaunchOutput``s): (symptom, where and the two values)."""
    if len(ref) != len(fast):
        return f"{role} bindings differ", f"{len(ref)} {role} bindings, fastplan {len(fast)}"
    for pos, (a, b) in enumerate(zip(ref, fast)):
        if a == b:
            continue
        for name in (named, *a.__slots__):
            if getattr(a, name) != getattr(b, name):
                found = _differs(name.replace("_", " "), f"{role} binding {pos} (tensor "
                                 f"{a.tensor}): ", getattr(a, name), getattr(b, name))
                return f"{role} {found[0]}", found[1]
    return None


def _configs(ref: LaunchPlan, fast: LaunchPlan, fast_id: Callable) -> tuple[str, str] | None:
    if len(ref.configs) != len(fast.configs):
        return "blocks differ", f"{len(ref.configs)} blocks, fastplan {len(fast.configs)}"
    for k, (a, b) in enumerate(zip(ref.configs, fast.configs)):
        for name, what in (("width", "block width"), ("ref_layout", "reference layout"),
                           ("vector_axis", "vector axis"), ("rank", "block rank"),
                           ("ops", "block ops")):
            if getattr(a, name) != getattr(b, name):
                return _differs(what, f"block {k}: ", getattr(a, name), getattr(b, name))
        if config_id(a) != fast_id(b):
            return _differs("config id", f"block {k}: ", config_id(a), fast_id(b))
    return None


def _plans(ref: LaunchPlan, fast: LaunchPlan, fast_id: Callable) -> tuple[str, str] | None:
    """What differs first between two launch plans of one launch: the bindings' vector sizes
    (what the vectorization passes decide), then the blocks' configs, then the rest."""
    found = (_fields("input", ref.inputs, fast.inputs, "vector_size")
             or _fields("output", ref.outputs, fast.outputs, "vector_size")
             or _configs(ref, fast, fast_id))
    if found is not None:
        return found
    for name in LaunchPlan.__slots__:
        if getattr(ref, name) != getattr(fast, name):
            return _differs(name.replace("_", " "), "", getattr(ref, name), getattr(fast, name))
    return None


def _mismatch(call: LaunchCall, twin: Planner, fast_id: Callable) -> tuple[str, str] | None:
    plan, after = _replanned(call, twin)
    ref = call.plan
    if isinstance(ref, str) or isinstance(plan, str):
        if ref == plan:
            return None
        if isinstance(ref, str) and isinstance(plan, str):
            return _differs("errors", "", ref, plan)
        raised = "refimpl" if isinstance(ref, str) else "fastplan"
        detail = (f"refimpl {ref if isinstance(ref, str) else 'planned'}, fastplan "
                  f"{plan if isinstance(plan, str) else 'planned'}")
        return f"{raised} raised LaunchError", detail
    found = _plans(ref, plan, fast_id)
    if found is None and after != call.after:
        names = ("handles", "buffer sizes", "next buffer")
        what = next(n for n, a, b in zip(names, call.after, after) if a != b)
        return "memory differs", f"the memory after the launch: {what} differ"
    return found


def first_mismatch(stream: Stream, executed: Sequence[Any], profile: Any,
                   twin: Planner) -> Mismatch | None:
    """The first launch of refimpl's walk over ``executed`` that fastplan's planner ``twin``
    plans otherwise (``None``: every launch agrees)."""
    import fastplan

    fast_id = fastplan.planner_module("launch.launch").config_id
    for call in recorded_launches(stream, executed, profile):
        found = _mismatch(call, twin, fast_id)
        if found is not None:
            step = executed[call.step].step
            symptom, detail = found
            return Mismatch(symptom, call.step, f"step {call.step} ({step.fuser}, ops "
                            f"{list(step.ops)}), launch {call.order}: {detail}")
    return None
