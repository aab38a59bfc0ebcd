"""Simulated device memory: buffers, tensor handles (buffer, shape, strides, offset), and how
burn-cubecl lays out the output of every op that runs unfused.

burn counterpart: ``CubeFusionHandle`` / ``HandleContainer`` (``crates/burn-fusion/src/
handle.rs``: ``get_handle`` removes a ``ReadWrite`` tensor, keeps a ``ReadOnly`` one) and the
metadata ops of ``crates/burn-cubecl/src/ops/base.rs`` (``swap_dims``, ``permute``,
``expand``, ``reshape``) and ``kernel/index/slice.rs`` (``slice``); notes §2.1, §6.7.

A ``Memory`` maps live tensor ids to ``Handle``s; several handles may share a buffer (views,
in-place aliases). A buffer is *exclusively owned* by a handle when no other live handle uses
it: that is burn's ``handle.can_mut()``, which gates in-place writes. Buffers hold numpy data
(``with_values=True``, the interpreter) or only their size (launch planning needs layouts,
never values). Fresh buffers are filled with the dtype's sentinel so that an element no
kernel wrote shows up in results.

Unfused ops, by variant (``UNFUSED_LAYOUTS``): ``SwapDims``/``Permute`` swap/permute the
strides, ``Expand`` gives broadcast dims stride 0, ``Reshape`` keeps the buffer when
``reshape_action`` allows and copies otherwise, ``Slice`` is an offset view when both byte
offsets are multiples of the memory alignment and a copy otherwise; every other op writes a
fresh contiguous buffer. ``Drop`` and ``ReadWrite`` uses release handles.

numpy and the ops' numpy semantics are imported where values are made: launch planning
(``with_values=False``) uses this module without them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Mapping

from refimpl.data import buffer_length, element_offsets, logical_values, sentinel
from refimpl.dtypes import DType
from refimpl.errors import TensorIdError
from refimpl.ir import OperationIr, TensorIr, TensorStatus
from refimpl.ops import OpKind
from refimpl.planner.launch.layout import contiguous_strides, reshape_action
from refimpl.stream import InputSpec, Stream

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "MEMORY_ALIGNMENT_BYTES",
    "Handle",
    "Memory",
    "UNFUSED_LAYOUTS",
    "unfused_view",
    "init_targets",
]

# cubecl-wgpu's memory alignment: WebGPU's default ``minStorageBufferOffsetAlignment``. A slice
# whose byte offsets are not multiples of it is copied instead of viewed.
MEMORY_ALIGNMENT_BYTES = 256


@dataclass(frozen=True, slots=True)
class Handle:
    """A tensor's view of a buffer: element ``idx`` lives at ``offset + sum(idx * strides)``."""

    buffer: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    dtype: DType

    def positions(self) -> np.ndarray:
        """The buffer position of every logical element (an int64 array of ``shape``)."""
        return self.offset + element_offsets(self.shape, self.strides)


def init_targets(stream: Stream) -> frozenset[int]:
    """Stream inputs an ``Init`` op creates (they are not live before it)."""
    return frozenset(item.desc.out.id for item in stream.ops if item.op.kind is OpKind.INIT)


