"""Fused matmul WGSL: the matmul as the block's first op, its element-wise tail run on each
output vector as it is written (fuse-on-write).

burn counterpart: ``burn-cubecl-fusion/src/optim/matmul/`` — ``optimization.rs``
(``FusedMatmul::matmul_fused``: the launch, refused for a highly permuted operand), ``args.rs``
(``FusedMatmulArgs``: lhs and rhs read as they are, through their layout; the output written
through ``fuse_on_write``, which runs the block's ops on each written vector, any number of
outputs) and ``tune.rs`` (the candidates autotune picks from, the fallback among them).

A kernel is the epilogue block (``FuseBlockConfig``, printed by ``gpu.codegen.emit`` into a
function ``fuse_on_write(pos, seed)``: the block's ops at reference position ``pos`` with the
matmul local seeded with ``seed``, the ``width`` products of that position) and a main loop
that computes the products. ``MatmulForm`` names the main loop (``gpu.codegen.matmul_tiled``
prints the tiled ones):

* ``simple`` (burn's simple kernel, the no-autotune default): one reference position per
  invocation, each lane a sequential loop over ``K``; any reference layout;
* ``gemv`` (matrix-vector): one position per workgroup of 64, ``K`` split across the
  invocations and summed in workgroup memory; for few outputs and a long ``K``;
* ``small`` / ``tile64`` / ``large`` / ``large_k16`` / ``large_pf``: register-tiled,
  workgroup-shared ``K`` slices loaded with vec4 reads (``matmul_tiled.TILINGS``); their
  epilogue needs a reference whose positions run along ``N`` (``tiled_fits``, checked per
  launch);
* ``product``: the fallback's second kernel: the seed read from the standalone matmul's
  output (``gpu.codegen.matmul``), for when no fused kernel fits the device.

Every form accumulates in f32 (f16 operands widen on load, the product rounds once to the
local's type before the epilogue), reads ``lhs``/``rhs`` through their strides (a batch dim
of size 1 has stride 0: broadcast) and indexes like the interpreter's emulation
(``refimpl.interpreter.Interpreter.run_matmul``). The source depends on the config, the
``KernelSignature`` and the form only: shapes, strides and ``M``/``N``/``K`` are ``info``
words (``MatmulWords``) after the block's own (``MetadataLayout``).
"""

from __future__ import annotations

import re

from refimpl.dtypes import DType
from refimpl.planner.launch.launch import FuseBlockConfig
from gpu.codegen.emit import FusedKernel, emit_ops
from gpu.codegen.fuse_io import plus_lane, times
from gpu.codegen.fused_signature import KernelSignature
from gpu.codegen.matmul_body import MatmulBody, MatmulForm, MatmulWords, matmul_words
from gpu.codegen.matmul_tiled import TILINGS, tiled_main
from gpu.codegen.render import Binding, render_kernel
from gpu.codegen.types import value_type
from gpu.errors import UnsupportedDTypeError, UnsupportedOpError

__all__ = ["MatmulForm", "MatmulWords", "MatmulBody", "FORMS", "FLOAT_OPERANDS", "GEMV_SIZE",
           "emit_fused_matmul", "matmul_words", "operand_fast_axes"]

FORMS = ("simple", "gemv", *TILINGS, "product")
FLOAT_OPERANDS = (DType.F32, DType.F16)  # what the fused forms multiply (ints: the fallback)
GEMV_SIZE = 64  # invocations of a gemv workgroup (its tree sum halves it)


