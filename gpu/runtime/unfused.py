"""Run one ``OperationIr`` as its own GPU kernel(s): the "fusion off" path.

burn counterpart: burn-cubecl's backend ops (``burn-cubecl/src/ops/*``: ``float_add`` →
``kernel_binop``, ``sum_dim`` → reduce, ``cat`` → one ``slice_assign`` per input, ...), which
is what a stream runs when burn-fusion is off or a block scores 0.

``run_op(device, op, inputs)`` takes the op's input tensors in field order (numpy arrays of
logical values, or ``DeviceTensor``s, e.g. strided ones) and returns the output as numpy;
``execute`` is the same on device tensors. Which kernel runs is decided by table: movement
and indexed ops by variant, everything else by ``OpKind``.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from refimpl.data import contiguous_strides
from refimpl.dtypes import DType
from refimpl.ir import OperationIr, ScalarOpIr
from refimpl.ops import OpKind
from refimpl.semantics import scalar_value
from gpu.codegen.elementwise import WIDTHS, ElementwiseKernel
from gpu.codegen.matmul import MatmulKernel
from gpu.codegen.module_ops import SCALARS as MODULE_SCALARS, ModuleKernel
from gpu.codegen.movement import CopyKernel, IndexKernel, bit_storage
from gpu.codegen.ops import WGSL_EXPR
from gpu.codegen.reduce import (REDUCERS, ArgKernel, ReduceDimKernel, ReduceFullKernel,
                                accumulator, identity_word_value)
from gpu.codegen.render import scalar_word
from gpu.errors import UnsupportedOpError
from gpu.runtime.buffers import DeviceTensor
from gpu.runtime.device import GpuDevice
from gpu.runtime.server import Runtime

__all__ = ["run_op", "execute", "launch"]

Runner = Callable[[Runtime, OperationIr, list[DeviceTensor]], DeviceTensor]


def launch(rt: Runtime, source: str, buffers: Sequence, words: Sequence[int], count: int,
           *, workgroups: int | None = None) -> None:
    """Dispatch ``source`` for ``count`` working invocations (nothing when 0)."""
    wg = rt.workgroup_size
    groups = workgroups if workgroups is not None else -(-count // wg)
    if groups == 0:
        return
    rt.dispatch(source, [*buffers, rt.words(words)], groups, workgroup_size=wg)


def _broadcast_strides(t: DeviceTensor, shape: Sequence[int]) -> tuple[int, ...]:
    """``t``'s strides over ``shape``: 0 on size-1 dims that grow and on new leading dims."""
    lead = len(shape) - len(t.shape)
    return (0,) * lead + tuple(s if size == full else 0 for size, s, full
                               in zip(t.shape, t.strides, shape[lead:]))


# --- element-wise ---------------------------------------------------------------------------

# Scalar operands are converted to the lhs dtype, except Clamp/MaskFill/Full (output dtype).
_SCALAR_DTYPE = {ScalarOpIr: lambda desc: desc.lhs.dtype}


def _scalars(op: OperationIr) -> tuple[tuple[DType, ...], tuple[int, ...]]:
    desc = op.desc
    dtype = _SCALAR_DTYPE.get(type(desc), lambda d: d.out.dtype)(desc)
    values = op.scalars()
    words = tuple(scalar_word(scalar_value(v, dtype), dtype) for v in values)
    return (dtype,) * len(values), words


def _elementwise(rt: Runtime, op: OperationIr, inputs: list[DeviceTensor]) -> DeviceTensor:
    out = op.desc.out
    scalar_dtypes, words = _scalars(op)
    dense = all(t.is_contiguous and t.shape == out.shape for t in inputs)
    numel = int(np.prod(out.shape, dtype=np.int64))
    width = next(w for w in WIDTHS if numel % w == 0) if dense else 1
    kernel = ElementwiseKernel(op.name, tuple(t.dtype for t in inputs), scalar_dtypes,
                               out.dtype, len(out.shape), width, dense)
    result = rt.empty(out.shape, out.dtype)
    views = [(t.offset, _broadcast_strides(t, out.shape)) for t in inputs]
    count = numel // width
    launch(rt, kernel.source(), [t.buffer for t in inputs] + [result.buffer],
           kernel.words(count, out.shape, views, words), count)
    return result


# --- movement -------------------------------------------------------------------------------


