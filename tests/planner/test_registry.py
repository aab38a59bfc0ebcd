"""FusionRegistry: burn-cubecl's fusion/registry.rs behaviour (notes §8.5, §10.3)."""

from __future__ import annotations

import pytest

from refimpl.devices import profile_named
from refimpl.errors import DuplicateOptimization, RegistryError, ServiceRunning
from refimpl.planner.elemwise import ElementWiseFuser
from refimpl.planner.registry import BUILTIN_NAMES, FusionRegistry

DEVICE = profile_named("webgpu-default")


def custom(device):
    return ElementWiseFuser(device.max_bindings)


def test_registry_builtins_in_order():
    assert BUILTIN_NAMES == ("ElementWise", "Matmul", "Reduce", "ReduceBroadcasted",
                             "NHWCRelayout")
    fusers = FusionRegistry().fusers(DEVICE)
    assert tuple(f.name for f in fusers) == BUILTIN_NAMES
    assert all(f.max_bindings == 7 for f in fusers if hasattr(f, "max_bindings"))


def test_registry_register_then_remove_round_trips():
    registry = FusionRegistry()
    registry.register("custom", custom)
    assert registry.names() == BUILTIN_NAMES + ("custom",)
    registry.remove("custom")
    assert registry.names() == BUILTIN_NAMES
    registry.register("custom", custom)
    assert len(registry.fusers(DEVICE)) == 6


def test_registry_duplicate_names_are_rejected():
    registry = FusionRegistry()
    registry.register("custom", custom)
    with pytest.raises(DuplicateOptimization):
        registry.register("custom", custom)


def test_registry_builtin_names_reserved_until_removed():
    registry = FusionRegistry()
    with pytest.raises(DuplicateOptimization):
        registry.register("Matmul", custom)
    registry.remove("Matmul")
    assert "Matmul" not in registry.names()
    registry.register("Matmul", custom)
    assert registry.names()[-1] == "Matmul"


def test_registry_remove_unknown_is_not_an_error():
    registry = FusionRegistry()
    registry.remove("nothing")
    assert registry.names() == BUILTIN_NAMES


@pytest.mark.parametrize("change", [lambda r: r.register("custom", custom),
                                    lambda r: r.remove("ElementWise")])
def test_registry_sealed_refuses_changes(change):
    registry = FusionRegistry()
    registry.fusers(DEVICE)  # the first stream seals it
    assert registry.sealed
    with pytest.raises(ServiceRunning) as caught:
        change(registry)
    assert "register or remove fusion optimizations at the start of your program" in str(
        caught.value)
    assert isinstance(caught.value, RegistryError)


def test_registry_seal_and_instances_independent():
    first, second = FusionRegistry(), FusionRegistry()
    first.seal()
    second.register("custom", custom)  # another runtime's registry is unaffected
    assert second.names()[-1] == "custom"
    a, b = second.fusers(DEVICE)[0], second.fusers(DEVICE)[0]
    assert a is not b
