"""Adapter and device acquisition: which WebGPU adapter runs the kernels, with which limits.

burn counterpart: cubecl-wgpu's ``runtime.rs`` (``init_setup``/``create_client``: adapter
selection by ``WgpuDevice``, device requested with the adapter's limits, ``max_bindings`` from
``max_storage_buffers_per_shader_stage``) and the device properties burn-cubecl-fusion reads
(``FuseSettings`` / ``TraceOperationFuser::max_bindings``).

Adapter choice: ``FUSELAB_ADAPTER=<substring>`` forces the first adapter whose name contains
the substring (case-insensitive, e.g. ``llvmpipe`` or ``H200``); otherwise the
high-performance adapter, which on a CPU-only machine is Mesa's lavapipe (llvmpipe) through
Vulkan. An OpenGL fallback adapter is only taken when forced: the kernels target the native
backends (Vulkan, Metal, D3D12).

Limits: by default the device is requested with the adapter's own limits (what cubecl does,
and what wgpu-py does when given none). ``portable=True`` requests WebGPU's default limits
instead (8 storage buffers per stage, 256 invocations per workgroup, ...), so that code paths
meant for browsers can be tested on any machine.

Headless machines: Mesa's device-select Vulkan layer asks libwayland for a display when wgpu
creates its instance, and libwayland prints ``error: XDG_RUNTIME_DIR is invalid or not set``
when that variable is missing. Before wgpu is first used, a process without a valid one gets a
private empty directory (mode 0700, removed at exit): the probe then finds no compositor
quietly, and every other message still reaches stderr.
"""

from __future__ import annotations

import atexit
import os
import tempfile
from types import MappingProxyType
from typing import Any, Mapping

from refimpl.devices import DeviceProfile, profile_from_wgpu_limits
from refimpl.dtypes import DType
from gpu.errors import NoAdapterError
from gpu.runtime.properties import DeviceProperties
from gpu.runtime.server import Runtime

__all__ = [
    "ADAPTER_ENV",
    "NATIVE_BACKENDS",
    "WEBGPU_DEFAULT_LIMITS",
    "GpuDevice",
    "request_device",
    "default_device",
    "is_available",
    "adapter_names",
]

ADAPTER_ENV = "FUSELAB_ADAPTER"
NATIVE_BACKENDS = ("Vulkan", "Metal", "D3D12")

# WebGPU's default limits (gpuweb spec, "Limits"): what every conforming implementation
# offers. Alignment limits ("min-...") are better when smaller; all others when larger.
WEBGPU_DEFAULT_LIMITS: Mapping[str, int] = MappingProxyType({
    "max-bind-groups": 4,
    "max-bindings-per-bind-group": 1000,
    "max-buffer-size": 268435456,
    "max-compute-invocations-per-workgroup": 256,
    "max-compute-workgroup-size-x": 256,
    "max-compute-workgroup-size-y": 256,
    "max-compute-workgroup-size-z": 64,
    "max-compute-workgroup-storage-size": 16384,
    "max-compute-workgroups-per-dimension": 65535,
    "max-dynamic-storage-buffers-per-pipeline-layout": 4,
    "max-dynamic-uniform-buffers-per-pipeline-layout": 8,
    "max-storage-buffer-binding-size": 134217728,
    "max-storage-buffers-per-shader-stage": 8,
    "max-uniform-buffer-binding-size": 65536,
    "max-uniform-buffers-per-shader-stage": 12,
    "min-storage-buffer-offset-alignment": 256,
    "min-uniform-buffer-offset-alignment": 256,
})

# Optional features fuselab asks for when the adapter has them.
_WANTED_FEATURES = ("shader-f16", "timestamp-query", "subgroup")


def _portable_limits(adapter_limits: Mapping[str, int]) -> dict[str, int]:
    """WebGPU defaults, never beyond what the adapter offers."""
    limits = {}
    for key, default in WEBGPU_DEFAULT_LIMITS.items():
        have = adapter_limits.get(key, default)
        limits[key] = max(default, have) if key.startswith("min-") else min(default, have)
    return limits


