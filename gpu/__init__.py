"""fuselab's GPU package: WGSL kernels run through wgpu-py on any WebGPU adapter.

burn counterpart: ``burn-cubecl`` + ``cubecl-wgpu`` (device, runtime, kernels) and, for the
fused kernels, ``burn-cubecl-fusion``'s code generation.

Three rooms, each importing only the ones listed after it:

* ``gpu.check`` — how far results may be from the oracle: per-op ULP bounds from the WGSL
  accuracy rules (``tolerance``), carried along a stream (``chain_bounds``), a run compared
  within them (``agreement``), an adapter measured against them (``accuracy``; ``python -m
  fuselab.accuracy``).
* ``gpu.runtime`` — the device (``device``: ``request_device``, ``default_device``,
  ``is_available``; ``properties``: limits, features, ``max_bindings``), buffers
  (``buffers``), the pipeline cache, dispatch and readback (``server``), one kernel per op
  (``unfused``: fusion off) and the walk's GPU backend (``executor``).
* ``gpu.codegen`` — WGSL for every kernel: types, the expression table
  (``WGSL_EXPR``/``FUSE_EXPR``), kernel rendering and skeletons, the fused and the standalone
  kernels. It runs nothing.

``gpu.errors`` serves all three. Device-side timing belongs to the benchmarks
(``bench/gpu_timing.py``).
"""

from gpu.runtime.device import GpuDevice, default_device, is_available, request_device

__all__ = ["GpuDevice", "default_device", "is_available", "request_device"]
