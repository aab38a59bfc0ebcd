"""What kernels may use on a device: its name, limits and features, and the dtypes it runs.

burn counterpart: cubecl-runtime's ``DeviceProperties`` (the feature set and the
``HardwareProperties``: ``max_bindings``, ``max_cube_count``, ...), which cubecl-wgpu fills
from the adapter's limits (``runtime.rs``) and the compute server and burn-cubecl-fusion's
``FuseSettings`` read.

``gpu.runtime.device`` makes them when it requests a device; ``gpu.runtime.server`` checks
every buffer and dispatch against them. So the runtime needs the properties, never the
``GpuDevice`` that holds it, and the dependency runs one way: device → server → properties.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from refimpl.dtypes import DType
from gpu.codegen.types import UNSUPPORTED_REASON, WGSL_TYPE
from gpu.errors import UnsupportedDTypeError

__all__ = ["DeviceProperties"]


@dataclass(frozen=True, eq=False)
class DeviceProperties:
    """A device's name, its limits (wgpu's names: ``max-buffer-size`` ...) and features
    (``shader-f16``, ``timestamp-query``), with the facts kernels need derived from them."""

    name: str
    limits: Mapping[str, int]
    features: frozenset[str]

    @property
    def max_bindings(self) -> int:
        """Storage buffers per shader stage − 1 (burn-cubecl-fusion's binding limit)."""
        return int(self.limits["max-storage-buffers-per-shader-stage"]) - 1

    @property
    def max_buffer_bytes(self) -> int:
        """The largest tensor a kernel can bind: the smaller of ``max-buffer-size`` and
        ``max-storage-buffer-binding-size``."""
        return min(int(self.limits["max-buffer-size"]),
                   int(self.limits["max-storage-buffer-binding-size"]))

    @property
    def max_storage_buffers(self) -> int:
        return int(self.limits["max-storage-buffers-per-shader-stage"])

    @property
    def max_workgroup_size(self) -> int:
        """Largest 1-D workgroup: the smaller of the x size and the invocation limit."""
        return min(int(self.limits["max-compute-workgroup-size-x"]),
                   int(self.limits["max-compute-invocations-per-workgroup"]))

    @property
    def max_workgroups_per_dimension(self) -> int:
        return int(self.limits["max-compute-workgroups-per-dimension"])

    @property
    def has_f16(self) -> bool:
        return "shader-f16" in self.features

    def supports(self, dtype: DType) -> bool:
        """True when kernels on this device can hold ``dtype``."""
        if dtype is DType.F16:
            return self.has_f16
        return dtype in WGSL_TYPE

    def check_dtype(self, dtype: DType, what: str = "tensor") -> None:
        """Raise ``UnsupportedDTypeError`` naming ``what`` when ``dtype`` cannot run here."""
        if self.supports(dtype):
            return
        reason = UNSUPPORTED_REASON.get(dtype, "the device lacks the shader-f16 feature")
        raise UnsupportedDTypeError(f"{what}: dtype {dtype.value} is not supported on "
                                    f"{self.name}: {reason}")

    def supported_dtypes(self) -> tuple[DType, ...]:
        """The dtypes this device runs, in ``DType`` order."""
        return tuple(d for d in DType if self.supports(d))