class GpuDevice:
    """A WebGPU adapter plus the device requested from it, with the facts kernels need.

    ``properties`` (``DeviceProperties``: name, limits, features) holds those facts; the
    device offers them too (``max_bindings``, ``supports`` ...). ``max_bindings`` is the fusion
    planner's binding budget: storage buffers per shader stage minus one (the metadata
    buffer), as in cubecl-wgpu. ``runtime`` is the device's ``Runtime`` (buffers, pipeline
    cache, dispatch), made from the wgpu device and the properties.
    """

    def __init__(self, adapter: Any, wgpu_device: Any, *, portable: bool,
                 limits: Mapping[str, int], features: frozenset[str]) -> None:
        self.adapter = adapter
        self.wgpu_device = wgpu_device
        self.portable = portable
        self.properties = DeviceProperties(str(adapter.info.get("device", "?")), limits,
                                           features)
        self.runtime = Runtime(wgpu_device, self.properties)

    def __repr__(self) -> str:
        return f"GpuDevice({self.summary()!r})"

    @property
    def queue(self) -> Any:
        return self.wgpu_device.queue

    @property
    def name(self) -> str:
        """The adapter's device name (``"llvmpipe (LLVM 15.0.6, 256 bits)"``)."""
        return self.properties.name

    @property
    def limits(self) -> Mapping[str, int]:
        return self.properties.limits

    @property
    def features(self) -> frozenset[str]:
        return self.properties.features

    @property
    def backend(self) -> str:
        return str(self.adapter.info.get("backend_type", "?"))

    @property
    def is_cpu(self) -> bool:
        """A software adapter (lavapipe / llvmpipe)."""
        return self.adapter.info.get("adapter_type") == "CPU"

    # --- the properties' facts ----------------------------------------------------------------

    @property
    def max_bindings(self) -> int:
        return self.properties.max_bindings

    @property
    def max_buffer_bytes(self) -> int:
        return self.properties.max_buffer_bytes

    @property
    def max_storage_buffers(self) -> int:
        return self.properties.max_storage_buffers

    @property
    def max_workgroup_size(self) -> int:
        return self.properties.max_workgroup_size

    @property
    def has_f16(self) -> bool:
        return self.properties.has_f16

    def supports(self, dtype: DType) -> bool:
        return self.properties.supports(dtype)

    def check_dtype(self, dtype: DType, what: str = "tensor") -> None:
        self.properties.check_dtype(dtype, what)

    def supported_dtypes(self) -> tuple[DType, ...]:
        return self.properties.supported_dtypes()

    def profile(self) -> DeviceProfile:
        """The planner's ``DeviceProfile`` for this device (its own limits, portable or not)."""
        return profile_from_wgpu_limits(self.limits, self.name)

    def info(self) -> dict[str, Any]:
        """A JSON-able summary: adapter, backend, limits that matter, features, max_bindings."""
        keys = ("max-storage-buffers-per-shader-stage", "max-storage-buffer-binding-size",
                "max-buffer-size", "max-compute-invocations-per-workgroup",
                "max-compute-workgroup-size-x", "max-compute-workgroup-storage-size",
                "max-compute-workgroups-per-dimension")
        return {
            "name": self.name,
            "vendor": str(self.adapter.info.get("vendor", "")),
            "backend": self.backend,
            "adapter_type": str(self.adapter.info.get("adapter_type", "")),
            "description": str(self.adapter.info.get("description", "")),
            "portable": self.portable,
            "max_bindings": self.max_bindings,
            "limits": {k: int(self.limits[k]) for k in keys if k in self.limits},
            "features": sorted(self.features),
            "dtypes": [d.value for d in self.supported_dtypes()],
        }

    def summary(self) -> str:
        """One line: ``llvmpipe (LLVM 15.0.6, 256 bits) (CPU, Vulkan) max_bindings=31``."""
        kind = self.adapter.info.get("adapter_type", "?")
        mode = " portable" if self.portable else ""
        return f"{self.name} ({kind}, {self.backend}){mode} max_bindings={self.max_bindings}"