def _lane_product(mb: MatmulBody, lane: int) -> list[str]:
    """Lines computing ``acc{lane}``: the dot product at reference lane ``lane`` of ``pos``
    (coordinates from the reference strides, as ``fused_kernel.BlockRun.coords``)."""
    form, rank, lines = mb.form, mb.rank, []
    e = f"e{lane}"
    lines.append(f"    let {e} = {plus_lane(times('pos', mb.config.width), lane)};")
    coords = []
    for d in range(rank):
        coords.append(f"c{lane}_{d}")
        lines.append(f"    let c{lane}_{d} = ({e} / {mb.ref_stride(d)}) % {mb.ref_shape(d)};")
    lines += mb.batch_offsets(coords[:rank - 2], str(lane), ref=False)
    m, n = coords[rank - 2], coords[rank - 1]
    lines.append(f"    let a{lane} = lhs_b{lane} + {m} * {mb.stride(form.lhs, rank - 2)};")
    lines.append(f"    let b{lane} = rhs_b{lane} + {n} * {mb.stride(form.rhs, rank - 1)};")
    return lines


def _dot(mb: MatmulBody, start: str, step: str) -> list[str]:
    """One loop over ``K`` accumulating every lane's product (``acc{lane}``)."""
    form, rank, width = mb.form, mb.rank, mb.config.width
    lines = [f"    var acc{lane} = 0.0;" for lane in range(width)]
    lines.append(f"    for (var k = {start}; k < {mb.words.k}; k = k + {step}) {{")
    for lane in range(width):
        lhs = mb.load(form.lhs, f"a{lane} + k * {mb.stride(form.lhs, rank - 1)}")
        rhs = mb.load(form.rhs, f"b{lane} + k * {mb.stride(form.rhs, rank - 2)}")
        lines.append(f"        acc{lane} = fma({lhs}, {rhs}, acc{lane});")
    return lines + ["    }"]


def _accs(width: int) -> str:
    accs = ", ".join(f"acc{lane}" for lane in range(width))
    return accs if width == 1 else f"vec{width}<f32>({accs})"


# --- the main loops --------------------------------------------------------------------------


def _simple(mb: MatmulBody) -> tuple[list[str], list[str]]:
    lines = ["    let pos = group * WG_SIZE + lid;",
             "    if (pos >= info[0]) {", "        return;", "    }"]
    for lane in range(mb.config.width):
        lines += _lane_product(mb, lane)
    lines += _dot(mb, "0u", "1u")
    lines.append(f"    fuse_on_write(pos, {mb.seed(_accs(mb.config.width))});")
    return [], lines


def _gemv(mb: MatmulBody) -> tuple[list[str], list[str]]:
    width = mb.config.width
    shared = [f"var<workgroup> partial: array<{value_type(DType.F32, width)}, {GEMV_SIZE}>;"]
    lines = ["    let pos = group;",
             "    if (pos >= info[0]) {", "        return;", "    }"]
    for lane in range(width):
        lines += _lane_product(mb, lane)
    lines += _dot(mb, "lid", "WG_SIZE")
    lines += [f"    partial[lid] = {_accs(width)};", "    workgroupBarrier();"]
    half = GEMV_SIZE // 2
    while half >= 1:
        lines += [f"    if (lid < {half}u) {{",
                  f"        partial[lid] = partial[lid] + partial[lid + {half}u];",
                  "    }", "    workgroupBarrier();"]
        half //= 2
    lines += ["    if (lid == 0u) {",
              f"        fuse_on_write(pos, {mb.seed('partial[0]')});", "    }"]
    return shared, lines


def _product(mb: MatmulBody) -> tuple[list[str], list[str]]:
    """The seed read from ``product``: the matmul's contiguous output."""
    width, rank = mb.config.width, mb.rank
    lines = ["    let pos = group * WG_SIZE + lid;",
             "    if (pos >= info[0]) {", "        return;", "    }"]
    lanes = []
    for lane in range(width):
        e = f"e{lane}"
        lines.append(f"    let {e} = {plus_lane(times('pos', width), lane)};")
        index = "0u"
        for d in range(rank):
            coord = f"({e} / {mb.ref_stride(d)}) % {mb.ref_shape(d)}"
            index = coord if index == "0u" else f"({index}) * {mb.ref_shape(d)} + {coord}"
        lines.append(f"    let p{lane} = product[{index}];")
        lanes.append(f"p{lane}")
    value = lanes[0] if width == 1 else f"{value_type(mb.seed_type, width)}({', '.join(lanes)})"
    lines.append(f"    fuse_on_write(pos, {value});")
    return [], lines


