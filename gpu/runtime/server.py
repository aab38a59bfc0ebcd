"""Buffers, the pipeline cache, dispatch and readback: wgpu-py's ``compute_with_buffers``
split into cached parts.

burn counterpart: cubecl-wgpu's ``compute/server.rs`` (buffer allocation, ``pipeline``
cache keyed by the kernel id, ``launch`` → ``dispatch_workgroups``, ``read``) and cubecl's
``CubeCount`` folding of large launches over several grid dimensions.

A ``Runtime`` holds a wgpu device and its queue, and the ``DeviceProperties`` it checks
buffers and dispatches against; it never sees the ``GpuDevice`` that made it.

* Buffers hold ``gpu.runtime.buffers.DeviceTensor``s: ``upload``, ``empty``, ``copy``,
  ``download``.
* ``pipeline_for(source, constants)`` caches compiled pipelines in an LRU dict keyed by the
  WGSL source text and the override constants; ``compiled`` counts every compilation, so
  tests can check that a kernel was reused. ``FUSELAB_DEBUG_LOG=stdout`` prints each
  compiled kernel (like ``CUBECL_DEBUG_LOG``).
* ``dispatch(source, buffers, workgroups)`` folds a linear workgroup count over a 2-D/3-D
  grid when it passes ``max-compute-workgroups-per-dimension`` (65 535); kernels rebuild
  the linear index from ``workgroup_id`` and ``num_workgroups``. It is ``prepare`` (compile,
  bind: a ``Dispatched``) then ``submit`` (one compute pass).
* ``observers``: callables handed a ``Dispatched`` (pipeline, bind group, grid) for every
  dispatch, after it is submitted; ``bench.gpu_timing`` records a run this way and replays its
  dispatches in one compute pass.
"""

from __future__ import annotations

import os
import sys
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from refimpl.data import buffer_length, contiguous_strides, read_strided
from refimpl.dtypes import DType
from gpu.errors import GpuLimitError
from gpu.runtime.buffers import STORAGE_NUMPY, DeviceTensor, dtype_of, padded_size
from gpu.runtime.properties import DeviceProperties

__all__ = ["Dispatched", "Runtime", "fold_workgroups", "DEBUG_LOG_ENV"]

DEBUG_LOG_ENV = "FUSELAB_DEBUG_LOG"

@dataclass(frozen=True, eq=False)
class Dispatched:
    """One submitted dispatch, enough to encode it again: the WGSL, its buffers, the linear
    workgroup count and size, and the compiled pipeline, bind group and folded grid."""

    source: str
    buffers: tuple[Any, ...]
    workgroups: int
    workgroup_size: int
    pipeline: Any
    bind_group: Any
    grid: tuple[int, int, int]


