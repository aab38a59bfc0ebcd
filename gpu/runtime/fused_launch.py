"""The host side of a fused launch: which kernel (the kernel cache), what it is bound to (the
signature) and the metadata words it reads (shapes, strides, the reference layout).

burn counterpart: cubecl's kernel cache (``KernelId`` from the comptime config and the
launch arguments' compilation info, notes §7.4) and the launch side of
``burn-cubecl-fusion``'s ``FuseTraceLauncher``/``ElemwiseRunner`` (``init_locals``' reference
layout, the launch count, notes §7.1). The reference is resolved as
``refimpl.fused_kernel.BlockRun._reference`` resolves it; each position covers ``width``
reference elements, ``ceil(numel / width)`` positions. A vector load or store at a computed
offset that would start inside another vector is refused with the interpreter's
``KernelError`` (the GPU would silently floor to the wrong elements).
"""

from __future__ import annotations

import os
import sys
from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

from refimpl.data import contiguous_strides
from refimpl.fused_kernel import KernelError
from refimpl.planner.launch.execute import check_covered
from refimpl.planner.launch.launch import (
    ConcreteLayout, FuseBlockConfig, Launch, ReshapedLayout, RuntimeLayout, ShapeLayout,
    SwapDimsLayout, config_id,
)
from refimpl.planner.launch.layout import swap_dims_transform, unsqueezed
from refimpl.planner.engine.trace import Input
from gpu.codegen.emit import FusedKernel, KernelSignature, TensorArg, VectorAccess, emit_block
from gpu.errors import GpuLimitError
from gpu.runtime.server import DEBUG_LOG_ENV

__all__ = ["KernelCache", "KERNEL_CACHE", "signature_of", "launch_words"]


# --- the kernel cache ---------------------------------------------------------------------------


class KernelCache:
    """Emitted kernels keyed by ``(config_id(config), signature)`` (an LRU dict), so a block
    seen on another shape is neither re-emitted nor recompiled."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[tuple[str, KernelSignature], FusedKernel] = OrderedDict()

    def kernel(self, config: FuseBlockConfig, signature: KernelSignature) -> FusedKernel:
        key = (config_id(config), signature)
        found = self._entries.get(key)
        if found is not None:
            self.hits += 1
            self._entries.move_to_end(key)
            return found
        self.misses += 1
        kernel = emit_block(config, signature)
        if os.environ.get(DEBUG_LOG_ENV) == "stdout":
            print(f"[fuselab] fused kernel {key[0]}\n  config: {config!r}\n"
                  f"  signature: {signature!r}", file=sys.stdout)
        self._entries[key] = kernel
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return kernel

    def __len__(self) -> int:
        return len(self._entries)


KERNEL_CACHE = KernelCache()


def signature_of(launch: Launch) -> KernelSignature:
    """The binding signature of a launch: storage dtypes (from the handles), vector sizes,
    broadcast flags, the input each aliased output is written into or views, and which
    handles start past element 0 of their buffer (only those read an offset word)."""
    plan = launch.plan
    inputs = tuple(TensorArg(h.dtype, i.vector_size, i.broadcasted, None, h.offset != 0)
                   for i, h in zip(plan.inputs, launch.input_handles))
    outputs = tuple(TensorArg(h.dtype, o.vector_size, False,
                              None if o.kind == "owned" else o.input_pos, h.offset != 0)
                    for o, h in zip(plan.outputs, launch.output_handles))
    return KernelSignature(inputs, outputs)


# --- the reference layout, host side (fused_kernel.BlockRun._reference) ---------------------


def _fixed(shape: Sequence[int], strides: Sequence[int]) -> tuple[int, ...]:
    """A size-1 dim's stride is at least 1 (the kernel divides by it)."""
    return tuple(max(s, 1) if d == 1 else s for d, s in zip(shape, strides))


def _broadcast_strides(shape: Sequence[int], strides: Sequence[int]) -> tuple[int, ...]:
    """A binding's strides as the kernel reads them: 0 along a size-1 dim. The index math
    reduces a coordinate modulo the dim first, so only the lane step of a lane-by-lane read
    (``io.rs`` ``read_input_aligned``: ``offset + lane * stride``) sees the difference:
    a tensor both read broadcast and through a view is not flagged broadcast, and its lanes
    must then stay on the one element of a size-1 vector axis."""
    return tuple(0 if d == 1 else s for d, s in zip(shape, strides))


