"""WGSL for one fused element-wise block: a ``FuseBlockConfig`` plus its bindings, printed.

burn counterpart: ``burn-cubecl-fusion/src/optim/elemwise/optimization.rs`` (``elemwise_fuse``:
``pos < ref_len``, then ``fuse_on_write``), ``engine/codegen/kernel.rs`` (``fuse``: the
``#[unroll]`` loop over ``config.ops``; ``gather``, ``select_indices``, ``concat``) and
``engine/codegen/io.rs`` (``read_input``, ``read_input_aligned``, ``write``,
``write_output_aligned``, ``index_offset_with_layout``, ``reshaped_index``); notes §7. The
numpy twin of every index expression below is ``refimpl.fused_kernel`` (same read and write
paths, same guard), which the interpreter runs.

One skeleton (``skeletons/elemwise_fuse.wgsl``) serves every block; the config is printed
into its body like cubecl unrolls ``elemwise_fuse``: one ``let t{i}`` per ``FuseOp`` ``i``
over ``vec{width}<T>`` values, reads and writes inlined. What the source depends on, and
nothing else (so a new shape of a known block compiles nothing):

* the config (ops with their types and ``LayoutInfo``, width, rank, vector axis);
* the ``KernelSignature``: per input its storage dtype, vector size and broadcast flag; per
  output the same plus the input whose buffer it is written into (in place) or viewed; per
  tensor whether it starts past element 0 of its buffer (only then is its offset word read:
  a contiguous block reads ``in0[pos]``). An aliased output is never bound twice: its writes
  go to the input's binding, declared ``read_write``. Bool is stored as ``u32`` 0/1.

Shapes, strides, buffer offsets, the reference layout, scalars, literals and reshape dims are
run-time words of one metadata buffer ``info`` (``gpu.codegen.fused_signature.MetadataLayout``).
The reference layout is resolved on the host (``gpu.runtime.fused_launch``, as
``refimpl.fused_kernel`` resolves it), so the kernel only sees the reference shape and
strides; position ``pos`` covers the reference elements ``pos * width + lane``. Names come from
positions (``in{k}``, ``out{k}``, ``t{i}``), never from tensor ids.

This module holds the per-``FuseOp`` emitters and the assembly; the reads, writes and index
math are ``gpu.codegen.fuse_io.BodyWriter``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

from refimpl.dtypes import DType
from refimpl.planner.launch.launch import FuseBlockConfig
from refimpl.planner.engine.trace import BinaryFuseArgs, FuseOp, UnaryFuseArgs
from gpu.codegen.fuse_io import BodyWriter, plus, plus_lane, times
from gpu.codegen.fused_signature import (
    KernelSignature, MetadataLayout, TensorArg, VectorAccess, compute_dtype, metadata_layout,
)
from gpu.codegen.literals import ExprCtx
from gpu.codegen.render import Binding, render_kernel
from gpu.codegen.types import WGSL_TYPE
from gpu.errors import UnsupportedDTypeError, UnsupportedOpError

__all__ = ["TensorArg", "KernelSignature", "MetadataLayout", "VectorAccess", "FusedKernel",
           "emit_block", "emit_ops", "metadata_layout"]

_COMPARISONS = frozenset({"Equal", "Lower", "Greater", "LowerEqual", "GreaterEqual"})


@dataclass(frozen=True, slots=True)
class FusedKernel:
    """An emitted block: its source, metadata layout and binding order (``("in", k)`` /
    ``("out", k)``; ``info`` is bound last)."""

    config: FuseBlockConfig
    signature: KernelSignature
    source: str
    layout: MetadataLayout
    bindings: tuple[tuple[str, int], ...]
    vector_accesses: tuple[VectorAccess, ...] = ()


# --- one emitter per FuseOp shape (kernel.rs ``fuse``) ------------------------------------------


def _assign(body: BodyWriter, i: int, op: FuseOp) -> None:
    args = op.args
    expr, dtype = body.raw(args.input, f"t{i}_in")
    body.define(i, args.out, expr, dtype)


def _elementwise(body: BodyWriter, i: int, op: FuseOp) -> None:
    """Unary ops in the output precision; binary ops in the lhs precision (``cmp_elem``)."""
    args, width = op.args, body.width
    if isinstance(args, BinaryFuseArgs):
        ty = compute_dtype(args.lhs.precision())
        lhs = body.value(args.lhs, ty, f"t{i}_a")
        rhs = body.value(args.rhs, ty, f"t{i}_b")
        result = DType.U32 if op.name in _COMPARISONS else ty
        body.define(i, args.out, body.render(op.name, ExprCtx(ty, result, width), lhs, rhs),
                    result)
        return
    assert isinstance(args, UnaryFuseArgs)
    ty = compute_dtype(args.out.precision())
    value = body.value(args.input, ty, f"t{i}_a")
    body.define(i, args.out, body.render(op.name, ExprCtx(ty, ty, width), value), ty)


def _clamp(body: BodyWriter, i: int, op: FuseOp) -> None:
    a = op.args
    ty = compute_dtype(a.out.precision())
    names = [body.value(arg, ty, f"t{i}_{k}") for k, arg in enumerate((a.input, a.min, a.max))]
    body.define(i, a.out, body.render("Clamp", ExprCtx(ty, ty, body.width), *names), ty)


def _conditional_assign(body: BodyWriter, i: int, op: FuseOp) -> None:
    a, width = op.args, body.width
    ty = compute_dtype(a.out.precision())
    cond, cond_ty = body.raw(a.cond, f"t{i}_c")
    if cond_ty is not DType.U32:  # ``cond != 0`` in its own type, as a u32 0/1
        ctx = ExprCtx(cond_ty, DType.U32, width)
        cond = ctx.to_u32_bool(f"{cond} != {ctx.lit(0)}")
    cond = body.named(f"t{i}_c", cond)
    lhs, rhs = body.value(a.lhs, ty, f"t{i}_a"), body.value(a.rhs, ty, f"t{i}_b")
    body.define(i, a.out, body.render("ConditionalAssign", ExprCtx(ty, ty, width), cond, lhs,
                                      rhs), ty)


def _coords(body: BodyWriter, name: str, lane: int) -> list[str]:
    """Lane ``lane``'s reference coordinates (``coords``), one ``let`` per dim."""
    lay, rank = body.layout, body.config.rank
    element = body.named(f"{name}_e{lane}", plus_lane(times("pos", body.width), lane))
    return [body.let(f"{name}_c{lane}_{d}", f"({element} / {body.info(lay.ref_stride(d))}) % "
                                             f"{body.info(lay.ref_shape(d))}")
            for d in range(rank)]


