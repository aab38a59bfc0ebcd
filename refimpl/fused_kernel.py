"""The fused element-wise kernel, emulated on numpy: one ``FuseBlockConfig`` run over every
kernel position and lane, reading and writing buffers through the kernel's own index math.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/codegen/kernel.rs`` (``init_locals``,
``fuse``, the per-op functions, ``gather``, ``select_indices``, ``concat``) and
``engine/codegen/io.rs`` (``read``, ``read_input``, ``read_input_aligned``, ``write``,
``write_output_aligned``, ``get_offset``, ``index_offset_with_layout``, ``reshaped_index``);
``optim/elemwise/optimization.rs`` (``elemwise_fuse``: ``pos < ref_len``). Notes §7.

Values are arrays of shape ``(positions, width)``: row ``p`` is what invocation ``p`` holds in
its ``Vector<_, width>``; lane ``l`` of position ``p`` is reference element ``e = p*width + l``,
whose coordinates are ``(e // ref_strides[i]) % ref_shape[i]``. A tensor is read

* as one vector (its vector size is the width): at vector ``p`` when its layout info is
  ``IsRef``/``SameAsRef``, else at its first element's offset over its vector size (an offset
  inside a vector raises ``KernelError``: loading it would read across rows);
* replicated (a broadcast tensor, vector size 1): the element of the first lane;
* element by element otherwise (burn's *aligned* path).

Writes mirror reads; locals live per position and lane; multi-block values (reduce) pass
between blocks by coordinates. Positions run to ``ceil(numel / width)``; any access outside
a binding raises ``KernelError``, and so does an in-place write another position reads.

Where fuselab computes differently from burn's kernel (burn's plan is unchanged; its vector
sizes and layouts are what the emulation checks):

* a position covers ``width`` reference elements; burn steps by the reference binding's
  vector size, which is narrower when an in-place output inherits a narrower input's size
  (positions then overlap);
* the aligned path reads and writes each lane at its own offset; burn steps ``stride[axis]``
  from the first lane (the GPU launch zeroes a size-1 dim's stride, ``gpu.runtime.fused_launch``);
* ``Gather``/``Select``/``Cat`` address each lane from its own coordinates taken modulo the
  op's output shape; burn steps the lanes along the last dim from the first lane and takes
  coordinates modulo the block's reference shape, which reads out of bounds when the op's
  output is broadcast in its block or the reference shape grew (``refimpl.planner`` keeps
  burn's ``output_is_compatible`` growing it before a refusal);
* a ``Select``'s indices are read through their strides (burn: contiguous);
* a view flagged ``broadcasted`` (size 1 along its last dim) replicates its first lane only
  when the block vectorises along its last dim (``FuseBlockConfig.view_replicated``); burn
  replicates it along any vector axis, where the view may vary across lanes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping

import numpy as np

from refimpl.dtypes import DType, DTypeClass
from refimpl.planner.launch.handles import Handle, Memory
from refimpl.planner.launch.launch import (
    ConcreteLayout, FuseBlockConfig, Launch, ReshapedLayout, RuntimeLayout, ShapeLayout,
    SwapDimsLayout,
)
from refimpl.planner.launch.execute import check_covered
from refimpl.planner.launch.layout import contiguous_strides, swap_dims_transform, unsqueezed
from refimpl.planner.engine.trace import (
    BlockLocal, FuseArg, FuseOp, FuseType, Input, InputReshaped, InputSwapDims, LayoutInfo,
    Literal, MultiBlockGlobal, MultiBlockLocal, Output, Scalar, ScalarShape,
)
from refimpl.semantics import BINARY, UNARY, convert

__all__ = ["KernelError", "FUSE_TYPE_DTYPE", "Binding", "BlockRun", "run_block", "seed_lanes",
           "gather_lanes", "shared_values"]


class KernelError(RuntimeError):
    """The emulated kernel touched memory outside a binding, or raced on an aliased buffer."""


FUSE_TYPE_DTYPE: Mapping[FuseType, DType] = MappingProxyType({
    FuseType.F64: DType.F64, FuseType.F32: DType.F32, FuseType.Flex32: DType.F32,
    FuseType.F16: DType.F16, FuseType.I64: DType.I64, FuseType.I32: DType.I32,
    FuseType.I16: DType.I16, FuseType.I8: DType.I8, FuseType.U64: DType.U64,
    FuseType.U32: DType.U32, FuseType.U16: DType.U16, FuseType.U8: DType.U8,
})


def _as(values: np.ndarray, ty: FuseType) -> np.ndarray:
    """``Vector::cast_from``: a numeric conversion into ``ty`` (bool becomes 0/1)."""
    return convert(np.asarray(values), FUSE_TYPE_DTYPE[ty])


@dataclass(frozen=True, slots=True)
class Binding:
    """A bound tensor as the kernel sees it: shape/strides at the kernel rank, vector size,
    broadcast flag, and the handle (buffer and element offset) behind it."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    vector_size: int
    broadcasted: bool
    handle: Handle