def copy_into(rt: Runtime, src: DeviceTensor, shape: Sequence[int], src_view: tuple,
              dst: DeviceTensor, dst_view: tuple) -> None:
    """``dst[dst_view(c)] = src[src_view(c)]`` for every coordinate ``c`` of ``shape``."""
    kernel = CopyKernel(bit_storage(src.dtype), len(shape))
    count = int(np.prod(shape, dtype=np.int64))
    launch(rt, kernel.source(), [src.buffer, dst.buffer],
           kernel.schema.pack(count, shape, [src_view, dst_view]), count)


def _copy_op(view: Callable) -> Runner:
    """A movement op: ``view(op, src) -> (shape, offset, strides)`` of the read."""
    def run(rt: Runtime, op: OperationIr, inputs: list[DeviceTensor]) -> DeviceTensor:
        src, out = inputs[0], op.desc.out
        shape, offset, strides = view(op, src)
        result = rt.empty(out.shape, out.dtype)
        copy_into(rt, src, shape, (offset, strides), result,
                  (0, contiguous_strides(shape)))
        return result
    return run


def _permuted(src: DeviceTensor, axes: Sequence[int]) -> tuple:
    return (tuple(src.shape[a] for a in axes), src.offset, tuple(src.strides[a] for a in axes))


def _swap_axes(op: OperationIr, src: DeviceTensor) -> tuple:
    axes = list(range(len(src.shape)))
    axes[op.desc.dim1], axes[op.desc.dim2] = axes[op.desc.dim2], axes[op.desc.dim1]
    return _permuted(src, axes)


def _flipped(op: OperationIr, src: DeviceTensor) -> tuple:
    offset, strides = src.offset, list(src.strides)
    for a in op.desc.axes:
        offset += max(src.shape[a] - 1, 0) * strides[a]
        strides[a] = -strides[a]
    return src.shape, offset, tuple(strides)


def _sliced(op: OperationIr, src: DeviceTensor) -> tuple:
    ranges = list(op.desc.ranges) + [(0, n) for n in src.shape[len(op.desc.ranges):]]
    offset = src.offset + sum(start * s for (start, _), s in zip(ranges, src.strides))
    return tuple(end - start for start, end in ranges), offset, src.strides


def _expanded(op: OperationIr, src: DeviceTensor) -> tuple:
    shape = op.desc.out.shape
    return shape, src.offset, _broadcast_strides(src, shape)


def _reshape(rt: Runtime, op: OperationIr, inputs: list[DeviceTensor]) -> DeviceTensor:
    """Row-major order is kept: copy in the input's shape, the output is that buffer."""
    src, out = inputs[0], op.desc.out
    result = rt.empty(out.shape, out.dtype)
    copy_into(rt, src, src.shape, (src.offset, src.strides), result,
              (0, contiguous_strides(src.shape)))
    return result


def _cat(rt: Runtime, op: OperationIr, inputs: list[DeviceTensor]) -> DeviceTensor:
    """One copy per input into its segment of the output (never more than 3 bindings)."""
    out, dim = op.desc.out, op.desc.dim
    result = rt.empty(out.shape, out.dtype)
    strides, start = contiguous_strides(out.shape), 0
    for src in inputs:
        copy_into(rt, src, src.shape, (src.offset, src.strides), result,
                  (start * strides[dim], strides))
        start += src.shape[dim]
    return result


def _indexed(index_view: Callable[[DeviceTensor, int, int], tuple[int, ...]]) -> Runner:
    """Gather / Select: read the input at the output coordinates, ``dim`` replaced."""
    def run(rt: Runtime, op: OperationIr, inputs: list[DeviceTensor]) -> DeviceTensor:
        src, indices = inputs
        out, dim = op.desc.out, op.desc.dim
        rank = len(out.shape)
        src_strides = tuple(0 if d == dim else s for d, s in enumerate(src.strides))
        kernel = IndexKernel(bit_storage(src.dtype), indices.dtype, rank)
        result = rt.empty(out.shape, out.dtype)
        count = int(np.prod(out.shape, dtype=np.int64))
        views = [(src.offset, src_strides), (indices.offset, index_view(indices, dim, rank))]
        launch(rt, kernel.source(), [src.buffer, indices.buffer, result.buffer],
               kernel.schema.pack(count, out.shape, views, [src.strides[dim]]), count)
        return result
    return run


def _gather_index(indices: DeviceTensor, dim: int, rank: int) -> tuple[int, ...]:
    return indices.strides