def _reference(config: FuseBlockConfig, slots: Sequence[tuple], n_inputs: int,
               reshapes: Sequence[int], runtime_layouts: Sequence) -> tuple[tuple, tuple]:
    """Reference shape and strides (``init_locals``)."""
    rank, layout = config.rank, config.ref_layout

    def bound(arg: Any) -> tuple:
        return slots[arg.pos if isinstance(arg, Input) else n_inputs + arg.pos]
    if isinstance(layout, ConcreteLayout):
        _, shape, strides = bound(layout.arg)
        return shape, _fixed(shape, strides)
    if isinstance(layout, SwapDimsLayout):
        _, original, _ = bound(layout.arg)
        shape = tuple(original[swap_dims_transform(i, layout.dims)] for i in range(rank))
    elif isinstance(layout, ReshapedLayout):
        start = layout.reshape_pos * rank
        shape = tuple(reshapes[start:start + rank])
    elif isinstance(layout, ShapeLayout):
        shape = bound(layout.arg)[1]
    else:
        assert isinstance(layout, RuntimeLayout)
        shape, strides = runtime_layouts[layout.pos]
        return tuple(shape), _fixed(shape, strides)
    return shape, contiguous_strides(shape)


def launch_words(kernel: FusedKernel, launch: Launch, scalars: Sequence[int]) -> tuple[list, int]:
    """The metadata words of one launch and the number of positions that do work (each
    covers ``width`` reference elements: ``ceil(numel / width)``)."""
    plan, config = launch.plan, kernel.config
    rank = config.rank
    slots = []
    tensors = kernel.signature.inputs + kernel.signature.outputs
    for item, handle, tensor in zip(plan.inputs + plan.outputs,
                                    launch.input_handles + launch.output_handles, tensors):
        shape, strides = unsqueezed(item.shape, item.strides, rank)
        if handle.offset and not tensor.offset:
            raise ValueError(f"tensor {item.tensor}: buffer offset {handle.offset}, but the "
                             "kernel was emitted for offset 0 (see signature_of)")
        if handle.offset % item.vector_size:
            raise GpuLimitError(f"tensor {item.tensor}: buffer offset {handle.offset} is not a "
                                f"whole number of vec{item.vector_size}")
        slots.append((handle.offset, shape, strides))
    shape, strides = _reference(config, slots, len(plan.inputs), plan.reshapes,
                                plan.runtime_layouts)
    numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
    n_pos = -(-numel // config.width)
    check_covered(n_pos, [o.shape for o in plan.outputs])
    if kernel.vector_accesses:  # every position's first element, only when a check needs it
        first = np.arange(n_pos, dtype=np.int64) * config.width
        for access in kernel.vector_accesses:
            _check_aligned(access, first, strides, slots, plan.reshapes, kernel)
    slots = [(offset, dims, _broadcast_strides(dims, steps)) for offset, dims, steps in slots]
    words = kernel.layout.pack(n_pos, shape, strides, slots, plan.reshapes, scalars)
    return words, n_pos


def _check_aligned(access: VectorAccess, first: np.ndarray, ref_strides: Sequence[int],
                   slots: Sequence[tuple], reshapes: Sequence[int], kernel: FusedKernel) -> None:
    """The interpreter's refusal (``BlockRun._vectors``) of a vector load or store that
    starts inside another vector: the GPU would silently floor to the wrong elements."""
    offset, shape, strides = slots[access.slot]
    tensors = kernel.signature.inputs + kernel.signature.outputs
    vs = tensors[access.slot].vector_size
    if access.reshape is not None:
        dims = [reshapes[k] for k in access.reshape]
        linear, scale = np.zeros_like(first), 1
        for i in range(len(dims) - 1, -1, -1):
            linear += (first // ref_strides[i]) % dims[i] * scale
            scale *= dims[i]
        total = np.zeros_like(first)
        for i in range(len(shape) - 1, -1, -1):
            total += (linear % shape[i]) * strides[i]
            linear //= shape[i]
    else:
        total = np.zeros_like(first)
        for i in range(len(shape)):
            j = i if access.swap is None else swap_dims_transform(i, access.swap)
            total += (first // ref_strides[i]) % shape[j] * strides[j]
    if (total % vs).any():
        raise KernelError(f"misaligned vector access: a vector of {vs} starts inside another "
                          "(strides not a multiple of the vector size)")