def _op_coords(body: BodyWriter, name: str, coords: list[str], sizes: list[str]) -> list[str]:
    """The coordinates reduced modulo the op's own output shape (``_op_coords``)."""
    return [body.let(f"{name}_{d}", f"{c} % {size}") for d, (c, size) in
            enumerate(zip(coords, sizes))]


def _at(body: BodyWriter, slot: int, coords: list[str], skip: int | None = None) -> str:
    """Element offset of ``coords`` in ``slot`` (dim ``skip`` left out; ``_at``)."""
    lay = body.layout
    terms = [f"({c} % {body.info(lay.slot_shape(slot, d))}) * "
             f"{body.info(lay.slot_stride(slot, d))}"
             for d, c in enumerate(coords) if d != skip]
    return " + ".join(terms) if terms else "0u"


def _index_value(body: BodyWriter, slot: int, index: str) -> str:
    return f"u32({body.element(slot, index)})"


def _shape_words(body: BodyWriter, slot: int) -> list[str]:
    return [body.info(body.layout.slot_shape(slot, d)) for d in range(body.config.rank)]


def _gather(body: BodyWriter, i: int, op: FuseOp) -> None:
    """``out[c] = input[c with c[dim] = indices[c]]``."""
    a, name, lay = op.args, f"t{i}", body.layout
    src, idx = body.slot(a.input), body.slot(a.indices)
    lanes = []
    for lane in range(body.width):
        coords = _op_coords(body, f"{name}_o{lane}", _coords(body, name, lane),
                            _shape_words(body, idx))
        k = body.let(f"{name}_k{lane}", _index_value(body, idx, _at(body, idx, coords)))
        element = plus(_at(body, src, coords, skip=a.dim),
                        f"{k} * {body.info(lay.slot_stride(src, a.dim))}")
        lanes.append(body.element(src, body.let(f"{name}_x{lane}", element)))
    value = body.let(f"{name}_v", body.vec(body.storage(src), lanes))
    body.define(i, a.output, value, body.storage(src))


def _select(body: BodyWriter, i: int, op: FuseOp) -> None:
    """``out[c] = input[c with c[dim] = indices[c[dim]]]`` (1-D indices)."""
    a, name, lay, rank = op.args, f"t{i}", body.layout, body.config.rank
    src, idx = body.slot(a.input), body.slot(a.indices)
    sizes = _shape_words(body, src)
    sizes[a.dim] = body.info(lay.slot_shape(idx, rank - 1))
    lanes = []
    for lane in range(body.width):
        coords = _op_coords(body, f"{name}_o{lane}", _coords(body, name, lane), sizes)
        at = f"{coords[a.dim]} * {body.info(lay.slot_stride(idx, rank - 1))}"
        k = body.let(f"{name}_k{lane}", _index_value(body, idx, at))
        element = plus(_at(body, src, coords, skip=a.dim),
                        f"{k} * {body.info(lay.slot_stride(src, a.dim))}")
        lanes.append(body.element(src, body.let(f"{name}_x{lane}", element)))
    value = body.let(f"{name}_v", body.vec(body.storage(src), lanes))
    body.define(i, a.output, value, body.storage(src))