def _select_index(indices: DeviceTensor, dim: int, rank: int) -> tuple[int, ...]:
    return tuple(indices.strides[0] if d == dim else 0 for d in range(rank))


# --- reductions -----------------------------------------------------------------------------


def _reduce_dim(rt: Runtime, op: OperationIr, inputs: list[DeviceTensor]) -> DeviceTensor:
    src, out, axis = inputs[0], op.desc.out, op.desc.axis
    variant = op.op.variant.removesuffix("Dim")
    rank = len(out.shape)
    scalars = [src.shape[axis], src.strides[axis]]
    if variant in ("ArgMax", "ArgMin"):
        kernel = ArgKernel(variant, src.dtype, out.dtype, rank)
    else:
        kernel = ReduceDimKernel(variant, src.dtype, out.dtype, rank)
        acc = accumulator(REDUCERS[variant], src.dtype)
        scalars.append(_identity_word(variant, acc))
    result = rt.empty(out.shape, out.dtype)
    count = int(np.prod(out.shape, dtype=np.int64))
    launch(rt, kernel.source(), [src.buffer, result.buffer],
           kernel.schema.pack(count, out.shape, [(src.offset, src.strides)], scalars), count)
    return result


def _identity_word(variant: str, acc: DType) -> int:
    reducer = REDUCERS[variant]
    if reducer.identity in ("zero", "one"):
        return 0
    return scalar_word(identity_word_value(reducer, acc), acc)


