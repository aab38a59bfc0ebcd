"""Running kernels on a WebGPU device: the device, its buffers and pipelines, and the walk's
GPU backend.

* ``device``: adapter and device acquisition (``GpuDevice``, ``default_device``);
* ``properties``: what kernels may use on a device (``DeviceProperties``: limits, features,
  dtypes);
* ``buffers``: tensors in GPU buffers (``DeviceTensor``) and the storage form of each dtype;
* ``server``: allocation, the pipeline cache keyed by WGSL source, dispatch and readback
  (``Runtime``);
* ``unfused``: one op as its own kernel(s), launched from ``gpu.codegen``'s standalone kernels;
* ``fused_launch``: the host side of a fused launch (kernel cache, signature, metadata words);
* ``fused_matmul``: the host side of the fused matmul (its form, fallbacks, the candidates an
  autotuner times);
* ``executor``: ``GpuExecutor``, the GPU backend of the one walk over a plan's steps, and
  ``WgslListing``, the backend that only emits.

Dependencies point one way: ``device`` → ``server`` → ``properties``, ``buffers``. A
``Runtime`` is made from the wgpu device and the ``DeviceProperties``; it never sees the
``GpuDevice`` that holds it.
"""