def _cat(body: BodyWriter, i: int, op: FuseOp) -> None:
    """``concat``: each lane reads the input whose segment along ``dim`` holds its coordinate
    (every input is loaded, at element 0 when outside, and the inside one selected)."""
    a, name, lay = op.args, f"t{i}", body.layout
    slots = [body.slot(arg) for arg in a.inputs]
    sizes = _shape_words(body, slots[0])
    sizes[a.dim] = body.let(f"{name}_n", " + ".join(
        body.info(lay.slot_shape(slot, a.dim)) for slot in slots))
    dtype = body.storage(slots[0])
    lanes = []
    for lane in range(body.width):
        coords = _op_coords(body, f"{name}_o{lane}", _coords(body, name, lane), sizes)
        coord, start, value = coords[a.dim], "0u", None
        for j, slot in enumerate(slots):
            end = body.named(f"{name}_end{lane}_{j}",
                             plus(start, body.info(lay.slot_shape(slot, a.dim))))
            low = "" if start == "0u" else f"({coord} >= {start}) && "
            inside = body.let(f"{name}_in{lane}_{j}", f"{low}({coord} < {end})")
            local = coord if start == "0u" else f"({coord} - {start})"
            element = plus(_at(body, slot, coords, skip=a.dim),
                            f"{local} * {body.info(lay.slot_stride(slot, a.dim))}")
            loaded = body.element(slot, f"select(0u, {element}, {inside})")
            value = loaded if value is None else f"select({value}, {loaded}, {inside})"
            value = body.let(f"{name}_v{lane}_{j}", value)
            start = end
        lanes.append(value)
    body.define(i, a.output, body.let(f"{name}_v", body.vec(dtype, lanes)), dtype)


_OPS: Mapping[str, Callable[[BodyWriter, int, FuseOp], None]] = MappingProxyType({
    "Assign": _assign,
    "Clamp": _clamp,
    "ConditionalAssign": _conditional_assign,
    "Gather": _gather,
    "Select": _select,
    "Cat": _cat,
})


def emit_ops(body: BodyWriter) -> None:
    """Print every op of ``body``'s config (``fuse``'s unrolled loop), reads and writes inlined."""
    for i, op in enumerate(body.config.ops):
        _OPS.get(op.name, _elementwise)(body, i, op)


# --- the kernel ---------------------------------------------------------------------------------


def _check(config: FuseBlockConfig, signature: KernelSignature) -> None:
    if config.width not in (1, 2, 4):
        raise UnsupportedOpError(f"vector width {config.width}: WGSL vectors have 2, 3 or 4 "
                                 "components (plan for a wgpu device profile)")
    for tensor in signature.inputs + signature.outputs:
        if tensor.dtype not in WGSL_TYPE:
            raise UnsupportedDTypeError(f"fused kernels cannot bind {tensor.dtype.value}")
        if tensor.vector_size not in (1, 2, 4):
            raise UnsupportedOpError(f"binding vector size {tensor.vector_size}")


def _summary(config: FuseBlockConfig) -> str:
    ops = " ".join(op.name for op in config.ops)
    return (f"rank {config.rank}, width {config.width}, vector axis {config.vector_axis}\n"
            f"// ops: {ops}")


def emit_block(config: FuseBlockConfig, signature: KernelSignature) -> FusedKernel:
    """The WGSL of one block (``elemwise_fuse`` specialised on ``config``)."""
    _check(config, signature)
    layout = metadata_layout(config, signature)
    body = BodyWriter(config, signature, layout)
    emit_ops(body)
    bindings, order = [], []
    for k, tensor in enumerate(signature.inputs):
        bindings.append(Binding(f"in{k}", tensor.dtype, tensor.vector_size,
                                writable=k in body.written))
        order.append(("in", k))
    for k, tensor in enumerate(signature.outputs):
        if tensor.alias is None:
            bindings.append(Binding(f"out{k}", tensor.dtype, tensor.vector_size, writable=True))
            order.append(("out", k))
    helpers = [body.helpers[name] for name in body.helpers]
    source = render_kernel("elemwise_fuse", _summary(config), bindings, helpers, body.lines)
    return FusedKernel(config, signature, source, layout, tuple(order),
                       tuple(body.vector_accesses))
