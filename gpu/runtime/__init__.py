"""Running kernels on a WebGPU device: the device, its buffers and pipelines, and the walk's
GPU backend.

* ``device``: adapter and device acquisition, limits and features (``GpuDevice``);
* ``server``: buffers, the pipeline cache keyed by WGSL source, dispatch and readback
  (``Runtime``, ``DeviceTensor``);
* ``unfused``: one op as its own kernel(s), launched from ``gpu.codegen``'s standalone kernels;
* ``fused_launch``: the host side of a fused launch (kernel cache, signature, metadata words);
* ``executor``: ``GpuExecutor``, the GPU backend of the one walk over a plan's steps, and
  ``WgslListing``, the backend that only emits.
"""