@dataclass
class BlockRun:
    """One block's emulation state: reference, positions, locals."""

    config: FuseBlockConfig
    inputs: tuple[Binding, ...]
    outputs: tuple[Binding, ...]
    memory: Memory
    scalars: tuple[np.ndarray, ...]
    reshapes: tuple[int, ...]
    runtime_layouts: tuple
    locals: dict = field(default_factory=dict)
    registry: dict = field(default_factory=dict)  # multi-block values written here (lanes)
    shared: Mapping = field(default_factory=dict)  # ... written by earlier blocks (logical)
    accesses: list = field(default_factory=list)  # (buffer, addresses, kind) for race checks

    def __post_init__(self) -> None:
        self.ref_shape, self.ref_strides = self._reference()
        numel = int(np.prod(self.ref_shape, dtype=np.int64)) if self.ref_shape else 1
        width = self.config.width
        self.ref_vs = width  # a position covers `width` reference elements (see module doc)
        self.n_pos = -(-numel // width)
        lanes = np.arange(width, dtype=np.int64)
        self.elements = np.arange(self.n_pos, dtype=np.int64)[:, None] * self.ref_vs + lanes

    # --- reference (init_locals) ------------------------------------------------------------

    def _reference(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Reference shape and strides (a size-1 dim's stride is at least 1)."""
        rank, layout = self.config.rank, self.config.ref_layout
        if isinstance(layout, ConcreteLayout):
            binding = self._bound(layout.arg)
            strides = tuple(max(s, 1) if d == 1 else s
                            for d, s in zip(binding.shape, binding.strides))
            return binding.shape, strides
        if isinstance(layout, SwapDimsLayout):
            binding = self._bound(layout.arg)
            shape = tuple(binding.shape[swap_dims_transform(i, layout.dims)] for i in range(rank))
        elif isinstance(layout, ReshapedLayout):
            start = layout.reshape_pos * rank
            shape = tuple(self.reshapes[start:start + rank])
        elif isinstance(layout, ShapeLayout):
            shape = self._bound(layout.arg).shape
        else:
            assert isinstance(layout, RuntimeLayout)
            shape, strides = self.runtime_layouts[layout.pos]
            return tuple(shape), tuple(max(s, 1) if d == 1 else s
                                       for d, s in zip(shape, strides))
        return shape, contiguous_strides(shape)

    def _bound(self, arg: FuseArg) -> Binding:
        return self.inputs[arg.pos] if isinstance(arg, Input) else self.outputs[arg.pos]

    # --- index math ---------------------------------------------------------------------------

    def coords(self, elements: np.ndarray, dims: range | None = None) -> list[np.ndarray]:
        """Reference coordinate of ``elements`` along each dim (all dims by default)."""
        dims = range(self.config.rank) if dims is None else dims
        return [(elements // self.ref_strides[i]) % self.ref_shape[i] for i in dims]

    def offset(self, b: Binding, elements: np.ndarray, dims: range | None = None,
               swap: tuple[int, int] | None = None) -> np.ndarray:
        """Element offset of ``b`` for reference ``elements`` (``index_offset_with_layout``)."""
        dims = range(self.config.rank) if dims is None else dims
        total = np.zeros_like(elements)
        for i in dims:
            j = i if swap is None else swap_dims_transform(i, swap)
            total = total + ((elements // self.ref_strides[i]) % b.shape[j]) * b.strides[j]
        return total

    def reshaped_offset(self, b: Binding, elements: np.ndarray,
                        shape_args: tuple[ScalarShape, ...]) -> np.ndarray:
        """``reshaped_index`` then ``reshaped_index_to_original_index`` (elements)."""
        rank = self.config.rank
        linear, stride = np.zeros_like(elements), 1
        for i in range(rank - 1, -1, -1):
            dim = self.reshapes[shape_args[i].index]
            linear = linear + ((elements // self.ref_strides[i]) % dim) * stride
            stride *= dim
        total, remaining = np.zeros_like(elements), linear
        for i in range(rank - 1, -1, -1):
            total = total + (remaining % b.shape[i]) * b.strides[i]
            remaining = remaining // b.shape[i]
        return total

    # --- memory access --------------------------------------------------------------------

    def load(self, b: Binding, element_offsets: np.ndarray) -> np.ndarray:
        size = self.memory.sizes[b.handle.buffer] - b.handle.offset
        if element_offsets.size and (element_offsets.min() < 0 or element_offsets.max() >= size):
            raise KernelError(f"read outside binding (buffer {b.handle.buffer}, "
                              f"{size} elements)")
        address = b.handle.offset + element_offsets
        self.accesses.append((b.handle.buffer, np.broadcast_to(address, self.elements.shape),
                              "read"))
        return self.memory.data[b.handle.buffer][address]

    def store(self, b: Binding, element_offsets: np.ndarray, values: np.ndarray) -> None:
        size = self.memory.sizes[b.handle.buffer] - b.handle.offset
        if not element_offsets.size:
            return
        if element_offsets.min() < 0 or element_offsets.max() >= size:
            raise KernelError(f"write outside binding (buffer {b.handle.buffer}, "
                              f"{size} elements)")
        address = np.broadcast_to(b.handle.offset + element_offsets, self.elements.shape)
        self.accesses.append((b.handle.buffer, address, "write"))
        data = self.memory.data[b.handle.buffer]
        data[address.reshape(-1)] = convert(np.broadcast_to(values, address.shape).reshape(-1),
                                            b.handle.dtype)

    def _vector_base(self, b: Binding, layout: LayoutInfo, positions: np.ndarray,
                     swap=None, reshape=None) -> np.ndarray:
        """Vector index of a read or a same-width write at each position."""
        if layout in (LayoutInfo.IsRef, LayoutInfo.SameAsRef):
            return positions
        first = positions * self.ref_vs
        if reshape is not None:
            return self._vectors(b, self.reshaped_offset(b, first, reshape))
        return self._vectors(b, self.offset(b, first, swap=swap))

    @staticmethod
    def _vectors(b: Binding, element_offsets: np.ndarray) -> np.ndarray:
        """Element offsets → vector index. burn floors; an offset inside a vector would load
        the wrong elements, so the emulation refuses it."""
        if b.vector_size > 1 and (element_offsets % b.vector_size).any():
            raise KernelError(f"misaligned vector access: a vector of {b.vector_size} starts "
                              "inside another (strides not a multiple of the vector size)")
        return element_offsets // b.vector_size

    def read_global(self, b: Binding, layout: LayoutInfo, broadcasted: bool,
                    swap=None, reshape=None) -> np.ndarray:
        """``read_input`` / ``read_input_aligned`` for every position and lane."""
        width, positions = self.config.width, np.arange(self.n_pos, dtype=np.int64)[:, None]
        lanes = np.arange(width, dtype=np.int64)
        if not broadcasted and b.vector_size != width:
            # aligned: one element per lane, each at its own offset
            if reshape is not None:
                return self.load(b, self.reshaped_offset(b, self.elements, reshape))
            if layout in (LayoutInfo.IsRef, LayoutInfo.SameAsRef):
                return self.load(b, self.elements)  # laid out like the reference
            return self.load(b, self.offset(b, self.elements, swap=swap))
        base = self._vector_base(b, layout, positions, swap, reshape)
        if b.vector_size == width:
            return self.load(b, base * b.vector_size + lanes)
        return np.broadcast_to(self.load(b, base * b.vector_size), self.elements.shape)

    # --- FuseArg read / write ---------------------------------------------------------------

    def read(self, arg: FuseArg, ty: FuseType) -> np.ndarray:
        """The value of ``arg`` at every position and lane, converted to ``ty`` (a contiguous
        array: numpy's math loops may round differently on strided data)."""
        values = np.broadcast_to(self._read_raw(arg), self.elements.shape)
        return np.array(_as(values, ty), order="C", copy=True)

    def _read_raw(self, arg: FuseArg) -> np.ndarray:
        if isinstance(arg, Input):
            b = self.inputs[arg.pos]
            return self.read_global(b, arg.layout, b.broadcasted)
        if isinstance(arg, InputSwapDims):
            b = self.inputs[arg.original.pos]
            return self.read_global(b, arg.original.layout,
                                    self.config.view_replicated(arg.broadcasted), swap=arg.dims)
        if isinstance(arg, InputReshaped):
            b = self.inputs[arg.original.pos]
            return self.read_global(b, arg.original.layout,
                                    self.config.view_replicated(arg.broadcasted), reshape=arg.shape)
        if isinstance(arg, Output):
            return self._read_output(arg)
        if isinstance(arg, BlockLocal):
            return self.locals[arg]
        if isinstance(arg, (MultiBlockLocal, MultiBlockGlobal)):
            if arg.pos in self.registry:
                return self.registry[arg.pos]
            return seed_lanes(self, self.shared[arg.pos])
        if isinstance(arg, Scalar):
            return self.scalars[arg.index]
        if isinstance(arg, Literal):
            return _as(np.array(arg.value), arg.ty)
        raise KernelError(f"cannot read {arg!r}")

    def _read_output(self, arg: Output) -> np.ndarray:
        b = self.outputs[arg.pos]
        positions = np.arange(self.n_pos, dtype=np.int64)[:, None]
        base = self._vector_base(b, arg.layout, positions)
        if b.vector_size == self.config.width:
            return self.load(b, base * b.vector_size + np.arange(self.config.width))
        if b.vector_size == 1:
            return np.broadcast_to(self.load(b, base), self.elements.shape)
        raise KernelError("an output read back with a vector size that is not the width")

    def write(self, arg: FuseArg, values: np.ndarray) -> None:
        values = np.broadcast_to(values, self.elements.shape)
        if isinstance(arg, BlockLocal):
            self.locals[arg] = _as(values, arg.ty)
        elif isinstance(arg, (MultiBlockLocal, MultiBlockGlobal)):
            self.registry[arg.pos] = _as(values, arg.ty)
        elif isinstance(arg, Output):
            self._write_output(arg, values)
        else:
            raise KernelError(f"cannot write into {arg!r}")

    def _write_output(self, arg: Output, values: np.ndarray) -> None:
        b, width = self.outputs[arg.pos], self.config.width
        positions = np.arange(self.n_pos, dtype=np.int64)[:, None]
        lanes = np.arange(width, dtype=np.int64)
        if b.vector_size == width:
            base = self._vector_base(b, arg.layout, positions)
            self.store(b, base * b.vector_size + lanes, values)
        elif arg.layout in (LayoutInfo.IsRef, LayoutInfo.SameAsRef):
            self.store(b, self.elements, values)
        else:
            self.store(b, self.offset(b, self.elements), values)

    # --- the op list ------------------------------------------------------------------------

    def run(self) -> None:
        for op in self.config.ops:
            _OPS.get(op.name, _elementwise)(self, op)
        self._check_races()

    def _check_races(self) -> None:
        """An address written by one position must not be read by another (in-place)."""
        positions = np.broadcast_to(np.arange(self.n_pos)[:, None], self.elements.shape)
        for buffer, w_addr, kind in self.accesses:
            if kind != "write":
                continue
            order = np.argsort(w_addr.reshape(-1), kind="stable")
            written, writer = w_addr.reshape(-1)[order], positions.reshape(-1)[order]
            for buf, r_addr, r_kind in self.accesses:
                if r_kind != "read" or buf != buffer or not written.size:
                    continue
                address, reader = r_addr.reshape(-1), positions.reshape(-1)
                low = np.minimum(np.searchsorted(written, address, "left"), written.size - 1)
                high = np.searchsorted(written, address, "right") - 1
                hit = written[low] == address
                clash = hit & ((writer[low] != reader) | (writer[np.maximum(high, 0)] != reader))
                if clash.any():
                    k = int(np.argmax(clash))
                    raise KernelError(f"position {int(reader[k])} reads address "
                                      f"{int(address[k])} that another position writes in place")


# --- op semantics -------------------------------------------------------------------------------

_COMPARISONS = frozenset({"Equal", "Lower", "Greater", "LowerEqual", "GreaterEqual"})


def _cls(ty: FuseType) -> DTypeClass:
    return FUSE_TYPE_DTYPE[ty].cls


def _elementwise(run: BlockRun, op: FuseOp) -> None:
    """Unary and binary ops: compute in the lhs (binary) or output (unary) precision."""
    args = op.args
    if hasattr(args, "lhs"):
        ty = args.lhs.precision()
        result = BINARY[op.name][_cls(ty)](run.read(args.lhs, ty), run.read(args.rhs, ty))
    elif op.name == "Assign":
        result = run.read(args.input, args.out.precision())
    else:
        ty = args.out.precision()
        result = UNARY[op.name][_cls(ty)](run.read(args.input, ty))
    run.write(args.out, result)


def _clamp(run: BlockRun, op: FuseOp) -> None:
    a, ty = op.args, op.args.out.precision()
    run.write(a.out, np.minimum(np.maximum(run.read(a.input, ty), run.read(a.min, ty)),
                                run.read(a.max, ty)))


def _conditional_assign(run: BlockRun, op: FuseOp) -> None:
    a, ty = op.args, op.args.out.precision()
    cond = run.read(a.cond, a.cond.precision()) != 0
    run.write(a.out, np.where(cond, run.read(a.lhs, ty), run.read(a.rhs, ty)))


def _index_values(run: BlockRun, b: Binding, offsets: np.ndarray) -> np.ndarray:
    return run.load(b, offsets).astype(np.int64)


def _op_coords(run: BlockRun, shape: tuple[int, ...]) -> list[np.ndarray]:
    """Each lane's coordinates in an op's own output ``shape``: the reference coordinates
    reduced modulo it (an output broadcast in its block repeats)."""
    return [c % n for c, n in zip(run.coords(run.elements), shape)]


def _at(b: Binding, coords: list[np.ndarray], skip: int | None = None) -> np.ndarray:
    """Element offset of ``coords`` in ``b`` (dim ``skip`` left out)."""
    total = np.zeros_like(coords[0])
    for i, (c, n, s) in enumerate(zip(coords, b.shape, b.strides)):
        if i != skip:
            total = total + (c % n) * s
    return total


def _gather(run: BlockRun, op: FuseOp) -> None:
    """``out[c] = input[c with c[dim] = indices[c]]``."""
    a = op.args
    src, idx = run.inputs[a.input.pos], run.inputs[a.indices.pos]
    coords = _op_coords(run, idx.shape)
    offsets = _index_values(run, idx, _at(idx, coords))
    element = _at(src, coords, skip=a.dim) + offsets * src.strides[a.dim]
    run.write(a.output, _as(run.load(src, element), a.output.precision()))


def _select(run: BlockRun, op: FuseOp) -> None:
    """``out[c] = input[c with c[dim] = indices[c[dim]]]`` (1-D indices)."""
    a = op.args
    src, idx = run.inputs[a.input.pos], run.inputs[a.indices.pos]
    shape = list(src.shape)
    shape[a.dim] = idx.shape[-1]
    coords = _op_coords(run, tuple(shape))
    offsets = _index_values(run, idx, coords[a.dim] * idx.strides[-1])
    element = _at(src, coords, skip=a.dim) + offsets * src.strides[a.dim]
    run.write(a.output, _as(run.load(src, element), a.output.precision()))


def _cat(run: BlockRun, op: FuseOp) -> None:
    """Each lane reads the input whose segment along ``dim`` holds its coordinate."""
    a = op.args
    parts = [run.inputs[arg.pos] for arg in a.inputs]
    shape = list(parts[0].shape)
    shape[a.dim] = sum(b.shape[a.dim] for b in parts)
    coords = _op_coords(run, tuple(shape))
    coord = coords[a.dim]
    result, filled, start = None, np.zeros(run.elements.shape, dtype=bool), 0
    for b in parts:
        begin, start = start, start + b.shape[a.dim]
        inside = (coord >= begin) & (coord < start)
        if not inside.any():  # e.g. an empty input: the kernel's masked read is discarded
            continue
        element = (coord - begin) * b.strides[a.dim] + _at(b, coords, skip=a.dim)
        values = run.load(b, np.where(inside, element, 0))
        result = values if result is None else np.where(inside, values, result)
        filled |= inside
    if not filled.all():
        raise KernelError("cat lane outside every input")
    if result is None:  # no lane at all: an empty output
        result = np.zeros(run.elements.shape)
    run.write(a.output, _as(result, a.output.precision()))


_OPS: Mapping[str, Callable[[BlockRun, FuseOp], None]] = MappingProxyType({
    "Clamp": _clamp, "ConditionalAssign": _conditional_assign, "Gather": _gather,
    "Select": _select, "Cat": _cat})


def binding(shape: tuple[int, ...], strides: tuple[int, ...], vector_size: int,
            broadcasted: bool, handle: Handle, rank: int) -> Binding:
    """A binding unsqueezed to the kernel rank."""
    shape, strides = unsqueezed(shape, strides, rank)
    return Binding(shape, strides, vector_size, broadcasted, handle)


def run_block(config: FuseBlockConfig, launch: Launch, memory: Memory,
              scalars: tuple[np.ndarray, ...], seeds: Mapping[BlockLocal, np.ndarray] = {},
              shared: Mapping = {}) -> BlockRun:
    """Run one block of a launch. ``seeds`` pre-fill locals with a logical array (broadcast
    over the reference coordinates): the matmul result, a reduction's output. ``shared``:
    the multi-block values earlier blocks wrote (``shared_values``), read by coordinates."""
    plan = launch.plan
    inputs = tuple(binding(i.shape, i.strides, i.vector_size, i.broadcasted, h, config.rank)
                   for i, h in zip(plan.inputs, launch.input_handles))
    outputs = tuple(binding(o.shape, o.strides, o.vector_size, False, h, config.rank)
                    for o, h in zip(plan.outputs, launch.output_handles))
    run = BlockRun(config, inputs, outputs, memory, scalars, plan.reshapes, plan.runtime_layouts,
                   shared=shared)
    check_covered(run.n_pos, [o.shape for o in plan.outputs])
    for local, values in seeds.items():
        run.locals[local] = _as(seed_lanes(run, values), local.ty)
    run.run()
    return run


def seed_lanes(run: BlockRun, values: np.ndarray) -> np.ndarray:
    """A logical array read at each lane's reference coordinates (size-1 dims broadcast)."""
    values = np.asarray(values)
    values = values.reshape((1,) * (run.config.rank - values.ndim) + values.shape)
    coords = run.coords(run.elements)
    index = tuple(c % n for c, n in zip(coords, values.shape))
    return values[index]


def shared_values(run: BlockRun) -> dict:
    """The multi-block values a block wrote, as logical arrays of its reference shape."""
    return {key: gather_lanes(run, lanes, run.ref_shape) for key, lanes in run.registry.items()}


def gather_lanes(run: BlockRun, lanes: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The logical array of reference ``shape`` that per-lane ``lanes`` hold (every element
    must be covered: a kernel that skips one raises ``KernelError``)."""
    numel = int(np.prod(run.ref_shape, dtype=np.int64))
    valid = run.elements < numel
    coords = run.coords(run.elements)
    flat = np.ravel_multi_index(tuple(c[valid] for c in coords), run.ref_shape)
    result = np.zeros(numel, dtype=lanes.dtype)
    seen = np.zeros(numel, dtype=bool)
    result[flat] = lanes[valid]
    seen[flat] = True
    if not seen.all():
        raise KernelError("a reduction input element no position computed")
    return result.reshape(run.ref_shape).reshape(shape)
