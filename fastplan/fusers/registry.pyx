# cython: language_level=3
"""Which fusers compete for each block: the five built-ins plus any registered ones.

burn counterpart: ``crates/burn-cubecl/src/fusion/registry.rs`` (``BUILTIN_NAMES``,
``register``, ``remove``, ``fusers``, ``RegistryError``); notes §8.5. Mirrors
``refimpl/planner/fusers/registry.py``: same names, same order, same behaviour; the built-in
factories build fastplan's fusers, and the errors are refimpl's classes.
"""

from fastplan.fusers.elemwise import ElementWiseFuser
from fastplan.fusers.matmul import MatmulFuser
from fastplan.fusers.nhwc import NHWCRelayoutFuser
from fastplan.fusers.reduce import ReduceFuser
from fastplan.fusers.reduce_broadcasted import ReduceBroadcastedFuser

from refimpl.errors import DuplicateOptimization, ServiceRunning
from refimpl.planner.fusers.registry import FuserFactory

__all__ = ["BUILTIN_NAMES", "FuserFactory", "FusionRegistry", "SERVICE_RUNNING_MESSAGE"]

BUILTIN_NAMES = ("ElementWise", "Matmul", "Reduce", "ReduceBroadcasted", "NHWCRelayout")

SERVICE_RUNNING_MESSAGE = (
    "the fusion service is already running; register or remove fusion optimizations at the "
    "start of your program, before the first tensor operation"
)


def _elementwise(device):
    return ElementWiseFuser(device.max_bindings)


def _matmul(device):
    return MatmulFuser(device.max_bindings)


def _reduce(device):
    return ReduceFuser(device.max_bindings)


def _reduce_broadcasted(device):
    return ReduceBroadcastedFuser(device.max_bindings)


def _nhwc_relayout(device):
    return NHWCRelayoutFuser(device.max_bindings)


# The built-in factories, in BUILTIN_NAMES order.
_BUILTINS = (
    ("ElementWise", _elementwise),
    ("Matmul", _matmul),
    ("Reduce", _reduce),
    ("ReduceBroadcasted", _reduce_broadcasted),
    ("NHWCRelayout", _nhwc_relayout),
)


cdef class FusionRegistry:
    """The fusers of one runtime (burn's registry entry): ordered by registration.

    Mirrors refimpl.planner.fusers.registry.FusionRegistry.
    """

    cdef list _providers
    cdef bint _sealed

    def __init__(self):
        self._providers = list(_BUILTINS)
        self._sealed = False

    @property
    def sealed(self):
        return self._sealed

    def names(self):
        """Registered names, in the order their fusers are created."""
        return tuple(name for name, _ in self._providers)

    def _ensure_open(self):
        if self._sealed:
            raise ServiceRunning(SERVICE_RUNNING_MESSAGE)

    def register(self, name, factory):
        """Add a fuser factory after the others; ``DuplicateOptimization`` if the name is
        taken (built-ins included), ``ServiceRunning`` once sealed."""
        self._ensure_open()
        if name in self.names():
            raise DuplicateOptimization(f"a fusion optimization named {name!r} is already "
                                        "registered")
        self._providers.append((name, factory))

    def remove(self, name):
        """Remove the fuser called ``name`` (nothing happens if there is none)."""
        self._ensure_open()
        self._providers = [(other, f) for other, f in self._providers if other != name]

    def seal(self):
        """Refuse further changes (burn: the fusion service started)."""
        self._sealed = True

    def fusers(self, device):
        """One fresh fuser per registered factory, in registration order; seals the registry."""
        self.seal()
        return [factory(device) for _, factory in self._providers]
