"""GPU test fixtures: the session's ``GpuDevice``. Without an adapter the GPU tests skip, or
fail when ``GPU_REQUIRED=1`` (the adapter probe itself is ``tests/conftest.py``'s
``gpu_adapter``; a ``FUSELAB_ADAPTER`` that matches nothing is handled the same way)."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def gpu_device(gpu_adapter):
    """The default ``GpuDevice`` (adapter limits; ``FUSELAB_ADAPTER`` honoured)."""
    from gpu.errors import NoAdapterError
    from gpu.runtime.device import default_device

    try:
        return default_device()
    except NoAdapterError as exc:
        if os.environ.get("GPU_REQUIRED", "") not in ("", "0"):
            pytest.fail(f"{exc} (GPU_REQUIRED=1)")
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def runtime(gpu_device):
    """The session device's ``Runtime`` (buffers, pipeline cache, dispatch)."""
    return gpu_device.runtime
