"""Errors the GPU package raises on purpose (SPEC §8: GPU limits give a clear error).

burn counterpart: none. cubecl panics or returns ``LaunchError``/``ExecutionError`` when a
kernel does not fit the device; fuselab raises one of these instead, before anything reaches
the driver.
"""

from __future__ import annotations

from refimpl.errors import FuselabError

__all__ = ["GpuError", "NoAdapterError", "UnsupportedDTypeError", "GpuLimitError",
           "UnsupportedOpError"]


class GpuError(FuselabError):
    """Base class of the GPU package's errors."""


class NoAdapterError(GpuError):
    """No WebGPU adapter (or none matching ``FUSELAB_ADAPTER``) is available."""


class UnsupportedDTypeError(GpuError, TypeError):
    """A dtype WGSL cannot hold on this device: f64/i64/u64 and the 8/16-bit integers always,
    f16 without the ``shader-f16`` feature."""


class GpuLimitError(GpuError):
    """A buffer, binding count or dispatch does not fit the device's limits."""


class UnsupportedOpError(GpuError):
    """The op, or this form of it, has no GPU kernel (an unknown interpolate mode, a fused
    kernel asked to read what only another kernel family reads)."""
