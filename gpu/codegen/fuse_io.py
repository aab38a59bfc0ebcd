"""The body of a fused element-wise kernel: values, index math, global reads and writes.

burn counterpart: ``burn-cubecl-fusion/src/engine/codegen/io.rs`` (``read_input``,
``read_input_aligned``, ``write``, ``write_output_aligned``, ``get_offset``,
``index_offset_with_layout``, ``reshaped_index``) and ``kernel.rs``'s locals; notes §7.2–§7.3.
The numpy twin of every expression here is ``refimpl.fused_kernel.BlockRun`` (``offset``,
``reshaped_offset``, ``read_global``, ``_read_output``, ``_write_output``): a position ``p``
covers the reference elements ``p * width + lane``.

``BodyWriter`` is a dumb printer: every value is a ``let`` over ``vec{width}<T>`` named from
positions (``t{i}`` for op ``i``, ``t{i}_…`` for its parts, ``w{i}_…`` for a write), index
math reads its shapes and strides from ``info`` words at fixed positions, and helper
functions (``offset_in0``, ``load_in1``, ``store_out0``, ``reshaped_in0_r0``) are defined once.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

from refimpl.dtypes import DType
from refimpl.planner.launch.launch import FuseBlockConfig
from refimpl.planner.launch.layout import swap_dims_transform
from refimpl.planner.engine.trace import (
    BlockLocal, FuseArg, Input, InputReshaped, InputSwapDims, LayoutInfo, Literal, Output,
    Scalar,
)
from gpu.codegen.fused_signature import (
    KernelSignature, MetadataLayout, TensorArg, VectorAccess, compute_dtype, literals,
)
from gpu.codegen.literals import ExprCtx
from gpu.codegen.ops import FUSE_EXPR
from gpu.codegen.render import scalar_load
from gpu.codegen.types import WGSL_TYPE, value_type
from gpu.errors import UnsupportedOpError

__all__ = ["BodyWriter", "DIRECT", "storage_dtype", "times", "paren", "over", "plus", "plus_lane"]

DIRECT = (LayoutInfo.IsRef, LayoutInfo.SameAsRef)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def storage_dtype(storage: DType) -> DType:
    """The type a stored value is computed in: bool is a ``u32`` 0/1."""
    return DType.U32 if storage is DType.BOOL else storage


def times(expr: str, k: int | str) -> str:
    """``expr * k`` (``k`` an int, printed ``u32``, or an expression); ``expr`` when 1."""
    return expr if k == 1 else f"{paren(expr)} * {k if isinstance(k, str) else f'{k}u'}"


_SIMPLE = re.compile(r"^([A-Za-z0-9_\[\]]+|[A-Za-z_][A-Za-z0-9_]*\([^()]*\))$")


def paren(expr: str) -> str:
    """``expr`` safe as an operand: a name, an index or a call stays bare."""
    return expr if _SIMPLE.match(expr) else f"({expr})"


def over(expr: str, k: int) -> str:
    """``expr / k``; ``expr`` when 1."""
    return expr if k == 1 else f"{paren(expr)} / {k}u"


def plus(a: str, b: str) -> str:
    """``a + b``, or ``b`` when ``a`` is ``0u``."""
    return b if a == "0u" else f"{a} + {b}"


def plus_lane(first: str, lane: int) -> str:
    """The element of lane ``lane`` after ``first``."""
    return first if lane == 0 else f"{first} + {lane}u"


class BodyWriter:
    """The body of one kernel, built op by op (one instance per emission): its lines, the
    helper functions they call, the locals bound so far."""

    def __init__(self, config: FuseBlockConfig, signature: KernelSignature,
                 layout: MetadataLayout) -> None:
        self.config, self.signature, self.layout = config, signature, layout
        self.width = config.width  # a position covers ``width`` reference elements
        self.lines: list[str] = []
        self.helpers: dict[str, str] = {}
        self.names: dict[BlockLocal, tuple[str, DType]] = {}
        self.written: set[int] = set()  # input positions written in place
        self.vector_accesses: dict[VectorAccess, None] = {}

    def vector_index(self, slot: int, swap: tuple[int, int] | None = None,
                     reshape: tuple | None = None) -> str:
        """``offset(pos * width) / vs``: the vector a computed offset starts (recorded for
        the launch-time alignment check)."""
        vs = self.tensor(slot).vector_size
        first = times("pos", self.width)
        if vs > 1:
            shape = None if reshape is None else tuple(arg.index for arg in reshape)
            self.vector_accesses.setdefault(VectorAccess(slot, swap, shape), None)
        if reshape is not None:
            return over(f"{self.reshaped_fn(slot, reshape)}({first})", vs)
        return over(f"{self.offset_fn(slot, swap=swap)}({first})", vs)

    # --- slots and their arrays --------------------------------------------------------------

    def slot(self, arg: FuseArg) -> int:
        if isinstance(arg, Input):
            return arg.pos
        return len(self.signature.inputs) + arg.pos

    def tensor(self, slot: int) -> TensorArg:
        n_in = len(self.signature.inputs)
        return self.signature.inputs[slot] if slot < n_in else self.signature.outputs[slot - n_in]

    def array(self, slot: int) -> str:
        n_in = len(self.signature.inputs)
        if slot < n_in:
            return f"in{slot}"
        alias = self.signature.outputs[slot - n_in].alias
        return f"out{slot - n_in}" if alias is None else f"in{alias}"

    def slot_name(self, slot: int) -> str:
        n_in = len(self.signature.inputs)
        return f"in{slot}" if slot < n_in else f"out{slot - n_in}"

    def info(self, word: int) -> str:
        return f"info[{word}u]"

    def start(self, slot: int) -> str:
        """The slot's buffer offset in elements: its ``info`` word, or ``0u`` when the
        signature says it starts at element 0."""
        if not self.tensor(slot).offset:
            return "0u"
        return self.info(self.layout.slot_offset(slot))

    # --- helper functions (index math, element access) ---------------------------------------

    def helper(self, name: str, source: Callable[[], str]) -> str:
        if name not in self.helpers:
            self.helpers[name] = source()
        return name

    def offset_fn(self, slot: int, swap: tuple[int, int] | None = None) -> str:
        """``index_offset_with_layout``: element offset of ``slot`` for reference element
        ``e``; ``swap`` reads a swap view."""
        suffix = "" if swap is None else f"_swap{swap[0]}{swap[1]}"
        name = f"offset_{self.slot_name(slot)}{suffix}"

        def source() -> str:
            lay, terms = self.layout, []
            for i in range(self.config.rank):
                j = i if swap is None else swap_dims_transform(i, swap)
                terms.append(f"(e / {self.info(lay.ref_stride(i))}) % "
                             f"{self.info(lay.slot_shape(slot, j))} * "
                             f"{self.info(lay.slot_stride(slot, j))}")
            body = " +\n        ".join(terms) if terms else "0u"
            return f"fn {name}(e: u32) -> u32 {{\n    return {body};\n}}"
        return self.helper(name, source)

    def reshaped_fn(self, slot: int, shape: tuple) -> str:
        """``reshaped_index`` then ``reshaped_index_to_original_index``."""
        name = f"reshaped_{self.slot_name(slot)}_r{shape[0].index if shape else 0}"

        def source() -> str:
            lay, rank, lines = self.layout, self.config.rank, []
            terms, stride = [], []
            for i in range(rank - 1, -1, -1):
                dim = self.info(lay.reshape(shape[i].index))
                scale = " * ".join(stride) if stride else ""
                term = f"(e / {self.info(lay.ref_stride(i))}) % {dim}"
                terms.append(f"{term} * {scale}" if scale else term)
                stride.append(dim)
            lines.append(f"    var rest = {' + '.join(terms) if terms else '0u'};")
            lines.append("    var offset = 0u;")
            for i in range(rank - 1, -1, -1):
                size = self.info(lay.slot_shape(slot, i))
                lines.append(f"    offset = offset + (rest % {size}) * "
                             f"{self.info(lay.slot_stride(slot, i))};")
                lines.append(f"    rest = rest / {size};")
            lines.append("    return offset;")
            return f"fn {name}(e: u32) -> u32 {{\n" + "\n".join(lines) + "\n}"
        return self.helper(name, source)

    def element(self, slot: int, index: str) -> str:
        """An element of ``slot``'s binding (storage ``T``; vector bindings by component)."""
        vs = self.tensor(slot).vector_size
        where = plus(self.start(slot), index)
        if vs == 1:
            return f"{self.array(slot)}[{where}]"
        name = f"load_{self.slot_name(slot)}"
        ty = WGSL_TYPE[self.tensor(slot).dtype]

        def source() -> str:
            return (f"fn {name}(e: u32) -> {ty} {{\n"
                    f"    let i = {plus(self.start(slot), 'e')};\n"
                    f"    return {self.array(slot)}[i / {vs}u][i % {vs}u];\n}}")
        return f"{self.helper(name, source)}({index})"

    def store_element(self, slot: int, index: str, value: str) -> str:
        vs = self.tensor(slot).vector_size
        if vs == 1:
            return f"{self.array(slot)}[{plus(self.start(slot), index)}] = {value};"
        name = f"store_{self.slot_name(slot)}"
        ty = WGSL_TYPE[self.tensor(slot).dtype]

        def source() -> str:
            return (f"fn {name}(e: u32, v: {ty}) {{\n"
                    f"    let i = {plus(self.start(slot), 'e')};\n"
                    f"    {self.array(slot)}[i / {vs}u][i % {vs}u] = v;\n}}")
        return f"{self.helper(name, source)}({index}, {value});"

    def vector_at(self, slot: int, base: str) -> str:
        """The ``vec{vs}`` at vector index ``base`` (the buffer offset is whole vectors)."""
        vs = self.tensor(slot).vector_size
        start = self.start(slot)
        first = start if start == "0u" else over(start, vs)
        return f"{self.array(slot)}[{plus(first, base)}]"

    # --- values -------------------------------------------------------------------------------

    def vec(self, dtype: DType, lanes: Sequence[str]) -> str:
        if self.width == 1:
            return lanes[0]
        return f"{value_type(dtype, self.width)}({', '.join(lanes)})"

    def lane(self, value: str, lane: int) -> str:
        return value if self.width == 1 else f"{value}[{lane}]"

    def let(self, name: str, expr: str) -> str:
        self.lines.append(f"    let {name} = {expr};")
        return name

    def named(self, name: str, expr: str) -> str:
        """``expr`` itself when it is a name, else bound to ``name`` first."""
        return expr if _NAME.match(expr) else self.let(name, expr)

    def convert(self, expr: str, src: DType, dst: DType) -> str:
        if src is dst:
            return expr
        rendered, helpers = FUSE_EXPR["Assign"].render(ExprCtx(dst, dst, self.width, src=src),
                                                       expr)
        for source in helpers:
            self.helpers.setdefault(source.split("(", 1)[0].removeprefix("fn "), source)
        return rendered

    def value(self, arg: FuseArg, want: DType, name: str) -> str:
        """``arg`` converted to ``want`` (``Vector::cast_from``), as a name."""
        expr, dtype = self.raw(arg, name)
        return self.named(name, self.convert(expr, dtype, want))

    def raw(self, arg: FuseArg, name: str) -> tuple[str, DType]:
        if isinstance(arg, BlockLocal):
            if arg not in self.names:
                raise UnsupportedOpError(f"{arg!r} is read before it is written")
            return self.names[arg]
        if isinstance(arg, Input):
            return self.read_global(arg.pos, arg.layout, self.tensor(arg.pos).broadcasted,
                                    name), self.storage(arg.pos)
        if isinstance(arg, InputSwapDims):
            return self.read_global(arg.original.pos, arg.original.layout,
                                    self.config.view_replicated(arg.broadcasted), name, swap=arg.dims), self.storage(arg.original.pos)
        if isinstance(arg, InputReshaped):
            return self.read_global(arg.original.pos, arg.original.layout,
                                    self.config.view_replicated(arg.broadcasted), name, reshape=arg.shape), self.storage(arg.original.pos)
        if isinstance(arg, Output):
            slot = self.slot(arg)
            return self.read_output(slot, arg.layout, name), self.storage(slot)
        if isinstance(arg, Scalar):
            dtype = compute_dtype(arg.ty)
            return scalar_load(self.layout.scalar(arg.index), dtype, self.width), dtype
        if isinstance(arg, Literal):
            dtype = compute_dtype(arg.ty)
            k = literals(self.config).index(arg)
            return scalar_load(self.layout.literal(k), dtype, self.width), dtype
        raise UnsupportedOpError(f"fused element-wise kernels cannot read {type(arg).__name__} "
                                 "(multi-block traces need the fused reduce kernel)")

    def storage(self, slot: int) -> DType:
        return storage_dtype(self.tensor(slot).dtype)

    # --- reads and writes (io.rs) ------------------------------------------------------------

    def read_global(self, slot: int, layout: LayoutInfo, broadcasted: bool, name: str,
                    swap: tuple[int, int] | None = None, reshape: tuple | None = None) -> str:
        """``read_input`` / ``read_input_aligned`` at this invocation's position."""
        tensor, width = self.tensor(slot), self.width
        vs, dtype = tensor.vector_size, self.storage(slot)
        first = times("pos", width)
        if not broadcasted and vs != width:
            if reshape is not None:
                fn = self.reshaped_fn(slot, reshape)
                lanes = [self.element(slot, f"{fn}({plus_lane(first, lane)})")
                         for lane in range(width)]
            else:
                # laid out like the reference (element e at e), or remapped; then lane by lane
                start = first if layout in DIRECT else \
                    f"{self.offset_fn(slot, swap=swap)}({first})"
                start = self.named(f"{name}_e", start)
                axis = self.config.vector_axis
                step = self.info(self.layout.slot_stride(
                    slot, axis if swap is None else swap_dims_transform(axis, swap)))
                lanes = [self.element(slot, start if lane == 0 else
                                      f"{start} + {times(step, lane)}")
                         for lane in range(width)]
            return self.vec(dtype, lanes)
        base = "pos" if layout in DIRECT else self.vector_index(slot, swap, reshape)
        if vs == width:
            return self.vector_at(slot, base)
        lane = self.element(slot, times(base, vs))
        return self.vec(dtype, [self.named(f"{name}_x", lane)] * width)

    def read_output(self, slot: int, layout: LayoutInfo, name: str) -> str:
        vs, width = self.tensor(slot).vector_size, self.width
        base = "pos" if layout in DIRECT else self.vector_index(slot)
        if vs == width:
            return self.vector_at(slot, base)
        if vs != 1:
            raise UnsupportedOpError("an output read back with a vector size that is not the "
                                     "width")
        lane = self.named(f"{name}_x", self.element(slot, base))
        return self.vec(self.storage(slot), [lane] * width)

    def write(self, i: int, arg: Output, value: str) -> None:
        """``write`` / ``write_output_aligned``: store this invocation's vector."""
        slot, width = self.slot(arg), self.width
        tensor = self.tensor(slot)
        if tensor.alias is not None:
            self.written.add(tensor.alias)
        if tensor.dtype is DType.BOOL:  # stored as u32 0/1
            ctx = ExprCtx(DType.U32, DType.U32, width)
            value = self.let(f"w{i}_bool", ctx.to_u32_bool(f"{value} != {ctx.u32(0)}"))
        vs = tensor.vector_size
        if vs == width:
            base = "pos" if arg.layout in DIRECT else self.vector_index(slot)
            self.lines.append(f"    {self.vector_at(slot, base)} = {value};")
            return
        if arg.layout in DIRECT:
            start = self.named(f"w{i}_e", times("pos", width))
            step = self.info(self.layout.slot_stride(slot, self.config.vector_axis))
            indices = [start if lane == 0 else f"{start} + {times(step, lane)}"
                       for lane in range(width)]
        else:
            fn = self.offset_fn(slot)
            indices = [f"{fn}({plus_lane(times('pos', width), lane)})" for lane in range(width)]
        for lane, index in enumerate(indices):
            self.lines.append(f"    {self.store_element(slot, index, self.lane(value, lane))}")

    def define(self, i: int, out: FuseArg, expr: str, dtype: DType) -> None:
        """Bind op ``i``'s result: a block local, or a global write."""
        if isinstance(out, BlockLocal):
            want = compute_dtype(out.ty)
            self.names[out] = (self.let(f"t{i}", self.convert(expr, dtype, want)), want)
        elif isinstance(out, Output):
            want = compute_dtype(out.ty)
            self.write(i, out, self.named(f"t{i}", self.convert(expr, dtype, want)))
        else:
            raise UnsupportedOpError(f"fused element-wise kernels cannot write "
                                     f"{type(out).__name__} (multi-block traces need the fused "
                                     "reduce kernel)")

    def render(self, name: str, ctx: ExprCtx, *args: str) -> str:
        rendered, helpers = FUSE_EXPR[name].render(ctx, *args)
        for source in helpers:
            self.helpers.setdefault(source.split("(", 1)[0].removeprefix("fn "), source)
        return rendered
