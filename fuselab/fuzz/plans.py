"""The plan space of a stream: other legal plans than the one the planner picks, made by
forcing other decisions, and the planners that make them.

burn counterpart: none. Every plan here is one burn could produce on some device or
configuration, so every one must compute what the stream means:

* ``device:<preset>`` — another device profile (binding limit, vector widths);
* ``bindings:<n>`` — the device's vector widths with a binding limit of ``n``;
* ``max-ops:<n>`` — every fuser closes before its ``n + 1``-th data op (views and drops
  still flow), as a smaller ``max_ops`` would;
* ``close-after:<n>`` — every fuser closes after ``n`` accepted items of any kind, the
  block ending earlier than the fusers would end it;
* ``refuse:<fuser>`` — one built-in fuser removed from the registry;
* ``fusion-off`` — no fuser: every op runs on its own.

``Planners`` gives the executed steps of a stream under a variant, with refimpl's planner
modules or fastplan's (the compiled twins, when built). ``Limited`` wraps any fuser through
the ``OperationFuser`` protocol only, so the wrapped fusers may be compiled ones.
``Recorder`` wraps a fuser to remember why it closed, for a finding's bucket.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, replace
from typing import Any

from refimpl.devices import PRESETS, DeviceProfile, profile_named
from refimpl.ops import OpKind
from refimpl.planner.engine.fuser import FuserStatus

__all__ = ["VARIANTS", "Limited", "Planners", "Recorder", "variant_profile", "variants_for"]

BUILTINS = ("ElementWise", "Matmul", "Reduce", "ReduceBroadcasted", "NHWCRelayout")
VARIANTS = (tuple(f"device:{name}" for name in PRESETS)
            + ("bindings:3", "bindings:4", "bindings:6", "max-ops:1", "max-ops:2", "max-ops:3",
               "close-after:1", "close-after:2", "close-after:4")
            + tuple(f"refuse:{name}" for name in BUILTINS) + ("fusion-off",))


def variants_for(device: str) -> tuple[str, ...]:
    """The variants that differ from planning on ``device`` as it is."""
    return tuple(v for v in VARIANTS if v != f"device:{device}")


def _is_data_op(op: Any) -> bool:
    return op.op.kind not in (OpKind.DROP, OpKind.VIEW)


class Limited:
    """A fuser that closes once ``limit`` items (``data_only``: data ops) were accepted."""

    def __init__(self, inner: Any, limit: int, data_only: bool) -> None:
        self.inner, self.limit, self.data_only = inner, limit, data_only
        self.count, self.closed = 0, False

    @property
    def name(self) -> str:
        return self.inner.name

    def fuse(self, operation: Any) -> None:
        if self.closed:
            return
        counted = _is_data_op(operation) or not self.data_only
        if counted and self.count >= self.limit:
            self.closed = True
            return
        before = self.inner.len()
        self.inner.fuse(operation)
        if counted and self.inner.len() > before:
            self.count += 1

    def finish(self) -> Any:
        return self.inner.finish()

    def reset(self) -> None:
        self.inner.reset()
        self.count, self.closed = 0, False

    def status(self) -> FuserStatus:
        return FuserStatus.Closed if self.closed else self.inner.status()

    def properties(self) -> Any:
        return self.inner.properties()

    def len(self) -> int:
        return self.inner.len()

    def clone(self) -> Limited:
        other = Limited(self.inner.clone(), self.limit, self.data_only)
        other.count, other.closed = self.count, self.closed
        return other


class Recorder:
    """A fuser that remembers, per optimization it finishes, why it had closed."""

    def __init__(self, inner: Any, reasons: dict[int, str]) -> None:
        self.inner, self.reasons = inner, reasons

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def name(self) -> str:
        return self.inner.name

    def finish(self) -> Any:
        optimization = self.inner.finish()
        reason = getattr(self.inner, "closed_reason", None)
        self.reasons[id(optimization)] = (reason or "open").split(" ")[0]
        return optimization

    def clone(self) -> Recorder:
        return Recorder(self.inner.clone(), self.reasons)


def variant_profile(variant: str, device: str | DeviceProfile) -> DeviceProfile:
    """The device profile a variant plans for (``device``: a preset's name or a profile)."""
    profile = device if isinstance(device, DeviceProfile) else profile_named(device)
    if variant.startswith("device:"):
        return profile_named(variant.split(":", 1)[1])
    if variant.startswith("bindings:"):
        limit = int(variant.split(":", 1)[1])
        return replace(profile, name=f"{profile.name}-bindings{limit}", max_bindings=limit)
    return profile


@dataclass
class Planners:
    """The planner modules a campaign plans with: ``"ref"`` (refimpl) or ``"fast"``."""

    impl: str = "fast"

    def module(self, name: str) -> Any:
        if self.impl == "fast":
            import fastplan

            return fastplan.planner_module(name)
        return importlib.import_module(f"refimpl.planner.{name}")

    def fusers(self, variant: str, profile: DeviceProfile) -> list:
        registry = self.module("fusers.registry").FusionRegistry()
        if variant == "fusion-off":
            for name in registry.names():
                registry.remove(name)
        elif variant.startswith("refuse:"):
            registry.remove(variant.split(":", 1)[1])
        fusers = registry.fusers(profile)
        if variant.startswith(("max-ops:", "close-after:")):
            limit = int(variant.split(":", 1)[1])
            fusers = [Limited(f, limit, variant.startswith("max-ops:")) for f in fusers]
        return fusers

    def planner(self, variant: str, device: str, recorder: dict | None = None) -> tuple:
        """A fresh ``StreamPlanner`` for ``variant`` on ``device``, and its profile;
        ``recorder`` (a dict) collects close reasons by optimization id."""
        profile = variant_profile(variant, device)
        fusers = self.fusers(variant, profile)
        if recorder is not None:
            fusers = [Recorder(f, recorder) for f in fusers]
        return self.module("stream.processor").StreamPlanner(fusers), profile

    def executed(self, stream: Any, variant: str, device: str) -> tuple[DeviceProfile, tuple]:
        """Plan ``stream`` under ``variant``: the profile and the executed steps."""
        planner, profile = self.planner(variant, device)
        planner.run(stream)
        return profile, tuple(planner.queue.executed)
