"""What a stream's tensors occupy while it runs, checked against the memory available before
``fuselab run`` allocates any of it.

burn counterpart: none (burn's allocator fails mid-run). ``live_bytes(stream)`` walks the
stream the way the eager oracle holds tensors: inputs from the start (``Init`` targets from
their ``Init``), an op's output beside its operands, a tensor freed by its ``Drop`` or
``ReadWrite`` use unless a ``Sync`` read it back (the results are kept to the end). The sum is
a floor of what any backend needs (numpy temporaries and strided input buffers come on top),
so ``check_fits`` refuses only a run that cannot fit: it raises ``MemoryLimitError`` naming the
op and the tensor whose allocation crosses the memory available (``available_memory``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator

from refimpl.dtypes import DType
from refimpl.eager import init_targets
from refimpl.errors import MemoryLimitError
from refimpl.ir import OperationIr, Sync, TensorStatus
from refimpl.ops import OpKind
from refimpl.stream import Stream

__all__ = ["Allocation", "allocations", "live_bytes", "available_memory", "check_fits",
           "tensor_bytes", "size_text"]


def tensor_bytes(shape: tuple[int, ...], dtype: DType) -> int:
    """Bytes of a contiguous tensor of ``shape`` and ``dtype`` on the host."""
    count = 1
    for dim in shape:
        count *= dim
    return count * dtype.numpy.itemsize


@dataclass(frozen=True, slots=True)
class Allocation:
    """One tensor a run creates: where (op index, ``None`` for the inputs table), which, its
    size, and the bytes live once it exists."""

    op_index: int | None
    op_name: str | None
    tensor: int
    shape: tuple[int, ...]
    dtype: DType
    nbytes: int
    live: int

    def where(self) -> str:
        if self.op_index is None:
            return f"input {self.tensor}"
        return f"op {self.op_index} ({self.op_name}), tensor {self.tensor}"


def allocations(stream: Stream) -> Iterator[Allocation]:
    """Every tensor the stream creates, in execution order, with the live total after it."""
    deferred = set(init_targets(stream))
    sizes: dict[int, int] = {}
    kept: set[int] = set()
    live = 0
    for tid in sorted(stream.inputs):
        if tid in deferred:
            continue
        spec = stream.inputs[tid]
        sizes[tid] = tensor_bytes(spec.shape, spec.dtype)
        live += sizes[tid]
        yield Allocation(None, None, tid, spec.shape, spec.dtype, sizes[tid], live)
    for index, item in enumerate(stream.items):
        if isinstance(item, Sync):
            kept.update(item.tensors)
            continue
        freed = _freed(item)
        for out in item.outputs():
            sizes[out.id] = tensor_bytes(out.shape, out.dtype)
            live += sizes[out.id]
            yield Allocation(index, item.name, out.id, out.shape, out.dtype, sizes[out.id],
                             live)
        for tid in freed:
            if tid not in kept:
                live -= sizes.pop(tid, 0)


def _freed(op: OperationIr) -> tuple[int, ...]:
    if op.op.kind is OpKind.DROP:
        return (op.desc.tensor.id,)
    return tuple(t.id for t in op.inputs() if t.status is TensorStatus.ReadWrite)


def live_bytes(stream: Stream) -> int:
    """The most bytes the stream's tensors hold at once."""
    return max((a.live for a in allocations(stream)), default=0)


def available_memory() -> int | None:
    """Bytes the host can still give without swapping (Linux ``MemAvailable``), else its
    physical memory; ``None`` when neither is known."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def check_fits(stream: Stream, available: int | None = None) -> None:
    """Raise ``MemoryLimitError`` at the first tensor that takes the live bytes past
    ``available`` (default: ``available_memory()``; nothing is checked when unknown)."""
    if available is None:
        available = available_memory()
        if available is None:
            return
    for alloc in allocations(stream):
        if alloc.live > available:
            beside = "" if alloc.live == alloc.nbytes else \
                f", {size_text(alloc.live)} with the tensors live beside it"
            raise MemoryLimitError(
                f"{alloc.where()}: {list(alloc.shape)} {alloc.dtype.value} needs "
                f"{size_text(alloc.nbytes)}{beside}; {size_text(available)} of memory "
                f"available", op_index=alloc.op_index, tensor=alloc.tensor,
                nbytes=alloc.nbytes, available=available)


def size_text(nbytes: int) -> str:
    """``40000000000 bytes (37.3 GiB)``: exact, then readable."""
    scaled, unit = float(nbytes), "bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        scaled /= 1024
        if scaled < 1024:
            break
    return f"{nbytes} bytes ({scaled:.1f} {unit})" if nbytes >= 1024 else f"{nbytes} bytes"