def _private_runtime_dir() -> None:
    """Set ``XDG_RUNTIME_DIR`` to a new private directory unless it holds an absolute path
    (libwayland's test of validity)."""
    if os.path.isabs(os.environ.get("XDG_RUNTIME_DIR", "")):
        return
    path = tempfile.mkdtemp(prefix="fuselab-xdg-")  # mode 0700, as the XDG spec asks
    os.environ["XDG_RUNTIME_DIR"] = path
    atexit.register(_remove_empty_dir, path)


def _remove_empty_dir(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:  # something put a file there: leave it
        pass


def _wgpu():
    _private_runtime_dir()
    try:
        import wgpu
    except ImportError as exc:
        raise NoAdapterError(f"wgpu is not installed ({exc}); pip install 'wgpu>=0.32'") from None
    return wgpu


def _adapter_label(adapter: Any) -> str:
    info = adapter.info
    kind, backend = info.get("adapter_type", "?"), info.get("backend_type", "?")
    return f"{info.get('device', '?')} ({kind}, {backend})"


def adapter_names() -> tuple[str, ...]:
    """Every adapter wgpu can see, as ``name (type, backend)`` labels."""
    return tuple(_adapter_label(a) for a in _wgpu().gpu.enumerate_adapters_sync())


def _forced_adapter(wgpu: Any, wanted: str) -> Any:
    adapters = wgpu.gpu.enumerate_adapters_sync()
    for adapter in adapters:
        if wanted.lower() in _adapter_label(adapter).lower():
            return adapter
    names = ", ".join(_adapter_label(a) for a in adapters) or "none"
    raise NoAdapterError(f"{ADAPTER_ENV}={wanted!r} matches no adapter (have: {names})")


def _preferred_adapter(wgpu: Any) -> Any:
    try:
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception as exc:  # wgpu-native raises several types when no driver is present
        raise NoAdapterError(f"no WebGPU adapter ({type(exc).__name__}: {exc})") from None
    if adapter is None:
        raise NoAdapterError("no WebGPU adapter")
    if adapter.info.get("backend_type") not in NATIVE_BACKENDS:
        raise NoAdapterError(f"only {_adapter_label(adapter)}: not a native backend; install "
                             f"Mesa's Vulkan driver (lavapipe) or set {ADAPTER_ENV}")
    return adapter


def _choose_adapter(adapter_name: str | None) -> Any:
    wgpu = _wgpu()
    wanted = adapter_name if adapter_name is not None else os.environ.get(ADAPTER_ENV, "")
    if wanted:
        return _forced_adapter(wgpu, wanted)
    return _preferred_adapter(wgpu)


def request_device(*, portable: bool = False, adapter_name: str | None = None) -> GpuDevice:
    """A new ``GpuDevice``: adapter by ``adapter_name`` / ``FUSELAB_ADAPTER`` / preference,
    device with the adapter's limits (or WebGPU's defaults when ``portable``)."""
    adapter = _choose_adapter(adapter_name)
    adapter_limits = dict(adapter.limits)
    features = [f for f in _WANTED_FEATURES if f in adapter.features]
    limits = _portable_limits(adapter_limits) if portable else adapter_limits
    device = adapter.request_device_sync(required_features=features, required_limits=limits)
    return GpuDevice(adapter=adapter, wgpu_device=device, portable=portable,
                     limits=MappingProxyType(dict(device.limits)),
                     features=frozenset(device.features))


_DEFAULT: dict[bool, GpuDevice] = {}


def default_device(*, portable: bool = False) -> GpuDevice:
    """The process-wide device (one per ``portable`` flag), created on first use."""
    if portable not in _DEFAULT:
        _DEFAULT[portable] = request_device(portable=portable)
    return _DEFAULT[portable]


def is_available() -> bool:
    """True when a usable adapter exists (honours ``FUSELAB_ADAPTER``)."""
    try:
        _choose_adapter(None)
    except NoAdapterError:
        return False
    return True
