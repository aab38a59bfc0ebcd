"""A pool of device buffers reused by size class, so that a run's outputs are not freshly
allocated each time.

burn counterpart: cubecl-runtime's ``memory_management`` (``MemoryManagement`` with its
``MemoryPool``s: freed pages are kept and handed out again to a later allocation of their
size class instead of asking the driver). Simpler than burn's: one free list per size class,
no slicing of a page between tensors.

Size classes: a power of two from ``MIN_CLASS`` up to ``MiB``, then whole MiB; never past the
device's largest binding (then the exact padded size). ``take`` returns a buffer of at least
the size asked (a pooled one when free, else a new one), ``give`` hands one back. Free
buffers are kept up to ``limit`` bytes, oldest dropped first. A buffer taken again is not
cleared: every user writes what it reads.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any

from gpu.errors import GpuLimitError
from gpu.runtime.buffers import padded_size

__all__ = ["BufferPool", "pool_for", "size_class", "MIN_CLASS", "MIB"]

MIN_CLASS = 256
MIB = 1 << 20


def size_class(nbytes: int, cap: int) -> int:
    """The pooled size for ``nbytes`` (at most ``cap`` unless ``nbytes`` needs more)."""
    size = padded_size(nbytes)
    if size <= MIB:
        rounded = max(MIN_CLASS, 1 << (size - 1).bit_length())
    else:
        rounded = -(-size // MIB) * MIB
    return rounded if rounded <= cap else size


class BufferPool:
    """Free device buffers of one wgpu device, by size class."""

    def __init__(self, wgpu_device: Any, usage: int, cap: int,
                 limit: int = 2 << 30) -> None:
        self.wgpu_device, self.usage, self.cap, self.limit = wgpu_device, usage, cap, limit
        self._free: OrderedDict[int, list[Any]] = OrderedDict()
        self._owned: weakref.WeakSet = weakref.WeakSet()  # buffers this pool made
        self.free_bytes = 0
        self.created = 0
        self.reused = 0

    def take(self, nbytes: int, what: str = "tensor") -> Any:
        """A buffer of at least ``nbytes`` (reused when one of its class is free)."""
        if nbytes > self.cap:
            raise GpuLimitError(f"{what} needs a {nbytes}-byte buffer; the device binds at "
                                f"most {self.cap} bytes (max-storage-buffer-binding-size)")
        size = size_class(nbytes, self.cap)
        free = self._free.get(size)
        if free:
            buffer = free.pop()
            self.free_bytes -= size
            self.reused += 1
            return buffer
        buffer = self.wgpu_device.create_buffer(size=size, usage=self.usage)
        self._owned.add(buffer)
        self.created += 1
        return buffer

    def owns(self, buffer: Any) -> bool:
        return buffer in self._owned

    def give(self, buffer: Any) -> None:
        """Hand ``buffer`` back (ignored unless this pool made it)."""
        if buffer not in self._owned or any(b is buffer for b in
                                            self._free.get(buffer.size, ())):
            return
        self._free.setdefault(buffer.size, []).append(buffer)
        self._free.move_to_end(buffer.size)
        self.free_bytes += buffer.size
        while self.free_bytes > self.limit and self._free:
            size, buffers = next(iter(self._free.items()))
            dropped = buffers.pop(0)
            self._owned.discard(dropped)
            self.free_bytes -= size
            if not buffers:
                del self._free[size]

    def clear(self) -> None:
        """Drop every free buffer."""
        for buffers in self._free.values():
            for buffer in buffers:
                self._owned.discard(buffer)
        self._free.clear()
        self.free_bytes = 0


_POOLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def pool_for(runtime: Any) -> BufferPool:
    """The pool of a ``gpu.runtime.server.Runtime`` (made on first use, with its usage flags
    and its device's largest binding)."""
    found = _POOLS.get(runtime)
    if found is None:
        found = _POOLS[runtime] = BufferPool(runtime.wgpu_device, runtime._usage,
                                             runtime.properties.max_buffer_bytes)
    return found