def _reduce_full(rt: Runtime, op: OperationIr, inputs: list[DeviceTensor]) -> DeviceTensor:
    """Partials per workgroup (when more than one is worth it), then one final workgroup."""
    src, out, variant = inputs[0], op.desc.out, op.op.variant
    acc = accumulator(REDUCERS[variant], src.dtype)
    n, wg = src.numel, rt.workgroup_size
    scalars = [_identity_word(variant, acc), n]
    groups = min(-(-n // (wg * 4)), 1024)
    result = rt.empty(out.shape, out.dtype)
    if groups <= 1:
        final = ReduceFullKernel(variant, src.dtype, out.dtype, len(src.shape), True)
        launch(rt, final.source(), [src.buffer, result.buffer],
               final.schema.pack(n, src.shape, [(src.offset, src.strides)], scalars), n,
               workgroups=1)
        return result
    partial = ReduceFullKernel(variant, src.dtype, acc, len(src.shape), False)
    partials = rt.empty((groups,), acc)
    launch(rt, partial.source(), [src.buffer, partials.buffer],
           partial.schema.pack(n, src.shape, [(src.offset, src.strides)], scalars), n,
           workgroups=groups)
    final = ReduceFullKernel(variant, acc, out.dtype, 1, True)
    launch(rt, final.source(), [partials.buffer, result.buffer],
           final.schema.pack(groups, (groups,), [(0, (1,))], scalars), groups, workgroups=1)
    return result


# --- matmul ---------------------------------------------------------------------------------


def _matmul(rt: Runtime, op: OperationIr, inputs: list[DeviceTensor]) -> DeviceTensor:
    lhs, rhs = inputs
    out = op.desc.out
    rank = len(out.shape)
    batch = tuple(out.shape[:-2])
    lhs_b = _broadcast_strides(lhs.view(lhs.shape[:-2], lhs.strides[:-2]), batch)
    rhs_b = _broadcast_strides(rhs.view(rhs.shape[:-2], rhs.strides[:-2]), batch)
    views = [(lhs.offset, lhs_b + (lhs.strides[-2], 0)), (rhs.offset, rhs_b + (0, rhs.strides[-1]))]
    kernel = MatmulKernel(out.dtype, rank)
    result = rt.empty(out.shape, out.dtype)
    count = int(np.prod(out.shape, dtype=np.int64))
    scalars = [lhs.shape[-1], lhs.strides[-1], rhs.strides[-2]]
    launch(rt, kernel.source(), [lhs.buffer, rhs.buffer, result.buffer],
           kernel.schema.pack(count, out.shape, views, scalars), count)
    return result


# --- module ops (pooling, interpolate) ---------------------------------------------------


def _lowest(dtype: DType) -> int:
    """The word of the dtype's lowest value (max pooling's start: padding never wins)."""
    if dtype.is_float:
        return scalar_word(np.asarray(-np.inf, dtype.numpy), dtype)
    return scalar_word(np.iinfo(dtype.numpy).min, dtype)


def _module(rt: Runtime, op: OperationIr, inputs: list[DeviceTensor]) -> DeviceTensor:
    """One invocation per output element; window sizes and input extents as words."""
    src, desc, variant = inputs[0], op.desc, op.op.variant
    option = {"AvgPool2d": lambda: "include_pad" if desc.count_include_pad else "exclude_pad",
              "Interpolate": lambda: desc.mode}.get(variant, lambda: "")()
    out = desc.out
    kernel = ModuleKernel(variant, src.dtype, len(out.shape), option)
    values = {"in_h": src.shape[-2], "in_w": src.shape[-1]}
    if variant in ("MaxPool2d", "AvgPool2d"):
        values.update(zip(("kh", "kw"), desc.kernel_size))
        values.update(zip(("sh", "sw"), desc.stride))
        values.update(zip(("ph", "pw"), desc.padding))
    if variant == "MaxPool2d":
        values.update(zip(("dh", "dw"), desc.dilation))
        values["lowest"] = _lowest(src.dtype)
    scalars = [values[name] for name in MODULE_SCALARS[variant]]
    result = rt.empty(out.shape, out.dtype)
    count = int(np.prod(out.shape, dtype=np.int64))
    view = (src.offset, src.strides)
    launch(rt, kernel.source(), [src.buffer, result.buffer],
           kernel.schema.pack(count, out.shape, [view], scalars), count)
    return result


# --- the table ------------------------------------------------------------------------------

_BY_VARIANT: dict[str, Runner] = {
    "Reshape": _reshape,
    "SwapDims": _copy_op(_swap_axes),
    "Permute": _copy_op(lambda op, src: _permuted(src, op.desc.axes)),
    "Flip": _copy_op(_flipped),
    "Expand": _copy_op(_expanded),
    "Slice": _copy_op(_sliced),
    "Cat": _cat,
    "Gather": _indexed(_gather_index),
    "Select": _indexed(_select_index),
    "Matmul": _matmul,
    "MaxPool2d": _module,
    "AvgPool2d": _module,
    "AdaptiveAvgPool2d": _module,
    "Interpolate": _module,
}

_BY_KIND: dict[OpKind, Runner] = {
    OpKind.ELEMENTWISE: _elementwise,
    OpKind.OTHER: _elementwise,
    OpKind.REDUCE_DIM: _reduce_dim,
    OpKind.REDUCE_FULL: _reduce_full,
}


def _runner(op: OperationIr) -> Runner:
    runner = _BY_VARIANT.get(op.op.variant) or _BY_KIND.get(op.op.kind)
    if runner is None or (runner is _elementwise and op.name not in WGSL_EXPR):
        raise UnsupportedOpError(f"{op.name} has no GPU kernel ({op.op.kind.name.lower()} op)")
    return runner


def _check(device: GpuDevice, op: OperationIr, inputs: Sequence) -> None:
    """Dtypes the device holds; inputs that match the op's snapshots (shape, dtype)."""
    for t in op.nodes():
        device.check_dtype(t.dtype, f"{op.name} tensor {t.id}")
    if len(inputs) != len(op.inputs()):
        raise ValueError(f"{op.name} reads {len(op.inputs())} tensors, got {len(inputs)}")
    for given, snapshot in zip(inputs, op.inputs()):
        shape = tuple(given.shape)
        dtype_ok = given.dtype is snapshot.dtype if isinstance(given, DeviceTensor) else \
            np.asarray(given).dtype == snapshot.dtype.numpy
        if shape != snapshot.shape or not dtype_ok:
            raise ValueError(f"{op.name}: tensor {snapshot.id} is {snapshot.dtype.value}"
                             f"{list(snapshot.shape)}, got {given.dtype}{list(shape)}")


def execute(device: GpuDevice, op: OperationIr, inputs: Sequence[DeviceTensor]) -> DeviceTensor:
    """Run ``op`` on device tensors; the output is a new contiguous device tensor."""
    _check(device, op, inputs)
    return _runner(op)(device.runtime, op, list(inputs))


def run_op(device: GpuDevice, op: OperationIr,
           inputs: Sequence[np.ndarray | DeviceTensor]) -> np.ndarray:
    """Run ``op`` on its input tensors (field order) and read the output back."""
    _check(device, op, inputs)
    rt = device.runtime
    tensors = [t if isinstance(t, DeviceTensor) else rt.upload(t, ir.dtype)
               for t, ir in zip(inputs, op.inputs())]
    return rt.download(_runner(op)(rt, op, tensors))