def fold_workgroups(count: int, max_per_dim: int) -> tuple[int, int, int]:
    """A grid of at least ``count`` workgroups with no dimension above ``max_per_dim``.

    >>> fold_workgroups(10, 65535)
    (10, 1, 1)
    >>> fold_workgroups(65536, 65535)
    (65535, 2, 1)
    """
    count = max(count, 1)
    x = min(count, max_per_dim)
    rest = -(-count // x)
    y = min(rest, max_per_dim)
    z = -(-rest // y)
    if z > max_per_dim:
        raise GpuLimitError(f"{count} workgroups exceed the device's 3-D dispatch limit "
                            f"({max_per_dim}^3)")
    return x, y, z


class Runtime:
    """Buffers, cached pipelines and dispatches on one wgpu device (``wgpu_device``), checked
    against its ``properties``."""

    def __init__(self, wgpu_device: Any, properties: DeviceProperties,
                 cache_size: int = 512) -> None:
        import wgpu

        self.wgpu_device = wgpu_device
        self.queue = wgpu_device.queue
        self.properties = properties
        self.cache_size = cache_size
        self.compiled = 0  # pipelines compiled so far (a cache miss each)
        self.dispatched = 0  # dispatches submitted so far
        # Default workgroup size: a power of two (tree reductions halve it), at most 256.
        cap = min(256, properties.max_workgroup_size)
        self.workgroup_size = 1 << (cap.bit_length() - 1)
        self._pipelines: OrderedDict[tuple, tuple[Any, Any]] = OrderedDict()
        self.observers: list[Callable[[Dispatched], None]] = []
        self._usage = (wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
                       | wgpu.BufferUsage.COPY_DST)

    # --- buffers ----------------------------------------------------------------------------

    def _check_size(self, nbytes: int, what: str) -> None:
        cap = self.properties.max_buffer_bytes
        if nbytes > cap:
            raise GpuLimitError(f"{what} needs a {nbytes}-byte buffer; {self.properties.name} "
                                f"binds at most {cap} bytes (max-storage-buffer-binding-size)")

    def _buffer_with(self, data: np.ndarray, what: str) -> Any:
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        self._check_size(raw.size, what)
        padded = np.zeros(padded_size(raw.size), dtype=np.uint8)
        padded[: raw.size] = raw
        return self.wgpu_device.create_buffer_with_data(data=padded, usage=self._usage)

    def upload_buffer(self, flat: np.ndarray, dtype: DType, what: str = "tensor") -> Any:
        """A buffer holding ``flat`` (1-D, logical values of ``dtype``) in storage form."""
        self.properties.check_dtype(dtype, what)
        return self._buffer_with(np.asarray(flat).astype(STORAGE_NUMPY[dtype]), what)

    def upload(self, values: np.ndarray, dtype: DType | None = None,
               what: str = "tensor") -> DeviceTensor:
        """A contiguous ``DeviceTensor`` holding ``values`` (``dtype`` defaults to theirs)."""
        values = np.asarray(values)
        dtype = dtype if dtype is not None else dtype_of(values)
        buffer = self.upload_buffer(values.reshape(-1), dtype, what)
        shape = tuple(values.shape)
        return DeviceTensor(buffer, dtype, shape, contiguous_strides(shape))

    def upload_strided(self, flat: np.ndarray, shape: Sequence[int], strides: Sequence[int],
                       dtype: DType, offset: int = 0) -> DeviceTensor:
        """A ``DeviceTensor`` reading ``flat`` (a whole buffer) through ``strides``."""
        buffer = self.upload_buffer(np.asarray(flat).reshape(-1), dtype)
        return DeviceTensor(buffer, dtype, tuple(shape), tuple(strides), offset)

    def empty(self, shape: Sequence[int], dtype: DType, what: str = "output") -> DeviceTensor:
        """A zero-filled contiguous tensor."""
        self.properties.check_dtype(dtype, what)
        shape = tuple(shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * STORAGE_NUMPY[dtype].itemsize
        self._check_size(nbytes, what)
        buffer = self.wgpu_device.create_buffer(size=padded_size(nbytes), usage=self._usage)
        return DeviceTensor(buffer, dtype, shape, contiguous_strides(shape))

    def copy(self, tensor: DeviceTensor) -> DeviceTensor:
        """A new buffer holding a copy of ``tensor``'s whole buffer (submitted, not waited
        for), read through the same layout."""
        size = tensor.buffer.size
        copy = self.wgpu_device.create_buffer(size=size, usage=self._usage)
        encoder = self.wgpu_device.create_command_encoder()
        encoder.copy_buffer_to_buffer(tensor.buffer, 0, copy, 0, size)
        self.queue.submit([encoder.finish()])
        return DeviceTensor(copy, tensor.dtype, tensor.shape, tensor.strides, tensor.offset)

    def words(self, words: Sequence[int]) -> Any:
        """A metadata buffer of u32 words (ints are taken modulo 2^32)."""
        data = np.array([int(w) & 0xFFFFFFFF for w in words] or [0], dtype=np.uint32)
        return self._buffer_with(data, "metadata")

    def read_flat(self, tensor: DeviceTensor) -> np.ndarray:
        """The whole buffer behind ``tensor`` as storage values (1-D)."""
        raw = self.queue.read_buffer(tensor.buffer)
        return np.frombuffer(raw, dtype=STORAGE_NUMPY[tensor.dtype]).copy()

    def download(self, tensor: DeviceTensor) -> np.ndarray:
        """The tensor's logical values (contiguous, its shape and dtype)."""
        flat = self.read_flat(tensor)
        needed = tensor.offset + buffer_length(tensor.shape, tensor.strides)
        values = read_strided(flat[tensor.offset:needed], tensor.shape, tensor.strides)
        if tensor.dtype is DType.BOOL:
            return values != 0
        return values.astype(tensor.dtype.numpy)

    # --- pipelines --------------------------------------------------------------------------

    def pipeline_for(self, source: str, constants: Mapping[str, int] | None = None) -> Any:
        """The compiled pipeline for ``source`` with override ``constants`` (LRU-cached)."""
        key = (source, tuple(sorted((constants or {}).items())))
        cached = self._pipelines.get(key)
        if cached is not None:
            self._pipelines.move_to_end(key)
            return cached
        entry = self._compile(source, dict(key[1]))
        self._pipelines[key] = entry
        if len(self._pipelines) > self.cache_size:
            self._pipelines.popitem(last=False)
        return entry

    def _compile(self, source: str, constants: dict[str, int]) -> tuple[Any, Any]:
        if os.environ.get(DEBUG_LOG_ENV) == "stdout":
            print(f"[fuselab] compile kernel constants={constants}\n{source}", file=sys.stdout)
        module = self.wgpu_device.create_shader_module(code=source)
        stage = {"module": module, "entry_point": "main"}
        if constants:
            stage["constants"] = constants
        pipeline = self.wgpu_device.create_compute_pipeline(layout="auto", compute=stage)
        self.compiled += 1
        return pipeline, pipeline.get_bind_group_layout(0)

    @property
    def cached(self) -> int:
        """Pipelines currently held by the cache."""
        return len(self._pipelines)

    # --- dispatch ---------------------------------------------------------------------------

    def grid(self, workgroups: int) -> tuple[int, int, int]:
        """The dispatch grid for a linear workgroup count on this device."""
        return fold_workgroups(workgroups, self.properties.max_workgroups_per_dimension)

    def prepare(self, source: str, buffers: Sequence[Any], workgroups: int, *,
                workgroup_size: int = 64) -> Dispatched:
        """``source`` compiled (cached) with ``WG_SIZE = workgroup_size`` and bound to
        ``buffers`` (bindings 0..n-1 of group 0) over ``workgroups`` workgroups, not
        submitted."""
        props = self.properties
        if len(buffers) > props.max_storage_buffers:
            raise GpuLimitError(f"a kernel with {len(buffers)} storage buffers exceeds "
                                f"{props.name}'s {props.max_storage_buffers} per "
                                "shader stage")
        if workgroup_size > props.max_workgroup_size:
            raise GpuLimitError(f"workgroup size {workgroup_size} exceeds the device's "
                                f"{props.max_workgroup_size}")
        pipeline, layout = self.pipeline_for(source, {"WG_SIZE": workgroup_size})
        entries = [{"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}}
                   for i, b in enumerate(buffers)]
        bind_group = self.wgpu_device.create_bind_group(layout=layout, entries=entries)
        return Dispatched(source, tuple(buffers), workgroups, workgroup_size, pipeline,
                          bind_group, self.grid(workgroups))

    def submit(self, dispatched: Dispatched) -> None:
        """``dispatched`` in a compute pass of its own, submitted; then every observer."""
        encoder = self.wgpu_device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(dispatched.pipeline)
        compute.set_bind_group(0, dispatched.bind_group)
        compute.dispatch_workgroups(*dispatched.grid)
        compute.end()
        self.queue.submit([encoder.finish()])
        self.dispatched += 1
        for observe in self.observers:
            observe(dispatched)

    def dispatch(self, source: str, buffers: Sequence[Any], workgroups: int, *,
                 workgroup_size: int = 64) -> None:
        """Run ``source`` over ``workgroups`` workgroups (folded to a 3-D grid) with
        ``buffers`` bound at bindings 0..n-1 of group 0 and ``WG_SIZE = workgroup_size``."""
        self.submit(self.prepare(source, buffers, workgroups, workgroup_size=workgroup_size))

    def finish(self) -> None:
        """Wait for submitted work (a 4-byte readback; wgpu-py 0.32's
        ``on_submitted_work_done_sync`` is broken)."""
        marker = self.wgpu_device.create_buffer(size=4, usage=self._usage)
        self.queue.read_buffer(marker, 0, 4)

