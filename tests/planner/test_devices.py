"""Device profiles: binding limits and candidate vector widths (notes §4, §6.1)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from refimpl.devices import (
    PRESETS, io_optimized_vector_sizes, profile_from_adapter, profile_from_wgpu_limits,
    profile_named,
)


@pytest.mark.parametrize("name, max_bindings", [("webgpu-default", 7), ("lavapipe", 31),
                                                ("metal", 28), ("cuda", 1024)])
def test_devices_preset_bindings(name, max_bindings):
    profile = profile_named(name)
    assert (profile.name, profile.max_bindings) == (name, max_bindings)


def test_devices_wgpu_vector_sizes():
    for name in ("webgpu-default", "lavapipe", "metal"):
        profile = PRESETS[name]
        assert [profile.vector_sizes(n) for n in (1, 2, 4, 8)] == [(4, 2, 1)] * 3 + [(2, 1)]


def test_devices_cuda_vector_sizes():
    cuda = profile_named("cuda")
    assert cuda.vector_sizes(4) == (4, 2, 1)
    assert cuda.vector_sizes(2) == (8, 4, 2, 1)
    assert cuda.vector_sizes(1) == (16, 8, 4, 2, 1)
    assert cuda.vector_sizes(8) == (2, 1)


def test_devices_io_optimized_vector_sizes():
    assert io_optimized_vector_sizes(128, 4, 4) == (4, 2, 1)
    assert io_optimized_vector_sizes(512, None, 4) == (16, 8, 4, 2, 1)
    assert io_optimized_vector_sizes(128, 1, 1) == (1,)


def test_devices_unknown_profile():
    with pytest.raises(KeyError, match="webgpu-default"):
        profile_named("tpu")


@pytest.mark.parametrize("buffers, max_bindings", [(8, 7), (32, 31), (10, 9), (0, 0)])
def test_devices_from_wgpu_limits(buffers, max_bindings):
    profile = profile_from_wgpu_limits({"max-storage-buffers-per-shader-stage": buffers})
    assert profile.max_bindings == max_bindings
    assert profile.vector_sizes(4) == (4, 2, 1)


def test_devices_from_adapter_like_object():
    class FakeAdapter:
        limits = {"max-storage-buffers-per-shader-stage": 32}
        info = {"device": "llvmpipe (LLVM 15.0.6, 256 bits)"}

    profile = profile_from_adapter(FakeAdapter())
    assert (profile.name, profile.max_bindings) == ("llvmpipe (LLVM 15.0.6, 256 bits)", 31)


def test_devices_module_does_not_import_wgpu():
    code = "import sys, refimpl.devices; print('wgpu' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=Path(__file__).resolve().parents[2])
    assert result.stdout.strip() == "False"
