"""Device profiles: the hardware facts planning depends on, without needing the hardware.

burn/cubecl counterpart: ``client.properties().hardware.max_bindings`` (cubecl-wgpu
``runtime.rs``: the adapter's ``max_storage_buffers_per_shader_stage`` minus one, which wgpu
keeps for itself, cubecl #873) and ``client.io_optimized_vector_sizes(elem_bytes)`` (cubecl
``client.rs``); notes §4, §6.1.

Presets: ``webgpu-default`` (WebGPU's default 8 storage buffers -> 7), ``lavapipe`` (Mesa's
software Vulkan reports 32 -> 31), ``metal`` (28, the value the seed page's fusion log shows on
an M2 Max: ``est_bindings=1/28``), ``cuda`` (cubecl's ``CUDA_MAX_BINDINGS`` = 1024, vectors
limited only by the 128-bit load width). A real wgpu adapter gives a profile through
``profile_from_wgpu_limits(adapter.limits)``; this module never imports wgpu.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = [
    "DeviceProfile",
    "io_optimized_vector_sizes",
    "PRESETS",
    "profile_named",
    "profile_from_wgpu_limits",
    "profile_from_adapter",
    "WGPU_LOAD_WIDTH_BITS",
    "WGPU_MAX_VECTOR_SIZE",
]

WGPU_LOAD_WIDTH_BITS = 128
WGPU_MAX_VECTOR_SIZE = 4
_ELEM_BYTES = (1, 2, 4, 8)
_STORAGE_BUFFERS_LIMIT = "max-storage-buffers-per-shader-stage"


def io_optimized_vector_sizes(load_width_bits: int, max_vector_size: int | None,
                              elem_bytes: int) -> tuple[int, ...]:
    """Candidate vector widths for one element size, widest first (cubecl
    ``io_optimized_vector_sizes``): powers of two from ``min(max, load / element)`` down to 1.

    >>> io_optimized_vector_sizes(128, 4, 4), io_optimized_vector_sizes(128, 4, 8)
    ((4, 2, 1), (2, 1))
    >>> io_optimized_vector_sizes(128, None, 1)
    (16, 8, 4, 2, 1)
    """
    widest = max(load_width_bits // (8 * elem_bytes), 1)
    if max_vector_size is not None:
        widest = min(widest, max_vector_size)
    sizes, size = [], 1
    while size <= widest:
        sizes.append(size)
        size *= 2
    return tuple(reversed(sizes))


def _vector_table(load_width_bits: int,
                  max_vector_size: int | None) -> tuple[tuple[int, tuple[int, ...]], ...]:
    return tuple((n, io_optimized_vector_sizes(load_width_bits, max_vector_size, n))
                 for n in _ELEM_BYTES)


@dataclass(frozen=True, slots=True)
class DeviceProfile:
    """What planning needs from a device: its binding limit and candidate vector widths per
    element size (in bytes)."""

    name: str
    max_bindings: int
    vector_sizes_by_bytes: tuple[tuple[int, tuple[int, ...]], ...]

    def vector_sizes(self, elem_bytes: int) -> tuple[int, ...]:
        """Candidate widths, widest first, for elements of ``elem_bytes`` bytes."""
        for size, widths in self.vector_sizes_by_bytes:
            if size == elem_bytes:
                return widths
        raise KeyError(f"device {self.name!r} has no vector sizes for {elem_bytes}-byte elements")


def _wgpu_profile(name: str, max_bindings: int) -> DeviceProfile:
    return DeviceProfile(name, max_bindings,
                         _vector_table(WGPU_LOAD_WIDTH_BITS, WGPU_MAX_VECTOR_SIZE))


PRESETS: Mapping[str, DeviceProfile] = MappingProxyType({
    "webgpu-default": _wgpu_profile("webgpu-default", 7),
    "lavapipe": _wgpu_profile("lavapipe", 31),
    "metal": _wgpu_profile("metal", 28),
    "cuda": DeviceProfile("cuda", 1024, _vector_table(128, None)),
})


def profile_named(name: str) -> DeviceProfile:
    """The preset called ``name``; ``KeyError`` naming the presets if there is none."""
    try:
        return PRESETS[name]
    except KeyError:
        known = ", ".join(PRESETS)
        raise KeyError(f"unknown device profile {name!r} (known: {known})") from None


def profile_from_wgpu_limits(limits: Mapping[str, int], name: str = "wgpu") -> DeviceProfile:
    """A profile from a wgpu adapter's (or device's) ``limits`` dict, as cubecl-wgpu reads it:
    storage buffers per shader stage minus one (saturating at 0)."""
    max_bindings = max(int(limits[_STORAGE_BUFFERS_LIMIT]) - 1, 0)
    return _wgpu_profile(name, max_bindings)


def profile_from_adapter(adapter: object) -> DeviceProfile:
    """A profile from a wgpu-py ``GPUAdapter`` (anything with ``limits`` and ``info``)."""
    info = getattr(adapter, "info", {}) or {}
    name = str(info.get("device") or "wgpu")
    return profile_from_wgpu_limits(adapter.limits, name)  # type: ignore[attr-defined]


def resolve_device(device: Any) -> Any:
    """A ``DeviceProfile``: a name is looked up with ``devices.profile_named``.

    A profile, or any object with its limits (a GPU device's), is returned as it is."""
    return profile_named(device) if isinstance(device, str) else device