class Memory:
    """Live handles and the buffers behind them."""

    def __init__(self, with_values: bool = True) -> None:
        self.with_values = with_values
        self.handles: dict[int, Handle] = {}
        self.sizes: dict[int, int] = {}
        self.data: dict[int, np.ndarray] = {}
        self.next_buffer = 0
        self.inputs: dict[int, InputSpec] = {}

    # --- copies (a launch that fails is rolled back by discarding its fork) --------------------

    def fork(self) -> Memory:
        """A copy sharing buffer data (planning never writes data)."""
        other = Memory(self.with_values)
        other.handles, other.sizes = dict(self.handles), dict(self.sizes)
        other.data, other.next_buffer = dict(self.data), self.next_buffer
        other.inputs = self.inputs
        return other

    def adopt(self, other: Memory) -> None:
        """Take ``other``'s state (commit a fork)."""
        self.handles, self.sizes, self.data = other.handles, other.sizes, other.data
        self.next_buffer = other.next_buffer

    # --- buffers and handles ------------------------------------------------------------------

    def alloc(self, shape: tuple[int, ...], dtype: DType,
              strides: tuple[int, ...] | None = None) -> Handle:
        """A fresh buffer laid out with ``strides`` (contiguous by default)."""
        strides = contiguous_strides(shape) if strides is None else tuple(strides)
        size = buffer_length(shape, strides)
        buffer = self.next_buffer
        self.next_buffer += 1
        self.sizes[buffer] = size
        if self.with_values:
            import numpy as np

            self.data[buffer] = np.full(size, sentinel(dtype), dtype=dtype.numpy)
        return Handle(buffer, tuple(shape), strides, 0, dtype)

    def register(self, tensor_id: int, handle: Handle) -> None:
        self.handles[tensor_id] = handle

    def handle(self, tensor_id: int) -> Handle:
        """The live handle of ``tensor_id`` (kept)."""
        try:
            return self.handles[tensor_id]
        except KeyError:
            raise TensorIdError(f"tensor {tensor_id} has no live handle") from None

    def take(self, tensor_id: int, status: TensorStatus) -> Handle:
        """burn ``get_handle``: a ``ReadWrite`` fetch removes the handle, ``ReadOnly`` keeps it."""
        handle = self.handle(tensor_id)
        if status is TensorStatus.ReadWrite:
            del self.handles[tensor_id]
        return handle

    def remove(self, tensor_id: int) -> None:
        self.handles.pop(tensor_id, None)

    def users(self, buffer: int) -> int:
        """How many live handles use ``buffer``."""
        return sum(1 for h in self.handles.values() if h.buffer == buffer)

    # --- values ---------------------------------------------------------------------------

    def read(self, handle: Handle) -> np.ndarray:
        """The logical (contiguous) values a handle sees."""
        import numpy as np

        return np.array(self.data[handle.buffer][handle.positions()], order="C")

    def write(self, handle: Handle, values: np.ndarray) -> None:
        """Store logical ``values`` through ``handle``."""
        self.data[handle.buffer][handle.positions()] = values

    def value(self, tensor_id: int) -> np.ndarray:
        return self.read(self.handle(tensor_id))

    def load_inputs(self, stream: Stream) -> None:
        """A buffer per stream input, laid out with its strides; ``Init`` targets wait."""
        self.inputs = dict(stream.inputs)
        deferred = init_targets(stream)
        for tensor_id in sorted(stream.inputs):
            if tensor_id in deferred:
                continue
            spec = stream.inputs[tensor_id]
            handle = self.alloc(spec.shape, spec.dtype, spec.strides)
            if self.with_values:
                self.write(handle, logical_values(spec, tensor_id))
            self.register(tensor_id, handle)

    # --- unfused ops ----------------------------------------------------------------------

    def run_unfused(self, op: OperationIr) -> None:
        """Execute one op as its own kernel: values (if kept), output layout, releases."""
        if op.op.kind is OpKind.DROP:
            self.remove(op.desc.tensor.id)
            return
        if op.op.kind is OpKind.INIT:
            self._init(op.desc.out)
            return
        reads = [t for t in op.inputs()]
        handles = {t.id: self.handle(t.id) for t in reads}
        out = op.desc.out
        view = unfused_view(op, handles)
        if view is not None:
            handle = view
        else:
            handle = self.alloc(out.shape, out.dtype)
            if self.with_values:
                import numpy as np

                from refimpl.semantics import NUMPY_IMPL

                env = {tid: self.read(h) for tid, h in handles.items()}
                with np.errstate(all="ignore"):
                    result = np.asarray(NUMPY_IMPL[op.name](op.desc, env))
                self.write(handle, result)
        for tensor in reads:
            if tensor.status is TensorStatus.ReadWrite:
                self.remove(tensor.id)
        self.register(out.id, handle)

    def _init(self, out: TensorIr) -> None:
        spec = self.inputs[out.id]
        handle = self.alloc(out.shape, out.dtype)
        if self.with_values:
            self.write(handle, logical_values(spec, out.id))
        self.register(out.id, handle)


# --- view layouts of burn-cubecl's metadata ops -------------------------------------------------

ViewFn = Callable[[OperationIr, Handle], "Handle | None"]


def _swap_dims(op: OperationIr, h: Handle) -> Handle:
    d = op.desc
    strides, shape = list(h.strides), list(h.shape)
    strides[d.dim1], strides[d.dim2] = strides[d.dim2], strides[d.dim1]
    shape[d.dim1], shape[d.dim2] = shape[d.dim2], shape[d.dim1]
    return replace(h, shape=tuple(shape), strides=tuple(strides))


def _permute(op: OperationIr, h: Handle) -> Handle:
    axes = op.desc.axes
    return replace(h, shape=tuple(h.shape[a] for a in axes),
                   strides=tuple(h.strides[a] for a in axes))


def _expand(op: OperationIr, h: Handle) -> Handle:
    target = op.desc.out.shape
    diff = len(target) - len(h.shape)
    strides = [0] * len(target)
    for i in range(diff, len(target)):
        source = h.shape[i - diff]
        strides[i] = h.strides[i - diff] if source == target[i] else 0
    return replace(h, shape=tuple(target), strides=tuple(strides))


def _reshape(op: OperationIr, h: Handle) -> Handle | None:
    action = reshape_action(h.shape, h.strides, op.desc.out.shape)
    if action.kind == "Recompute":
        return None
    return replace(h, shape=tuple(op.desc.out.shape), strides=action.strides)


def _slice(op: OperationIr, h: Handle) -> Handle | None:
    start = end = 0
    shape = list(h.shape)
    for i, (first, last) in enumerate(op.desc.ranges):
        start += h.strides[i] * first
        end += h.strides[i] * (shape[i] - last)
        shape[i] = last - first
    size = h.dtype.storage_bytes
    if (start * size) % MEMORY_ALIGNMENT_BYTES or (end * size) % MEMORY_ALIGNMENT_BYTES:
        return None
    return replace(h, shape=tuple(shape), offset=h.offset + start)


UNFUSED_LAYOUTS: Mapping[str, ViewFn] = {
    "SwapDims": _swap_dims,
    "Permute": _permute,
    "Expand": _expand,
    "Reshape": _reshape,
    "Slice": _slice,
}


def unfused_view(op: OperationIr, handles: Mapping[int, Handle]) -> Handle | None:
    """The output handle of a metadata op (sharing its input's buffer), or ``None`` when the
    op writes a fresh contiguous buffer."""
    view = UNFUSED_LAYOUTS.get(op.op.variant)
    if view is None or op.op.kind not in (OpKind.VIEW, OpKind.MOVEMENT):
        return None
    source = op.inputs()[0]
    result = view(op, handles[source.id])
    return None if result is None else replace(result, dtype=op.desc.out.dtype)
