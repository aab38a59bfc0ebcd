"""Standalone kernels, one per op (``elementwise``, ``movement``, ``reduce``, ``matmul``);
``gpu.unfused`` launches them."""
