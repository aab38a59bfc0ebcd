"""FusionRegistry: burn-cubecl's fusion/registry.rs behaviour (notes §8.5, §10.3), on refimpl and
on fastplan (the ``planner_impl`` fixture)."""

from __future__ import annotations

import pytest

from refimpl.devices import profile_named
from refimpl.errors import DuplicateOptimization, RegistryError, ServiceRunning

DEVICE = profile_named("webgpu-default")


def custom_of(impl):
    """A custom fuser factory built on ``impl``'s ElementWise fuser."""
    def custom(device):
        return impl.fusers.elemwise.ElementWiseFuser(device.max_bindings)
    return custom


def test_registry_builtins_in_order(planner_impl):
    registry = planner_impl.fusers.registry
    assert registry.BUILTIN_NAMES == ("ElementWise", "Matmul", "Reduce", "ReduceBroadcasted",
                                      "NHWCRelayout")
    fusers = registry.FusionRegistry().fusers(DEVICE)
    assert tuple(f.name for f in fusers) == registry.BUILTIN_NAMES
    assert all(f.max_bindings == 7 for f in fusers if hasattr(f, "max_bindings"))


def test_registry_register_then_remove_round_trips(planner_impl):
    custom = custom_of(planner_impl)
    registry = planner_impl.fusers.registry.FusionRegistry()
    registry.register("custom", custom)
    assert registry.names() == planner_impl.fusers.registry.BUILTIN_NAMES + ("custom",)
    registry.remove("custom")
    assert registry.names() == planner_impl.fusers.registry.BUILTIN_NAMES
    registry.register("custom", custom)
    assert len(registry.fusers(DEVICE)) == 6


def test_registry_duplicate_names_are_rejected(planner_impl):
    custom = custom_of(planner_impl)
    registry = planner_impl.fusers.registry.FusionRegistry()
    registry.register("custom", custom)
    with pytest.raises(DuplicateOptimization):
        registry.register("custom", custom)


def test_registry_builtin_names_reserved_until_removed(planner_impl):
    custom = custom_of(planner_impl)
    registry = planner_impl.fusers.registry.FusionRegistry()
    with pytest.raises(DuplicateOptimization):
        registry.register("Matmul", custom)
    registry.remove("Matmul")
    assert "Matmul" not in registry.names()
    registry.register("Matmul", custom)
    assert registry.names()[-1] == "Matmul"


def test_registry_remove_unknown_is_not_an_error(planner_impl):
    registry = planner_impl.fusers.registry.FusionRegistry()
    registry.remove("nothing")
    assert registry.names() == planner_impl.fusers.registry.BUILTIN_NAMES


@pytest.mark.parametrize("change", [lambda r, custom: r.register("custom", custom),
                                    lambda r, custom: r.remove("ElementWise")])
def test_registry_sealed_refuses_changes(planner_impl, change):
    custom = custom_of(planner_impl)
    registry = planner_impl.fusers.registry.FusionRegistry()
    registry.fusers(DEVICE)  # the first stream seals it
    assert registry.sealed
    with pytest.raises(ServiceRunning) as caught:
        change(registry, custom)
    assert "register or remove fusion optimizations at the start of your program" in str(
        caught.value)
    assert isinstance(caught.value, RegistryError)


def test_registry_seal_and_instances_independent(planner_impl):
    custom = custom_of(planner_impl)
    registry = planner_impl.fusers.registry
    first, second = registry.FusionRegistry(), registry.FusionRegistry()
    first.seal()
    second.register("custom", custom)  # another runtime's registry is unaffected
    assert second.names()[-1] == "custom"
    a, b = second.fusers(DEVICE)[0], second.fusers(DEVICE)[0]
    assert a is not b