_MAIN = {"simple": _simple, "gemv": _gemv, "product": _product}


# --- the kernel ----------------------------------------------------------------------------------


def _check(config: FuseBlockConfig, signature: KernelSignature, form: MatmulForm) -> None:
    if form.kind not in FORMS:
        raise UnsupportedOpError(f"fused matmul: unknown form {form.kind!r} (known: {FORMS})")
    if config.rank < 2:
        raise UnsupportedOpError(f"fused matmul: rank {config.rank} (a matmul has rank ≥ 2)")
    for pos in (form.lhs, form.rhs):
        dtype = signature.inputs[pos].dtype
        if dtype not in FLOAT_OPERANDS and form.kind != "product":
            raise UnsupportedDTypeError(f"fused matmul: operand {pos} is {dtype.value} (the "
                                        "fused kernel is float only)")


def _used(name: str, text: str) -> bool:
    return re.search(rf"\b{name}\b", text) is not None


def emit_fused_matmul(config: FuseBlockConfig, signature: KernelSignature,
                      form: MatmulForm) -> FusedKernel:
    """The WGSL of one fused matmul launch shape (deterministic: equal inputs, equal bytes)."""
    _check(config, signature, form)
    mb = MatmulBody(config, signature, form)
    mb.body.names[form.seed] = ("seed", mb.seed_type)
    emit_ops(mb.body)
    seed_type = value_type(mb.seed_type, config.width)
    epilogue = (f"fn fuse_on_write(pos: u32, seed: {seed_type}) {{\n"
                + "\n".join(mb.body.lines) + "\n}")
    if form.kind in TILINGS:
        shared, main = tiled_main(mb, TILINGS[form.kind])
        size = TILINGS[form.kind].threads
    else:
        shared, main = _MAIN[form.kind](mb)
        size = GEMV_SIZE if form.kind == "gemv" else None
    helpers = [mb.body.helpers[name] for name in mb.body.helpers] + [epilogue]
    text = "\n".join(helpers + main)
    bindings, order = [], []
    if form.kind == "product":
        bindings.append(Binding("product", mb.seed_type))
        order.append(("product", 0))
    for k, tensor in enumerate(signature.inputs):
        if form.kind == "product" and not _used(f"in{k}", text):
            continue  # the operands: read by the matmul kernel before this one
        bindings.append(Binding(f"in{k}", tensor.dtype, tensor.vector_size,
                                writable=k in mb.body.written))
        order.append(("in", k))
    for k, tensor in enumerate(signature.outputs):
        if tensor.alias is None:
            bindings.append(Binding(f"out{k}", tensor.dtype, tensor.vector_size, writable=True))
            order.append(("out", k))
    ops = " ".join(op.name for op in config.ops)
    summary = (f"{form.kind}, lhs in{form.lhs} ({form.lhs_fast}), rhs in{form.rhs} "
               f"({form.rhs_fast}), rank {config.rank}, width {config.width}\n// ops: {ops}")
    source = render_kernel("matmul_fuse", summary, bindings, [*helpers, *shared], main,
                           wg_size=str(size or 64))
    return FusedKernel(config, signature, source, mb.layout, tuple(order),
                       tuple(mb.body.vector_accesses))


def operand_fast_axes(lhs_strides: tuple[int, ...], rhs_strides: tuple[int, ...],
                      lhs_vs: int, rhs_vs: int) -> tuple[str, str]:
    """The axis each operand is contiguous along (its vectorized axis when vectorized,
    else the smaller stride): ``("k" | "m", "n" | "k")``."""
    lhs = "k" if (lhs_strides[-1] == 1 if lhs_vs > 1 else
                  lhs_strides[-1] <= lhs_strides[-2]) else "m"
    rhs = "n" if (rhs_strides[-1] == 1 if rhs_vs > 1 else
                  rhs_strides[-1] <= rhs_strides[-2]) else "k"
    return lhs, rhs

