"""Find the WebGPU adapter the GPU tests would use; as a script, exit 0 only if there is one.

Used by ``make vulkan`` (exit 1 means "install Mesa's Vulkan driver, lavapipe") and by
``tests/conftest.py``. Only native backends count: with no Vulkan driver installed, wgpu-native
falls back to an OpenGL adapter (llvmpipe through EGL), which is not what the GPU code targets.
"""

from __future__ import annotations

import sys

NATIVE_BACKENDS = ("Vulkan", "Metal", "D3D12")


def find_adapter() -> tuple[object | None, str]:
    """Request an adapter: ``(adapter, summary)``, or ``(None, why there is none)``."""
    try:
        import wgpu
    except ImportError as exc:
        return None, f"wgpu not importable ({exc})"
    try:
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception as exc:  # noqa: BLE001  (wgpu-native raises several types without a driver)
        return None, f"no adapter ({type(exc).__name__}: {exc})"
    if adapter is None:
        return None, "no adapter"
    info = adapter.info
    backend = info.get("backend_type", "?")
    summary = f"{info.get('device', '?')} ({info.get('adapter_type', '?')}, {backend})"
    if backend not in NATIVE_BACKENDS:
        return None, f"only {summary}, not a {'/'.join(NATIVE_BACKENDS)} adapter"
    return adapter, summary


def main() -> int:
    """Print the adapter; 0 when there is a usable one, 1 when not."""
    adapter, summary = find_adapter()
    print(f"WebGPU adapter: {summary}")
    return 0 if adapter is not None else 1


if __name__ == "__main__":
    sys.exit(main())
