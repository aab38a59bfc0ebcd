"""fuselab's GPU package: WGSL kernels run through wgpu-py on any WebGPU adapter.

burn counterpart: ``burn-cubecl`` + ``cubecl-wgpu`` (device, runtime, kernels) and, for the
fused kernels, ``burn-cubecl-fusion``'s code generation.

* ``gpu.runtime.device`` — adapter/device acquisition (``request_device``, ``default_device``,
  ``is_available``), limits and features (``max_bindings``, ``shader-f16``).
* ``gpu.runtime`` — buffers, the pipeline cache keyed by WGSL source, dispatch, readback.
* ``gpu.codegen`` — WGSL for every kernel: types, the expression table
  (``WGSL_EXPR``/``FUSE_EXPR``), skeletons, the fused and the standalone kernels.
* ``gpu.runtime.unfused`` — one kernel per op (``run_op``): fusion off.
* ``gpu.check.tolerance`` — per-op ULP bounds from the WGSL accuracy rules; ``gpu.check.accuracy``
  measures an adapter against them (``python -m fuselab.accuracy``).
"""

from gpu.runtime.device import GpuDevice, default_device, is_available, request_device

__all__ = ["GpuDevice", "default_device", "is_available", "request_device"]
