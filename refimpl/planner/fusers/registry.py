"""Which fusers compete for each block: the five built-ins plus any registered ones.

burn counterpart: ``crates/burn-cubecl/src/fusion/registry.rs`` (``BUILTIN_NAMES``,
``register``, ``remove``, ``fusers``, ``RegistryError``); notes §8.5.

A ``FusionRegistry`` starts with the built-in factories in ``BUILTIN_NAMES`` order (also the
tie-break order of the search). ``register`` appends, ``remove`` deletes by name (an unknown name
is not an error); both fail with ``ServiceRunning`` once the registry is sealed, which
``fusers`` does, since streams only exist once the fusion service runs. A built-in's name stays
reserved until it is removed.
"""

from __future__ import annotations

from collections.abc import Callable

from refimpl.devices import DeviceProfile
from refimpl.errors import DuplicateOptimization, ServiceRunning
from refimpl.planner.engine.fuser import OperationFuser
from refimpl.planner.fusers.elemwise import ElementWiseFuser
from refimpl.planner.fusers.matmul import MatmulFuser
from refimpl.planner.fusers.nhwc import NHWCRelayoutFuser
from refimpl.planner.fusers.reduce import ReduceFuser
from refimpl.planner.fusers.reduce_broadcasted import ReduceBroadcastedFuser

__all__ = ["BUILTIN_NAMES", "FuserFactory", "FusionRegistry", "SERVICE_RUNNING_MESSAGE"]

BUILTIN_NAMES = ("ElementWise", "Matmul", "Reduce", "ReduceBroadcasted", "NHWCRelayout")

SERVICE_RUNNING_MESSAGE = (
    "the fusion service is already running; register or remove fusion optimizations at the "
    "start of your program, before the first tensor operation"
)

FuserFactory = Callable[[DeviceProfile], OperationFuser]


def _elementwise(device: DeviceProfile) -> OperationFuser:
    return ElementWiseFuser(device.max_bindings)


def _matmul(device: DeviceProfile) -> OperationFuser:
    return MatmulFuser(device.max_bindings)


def _reduce(device: DeviceProfile) -> OperationFuser:
    return ReduceFuser(device.max_bindings)


def _reduce_broadcasted(device: DeviceProfile) -> OperationFuser:
    return ReduceBroadcastedFuser(device.max_bindings)


def _nhwc_relayout(device: DeviceProfile) -> OperationFuser:
    return NHWCRelayoutFuser(device.max_bindings)


# The built-in factories, in BUILTIN_NAMES order.
_BUILTINS: tuple[tuple[str, FuserFactory], ...] = (
    ("ElementWise", _elementwise),
    ("Matmul", _matmul),
    ("Reduce", _reduce),
    ("ReduceBroadcasted", _reduce_broadcasted),
    ("NHWCRelayout", _nhwc_relayout),
)


class FusionRegistry:
    """The fusers of one runtime (burn's registry entry): ordered by registration."""

    def __init__(self) -> None:
        self._providers: list[tuple[str, FuserFactory]] = list(_BUILTINS)
        self._sealed = False

    @property
    def sealed(self) -> bool:
        return self._sealed

    def names(self) -> tuple[str, ...]:
        """Registered names, in the order their fusers are created."""
        return tuple(name for name, _ in self._providers)

    def _ensure_open(self) -> None:
        if self._sealed:
            raise ServiceRunning(SERVICE_RUNNING_MESSAGE)

    def register(self, name: str, factory: FuserFactory) -> None:
        """Add a fuser factory after the others; ``DuplicateOptimization`` if the name is
        taken (built-ins included), ``ServiceRunning`` once sealed."""
        self._ensure_open()
        if name in self.names():
            raise DuplicateOptimization(f"a fusion optimization named {name!r} is already "
                                        "registered")
        self._providers.append((name, factory))

    def remove(self, name: str) -> None:
        """Remove the fuser called ``name`` (nothing happens if there is none)."""
        self._ensure_open()
        self._providers = [(other, f) for other, f in self._providers if other != name]

    def seal(self) -> None:
        """Refuse further changes (burn: the fusion service started)."""
        self._sealed = True

    def fusers(self, device: DeviceProfile) -> list[OperationFuser]:
        """One fresh fuser per registered factory, in registration order; seals the registry."""
        self.seal()
        return [factory(device) for _, factory in self._providers]
