"""Adapter and device acquisition: limits, max_bindings, portable limits, FUSELAB_ADAPTER."""

from __future__ import annotations

import numpy as np
import pytest

from refimpl.dtypes import DType
from gpu.errors import NoAdapterError, UnsupportedDTypeError
from gpu.runtime.device import WEBGPU_DEFAULT_LIMITS, is_available, request_device


def test_device_max_bindings_is_storage_buffers_minus_one(gpu_device):
    assert gpu_device.max_bindings == gpu_device.limits["max-storage-buffers-per-shader-stage"] - 1
    assert gpu_device.limits["max-storage-buffers-per-shader-stage"] == \
        gpu_device.adapter.limits["max-storage-buffers-per-shader-stage"]


def test_device_profile_feeds_the_planner(gpu_device):
    profile = gpu_device.profile()
    assert profile.max_bindings == gpu_device.max_bindings
    assert profile.vector_sizes(4)[0] == 4


def test_device_info_is_a_json_summary(gpu_device):
    info = gpu_device.info()
    assert info["name"] == gpu_device.name and info["max_bindings"] == gpu_device.max_bindings
    assert "f32" in info["dtypes"] and "f64" not in info["dtypes"]
    assert gpu_device.name in gpu_device.summary()


def test_device_f16_follows_the_feature(gpu_device):
    assert gpu_device.supports(DType.F16) == ("shader-f16" in gpu_device.adapter.features)
    for dtype in (DType.F64, DType.I64, DType.U16):
        with pytest.raises(UnsupportedDTypeError):
            gpu_device.check_dtype(dtype)


def test_portable_device_has_webgpu_default_limits(gpu_device):
    portable = request_device(portable=True)
    assert portable.max_bindings == 7 == portable.profile().max_bindings
    assert portable.limits["max-compute-invocations-per-workgroup"] <= 256
    assert portable.runtime.workgroup_size <= 256
    for key in ("max-storage-buffer-binding-size", "max-compute-workgroups-per-dimension"):
        assert portable.limits[key] <= WEBGPU_DEFAULT_LIMITS[key]
    t = portable.runtime.upload(np.arange(5, dtype=np.int32))
    np.testing.assert_array_equal(portable.runtime.download(t), np.arange(5))


def test_adapter_env_forces_a_matching_adapter(gpu_device, monkeypatch):
    fragment = gpu_device.name.split()[0].upper()  # matching is case-insensitive
    monkeypatch.setenv("FUSELAB_ADAPTER", fragment)
    assert request_device().name == gpu_device.name
    monkeypatch.setenv("FUSELAB_ADAPTER", "no-such-adapter-xyz")
    with pytest.raises(NoAdapterError, match="no-such-adapter-xyz"):
        request_device()
    assert not is_available()
