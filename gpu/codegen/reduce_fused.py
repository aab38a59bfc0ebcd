"""WGSL for burn's fused reduce: the read block evaluated inside every load of the reduction
(fuse-on-read), the reduction, the write block on every reduced value (fuse-on-write).

burn counterpart: ``burn-cubecl-fusion/src/optim/reduce/optimization.rs`` (``FusedReduce``,
``launch_reduce``: the fused read/write arguments handed to cubek's reduce) and cubecl-reduce's
routines (``routines/unit.rs``: one invocation per reduction; ``routines/cube.rs``: one
workgroup per reduction, shared accumulators; ``routines/plane.rs``: one subgroup per
reduction, where the device has the ``subgroup`` feature), its instructions
(``instructions/{sum,mean,prod,max,min,max_abs,argmax,argmin,any,all}.rs``) and its
vectorization (``ReduceLineMode::Parallel``: vectors along the reduced axis, innermost;
``Perpendicular``: vectors across outputs). The numpy twin is
``refimpl.interpreter.Interpreter.run_reduce``.

The kernel is specialised on a ``ReduceKernelSpec`` (both blocks' configs, the binding
signature, the instruction, axis and types, the routine and the vector mode) and nothing
else: shapes, strides and counts are words of the one ``info`` buffer laid out as

==================  ==============================================================
words               content
==================  ==============================================================
read block          its ``MetadataLayout`` (reference = the reduction's input)
write block         its ``MetadataLayout`` (reference = the reduction's output)
reduce ``B + …``    groups, group shape[R], read strides[R], write strides[R],
                    steps, step, output lane step, identity word, row length
==================  ==============================================================

A *group* is what one invocation (``unit``), one workgroup (``cube``) or one subgroup
(``plane``: its lanes stride the loads, ``subgroupAdd``/``Max``/... fold them) reduces: one row
(``parallel``, ``scalar``) or ``width`` adjacent rows (``perpendicular``). Its coordinates
over the group shape give the first read element (``Σ c·read stride``) and the output
element (``Σ c·write stride``); the loads step ``step`` elements, ``steps`` times. A load past
the row is never issued: every read sits behind the loop's bound (burn's masked
``fuse_on_read`` branches; a clamped read would run the read block's side effects at a wrong
position). Accumulation follows cubecl-reduce: ``acc`` (f16 sums in f32, narrow ints in
i32); max/min/max-abs start from a run-time identity word (WGSL has no infinity literal);
argmax/argmin keep the first index of the extreme (an empty lane holds index ``0xffffffff``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from refimpl.dtypes import DType
from refimpl.planner.launch.launch import FuseBlockConfig, config_id
from refimpl.planner.engine.trace import BlockLocal, FuseArg, FuseType
from gpu.codegen.fused_signature import KernelSignature, compute_dtype
from gpu.codegen.literals import literal
from gpu.codegen.reduce_blocks import BlockFunction, block_function
from gpu.codegen.render import Binding, render_kernel, scalar_load
from gpu.codegen.types import WGSL_TYPE, value_type
from gpu.errors import UnsupportedOpError

__all__ = ["ROUTINES", "MODES", "ReduceKernelSpec", "FusedReduceKernel", "ReduceWords",
           "emit_reduce", "COMBINE", "INSTRUCTIONS", "Reduction", "reduce_lines",
           "shared_lines", "binding_list"]

ROUTINES = ("unit", "cube", "plane")
PLANE_OPS = {"Sum": "subgroupAdd", "Mean": "subgroupAdd", "Prod": "subgroupMul",
             "Max": "subgroupMax", "MaxAbs": "subgroupMax", "Min": "subgroupMin",
             "Any": "subgroupOr", "All": "subgroupAnd"}
MODES = ("scalar", "parallel", "perpendicular")
SENTINEL = "0xffffffffu"

# instruction → (identity: "zero" / "one" / "lowest" / "highest", combine)
COMBINE: dict[str, tuple[str, Callable[[str, str], str]]] = {
    "Sum": ("zero", lambda a, b: f"{a} + {b}"),
    "Mean": ("zero", lambda a, b: f"{a} + {b}"),
    "Prod": ("one", lambda a, b: f"{a} * {b}"),
    "Max": ("lowest", lambda a, b: f"max({a}, {b})"),
    "MaxAbs": ("lowest", lambda a, b: f"max({a}, {b})"),
    "Min": ("highest", lambda a, b: f"min({a}, {b})"),
    "Any": ("zero", lambda a, b: f"{a} | {b}"),
    "All": ("one", lambda a, b: f"{a} & {b}"),
}
INSTRUCTIONS = tuple(COMBINE) + ("ArgMax", "ArgMin")


@dataclass(frozen=True, slots=True)
class ReduceKernelSpec:
    """What a fused reduce kernel is specialised on (its identity in the kernel cache)."""

    read: FuseBlockConfig
    write: FuseBlockConfig
    signature: KernelSignature
    inst: str
    axis: int  # the reduced axis at the kernel rank
    input: FuseArg  # the reduction's input: a multi-block value of the read block
    output: BlockLocal  # the reduction's output: a local of the write block
    acc: FuseType
    routine: str  # "unit" or "cube"
    mode: str  # "scalar", "parallel" or "perpendicular"

    @property
    def width(self) -> int:
        return 1 if self.mode == "scalar" else self.read.width

    def key(self) -> tuple:
        return (config_id(self.read), config_id(self.write), self.signature, self.inst,
                self.axis, self.input, self.output, self.acc, self.routine, self.mode)


@dataclass(frozen=True, slots=True)
class ReduceWords:
    """Word positions of the reduce part of ``info`` (after both blocks' layouts)."""

    base: int
    rank: int

    def groups(self) -> int:
        return self.base

    def group_shape(self, d: int) -> int:
        return self.base + 1 + d

    def read_stride(self, d: int) -> int:
        return self.base + 1 + self.rank + d

    def write_stride(self, d: int) -> int:
        return self.base + 1 + 2 * self.rank + d

    def steps(self) -> int:
        return self.base + 1 + 3 * self.rank

    def step(self) -> int:
        return self.steps() + 1

    def lane_step(self) -> int:
        return self.steps() + 2

    def identity(self) -> int:
        return self.steps() + 3

    def length(self) -> int:
        return self.steps() + 4


@dataclass(frozen=True, slots=True)
class FusedReduceKernel:
    """An emitted fused reduce: source, both block functions (their metadata layouts), the
    reduce words, binding order (``("in", k)`` / ``("out", k)``; ``info`` last) and the
    workgroup storage it declares per invocation (bytes)."""

    spec: ReduceKernelSpec
    source: str
    read: BlockFunction
    write: BlockFunction
    words: ReduceWords
    bindings: tuple[tuple[str, int], ...]
    shared_bytes_per_invocation: int

    @property
    def config(self) -> FuseBlockConfig:
        """The read block's config (what the executor's records name a kernel by)."""
        return self.spec.read


def _info(word: int) -> str:
    return f"info[{word}u]"


class _Reduction:
    """The WGSL of one instruction over ``width``-wide accumulators."""

    def __init__(self, spec: ReduceKernelSpec, words: ReduceWords) -> None:
        self.spec, self.words, self.width = spec, words, spec.width
        self.value = compute_dtype(spec.input.ty)
        self.arg = spec.inst in ("ArgMax", "ArgMin")
        self.logical = spec.inst in ("Any", "All")
        self.acc = self.value if self.arg else DType.U32 if self.logical else \
            compute_dtype(spec.acc)
        self.out = compute_dtype(spec.output.ty)
        self.vacc = value_type(self.acc, self.width)
        self.vidx = value_type(DType.U32, self.width)

    def identity(self) -> str:
        if self.arg and self.spec.routine != "plane":
            return f"{self.vacc}()"
        kind = ("lowest" if self.spec.inst == "ArgMax" else "highest") if self.arg else \
            COMBINE[self.spec.inst][0]
        if kind in ("lowest", "highest"):
            return scalar_load(self.words.identity(), self.acc, self.width)
        return literal(0 if kind == "zero" else 1, self.acc, self.width)

    def prepare(self, v: str) -> str:
        """A loaded value as an accumulator operand."""
        if self.logical:
            zero = literal(0, self.value, self.width)
            return f"select({literal(0, DType.U32, self.width)}, " \
                   f"{literal(1, DType.U32, self.width)}, {v} != {zero})"
        if self.spec.inst == "MaxAbs" and WGSL_TYPE[self.value] != "u32":
            v = f"abs({v})"
        return v if self.acc is self.value else f"{self.vacc}({v})"

    def combine(self, a: str, b: str) -> str:
        return COMBINE[self.spec.inst][1](a, b)

    def better(self, b: str, a: str) -> str:
        return f"({b} {'>' if self.spec.inst == 'ArgMax' else '<'} {a})"

    def take(self, b: str, ib: str, a: str, ia: str, lane: bool = False) -> str:
        """Whether (``b``, ``ib``) replaces (``a``, ``ia``): first index of the extreme
        (``lane``: scalars taken from the accumulator's lanes)."""
        empty = SENTINEL if lane or self.width == 1 else f"{self.vidx}({SENTINEL})"
        return (f"({ib} != {empty}) & (({ia} == {empty}) | "
                f"{self.better(b, a)} | (({b} == {a}) & ({ib} < {ia})))")

    def arg_value(self, index: str) -> str:
        """An index as the output value; an empty axis (no index) gives 0, as the oracle."""
        return f"{WGSL_TYPE[self.out]}(select({index}, 0u, {index} == {SENTINEL}))"

    def finish(self, acc: str) -> str:
        """A reduced scalar accumulator as the reduction's output value."""
        value = acc
        if self.spec.inst == "Mean":
            count = _info(self.words.length())
            value = f"{acc} / {WGSL_TYPE[self.acc]}(max({count}, 1u))"
        return value if WGSL_TYPE[self.acc] == WGSL_TYPE[self.out] else \
            f"{WGSL_TYPE[self.out]}({value})"


def _group_lines(spec: ReduceKernelSpec, words: ReduceWords, g: str) -> list[str]:
    """Group ``g``'s first read element ``base_in`` and output element ``base_out``."""
    rank = spec.read.rank
    lines = [f"    var rest = {g};"]
    for d in range(rank - 1, 0, -1):
        lines.append(f"    let c{d} = rest % {_info(words.group_shape(d))};")
        lines.append(f"    rest = rest / {_info(words.group_shape(d))};")
    lines.append("    let c0 = rest;")
    read = " + ".join(f"c{d} * {_info(words.read_stride(d))}" for d in range(rank)) or "0u"
    write = " + ".join(f"c{d} * {_info(words.write_stride(d))}" for d in range(rank)) or "0u"
    return lines + [f"    let base_in = {read};", f"    let base_out = {write};",
                    f"    let step = {_info(words.step())};"]


Reduction = _Reduction


def _load_lines(r: _Reduction, read: BlockFunction, k: str, indent: str) -> list[str]:
    """Load at step ``k`` into ``acc`` (or ``best``/``index``)."""
    width = r.width
    element = f"base_in + {k} * step"
    pos = element if width == 1 else f"({element}) / {width}u"
    lines = [f"{indent}let v = {read.call(pos)};"]
    if not r.arg:
        return lines + [f"{indent}acc = {r.combine('acc', r.prepare('v'))};"]
    if r.spec.mode == "parallel":
        lanes = ", ".join(f"{lane}u" for lane in range(width))
        idx = f"{r.vidx}({k} * {width}u) + {r.vidx}({lanes})"
    else:
        idx = k if width == 1 else f"{r.vidx}({k})"
    return lines + [f"{indent}let idx = {idx};",
                    f"{indent}let take = {r.take('v', 'idx', 'best', 'index')};",
                    f"{indent}best = select(best, v, take);",
                    f"{indent}index = select(index, idx, take);"]


def _write_lines(r: _Reduction, write: BlockFunction, acc: str, index: str,
                 indent: str) -> list[str]:
    """Finish the group's accumulator and run the write block on each output."""
    width, lines = r.width, []
    if r.spec.mode == "perpendicular":
        step = _info(r.words.lane_step())
        for lane in range(width):
            value = r.arg_value(f"{index}[{lane}]") if r.arg else r.finish(f"{acc}[{lane}]")
            at = "base_out" if lane == 0 else f"base_out + {lane}u * {step}"
            lines.append(f"{indent}{write.call(f'{at}, {value}')};")
        return lines
    if width > 1:  # parallel: fold the lanes
        if r.arg:
            lines += [f"{indent}var b = {acc}[0];", f"{indent}var i = {index}[0];"]
            for lane in range(1, width):
                take = r.take(f"{acc}[{lane}]", f"{index}[{lane}]", "b", "i", True)
                lines += [f"{indent}if ({take}) {{",
                          f"{indent}    b = {acc}[{lane}];",
                          f"{indent}    i = {index}[{lane}];",
                          f"{indent}}}"]
            acc, index = "b", "i"
        else:
            folded = f"{acc}[0]"
            for lane in range(1, width):
                folded = r.combine(folded, f"{acc}[{lane}]")
            lines.append(f"{indent}let folded = {folded};")
            acc = "folded"
    value = r.arg_value(index) if r.arg else r.finish(acc)
    call = write.call(f"base_out, {value}")
    return lines + [f"{indent}{write.name}_out = {call};" if write.result else
                    f"{indent}{call};"]


def _unit(r: _Reduction, read: BlockFunction, write: BlockFunction) -> tuple[list, list]:
    words = r.words
    body = ["    let g = group * WG_SIZE + lid;",
            f"    if (g >= {_info(words.groups())}) {{", "        return;", "    }"]
    body += _group_lines(r.spec, words, "g")
    body += reduce_lines(r, read, write, "unit", "", "    ")
    return [], body


def _state(r: _Reduction, indent: str) -> list[str]:
    if r.arg:
        sentinel = SENTINEL if r.width == 1 else f"{r.vidx}({SENTINEL})"
        return [f"{indent}var best = {r.identity()};", f"{indent}var index = {sentinel};"]
    return [f"{indent}var acc = {r.identity()};"]


def shared_lines(r: _Reduction, suffix: str) -> list[str]:
    """The workgroup arrays of a cube reduction (``suffix`` tells several apart)."""
    shared = [f"var<workgroup> shared_acc{suffix}: array<{r.vacc}, WG_SIZE>;"]
    if r.arg:
        shared.append(f"var<workgroup> shared_index{suffix}: array<{r.vidx}, WG_SIZE>;")
    return shared


def reduce_lines(r: _Reduction, read: BlockFunction, write: BlockFunction, routine: str,
                 suffix: str, i: str) -> list[str]:
    """One reduction of the group at ``base_in`` into the write block at ``base_out``:
    ``unit`` loops alone; ``cube`` strides the workgroup over the steps, then a tree over
    the shared accumulators (``WG_SIZE`` a power of two; barriers in uniform control flow),
    and invocation 0 writes."""
    body = _state(r, i)
    result = "best" if r.arg else "acc"
    if routine == "unit":
        body += [f"{i}for (var k = 0u; k < {_info(r.words.steps())}; k = k + 1u) {{"]
        body += _load_lines(r, read, "k", i + "    ")
        return body + [f"{i}}}"] + _write_lines(r, write, result, "index", i)
    acc, idx = f"shared_acc{suffix}", f"shared_index{suffix}"
    body += [f"{i}let steps = select(0u, {_info(r.words.steps())}, live);",
             f"{i}for (var k = lid; k < steps; k = k + WG_SIZE) {{"]
    body += _load_lines(r, read, "k", i + "    ")
    body += [f"{i}}}", f"{i}{acc}[lid] = {result};"]
    if r.arg:
        body += [f"{i}{idx}[lid] = index;"]
    body += [f"{i}workgroupBarrier();",
             f"{i}for (var half = WG_SIZE / 2u; half > 0u; half = half / 2u) {{",
             f"{i}    if (lid < half) {{"]
    j = i + "        "
    if r.arg:
        body += [f"{j}let a = {acc}[lid];", f"{j}let ia = {idx}[lid];",
                 f"{j}let b = {acc}[lid + half];", f"{j}let ib = {idx}[lid + half];",
                 f"{j}let take = {r.take('b', 'ib', 'a', 'ia')};",
                 f"{j}{acc}[lid] = select(a, b, take);",
                 f"{j}{idx}[lid] = select(ia, ib, take);"]
    else:
        body += [f"{j}{acc}[lid] = {r.combine(f'{acc}[lid]', f'{acc}[lid + half]')};"]
    body += [f"{i}    }}", f"{i}    workgroupBarrier();", f"{i}}}",
             f"{i}if (lid == 0u && live) {{"]
    if r.arg:
        body += [f"{i}    let best = {acc}[0];", f"{i}    let index = {idx}[0];"]
    else:
        body += [f"{i}    let acc = {acc}[0];"]
    body += _write_lines(r, write, result, "index", i + "    ")
    return body + [f"{i}}}"]


def _cube(r: _Reduction, read: BlockFunction, write: BlockFunction) -> tuple[list, list]:
    """One workgroup per group (no early return: its barriers are uniform)."""
    body = [f"    let live = group < {_info(r.words.groups())};"]
    body += _group_lines(r.spec, r.words, "group")
    return shared_lines(r, ""), body + reduce_lines(r, read, write, "cube", "", "    ")


def _plane(r: _Reduction, read: BlockFunction, write: BlockFunction) -> tuple[list, list]:
    """One plane (subgroup) per group: its lanes stride over the steps, a subgroup
    operation folds them (argmax/argmin: the extreme, then the least index holding it; an
    empty lane holds the identity and no index), lane 0 writes. Planes stride over the
    groups, so the grid needs no subgroup size."""
    words = r.words
    body = ["    let planes = WG_SIZE / plane;",
            "    let stride = nwg.x * nwg.y * nwg.z * planes;",
            f"    for (var g = group * planes + lid / plane; g < {_info(words.groups())}; "
            "g = g + stride) {"]
    body += ["    " + line for line in _group_lines(r.spec, words, "g")]
    i = "        "
    body += _state(r, i)
    body += [f"{i}for (var k = lane; k < {_info(words.steps())}; k = k + plane) {{"]
    body += _load_lines(r, read, "k", i + "    ")
    body += [f"{i}}}"]
    if r.arg:
        fold = "subgroupMax" if r.spec.inst == "ArgMax" else "subgroupMin"
        empty = SENTINEL if r.width == 1 else f"{r.vidx}({SENTINEL})"
        body += [f"{i}let extreme = {fold}(best);",
                 f"{i}index = subgroupMin(select({empty}, index, best == extreme));",
                 f"{i}best = extreme;"]
    else:
        body += [f"{i}acc = {PLANE_OPS[r.spec.inst]}(acc);"]
    body += [f"{i}if (lane == 0u) {{"]
    body += _write_lines(r, write, "best" if r.arg else "acc", "index", i + "    ")
    return [], body + [f"{i}}}", "    }"]


def _check(spec: ReduceKernelSpec) -> None:
    if spec.inst not in INSTRUCTIONS:
        raise UnsupportedOpError(f"fused reduce: no instruction {spec.inst!r}")
    if spec.routine not in ROUTINES or spec.mode not in MODES:
        raise UnsupportedOpError(f"fused reduce: routine {spec.routine!r}, mode {spec.mode!r}")
    if spec.width not in (1, 2, 4):
        raise UnsupportedOpError(f"fused reduce: vector width {spec.width}")


def emit_reduce(spec: ReduceKernelSpec) -> FusedReduceKernel:
    """The WGSL of one fused reduce (deterministic: the same spec, the same bytes)."""
    _check(spec)
    width = spec.width
    read = block_function(spec.read, spec.signature, 0, "r0", {}, spec.input, width)
    out_ty = compute_dtype(spec.output.ty)
    write = block_function(spec.write, spec.signature, read.layout.words(), "w0",
                           {spec.output: ("reduced", out_ty, WGSL_TYPE[out_ty])}, None, 1)
    words = ReduceWords(write.layout.base + write.layout.words(), spec.read.rank)
    r = _Reduction(spec, words)
    shared, body = {"unit": _unit, "cube": _cube, "plane": _plane}[spec.routine](r, read, write)
    bindings, order = binding_list(spec.signature, read.written | write.written)
    helpers = list(read.helpers) + [read.source] + list(write.helpers) + [write.source]
    summary = (f"{spec.inst} axis {spec.axis}, {spec.routine} routine, {spec.mode} width "
               f"{width}, acc {r.acc.value}\n// read ops: "
               f"{' '.join(op.name for op in spec.read.ops)}\n// write ops: "
               f"{' '.join(op.name for op in spec.write.ops)}")
    if spec.routine == "plane":
        source = render_kernel("reduce_fuse_plane", summary, bindings, helpers, body)
    else:
        source = render_kernel("reduce_fuse", summary, bindings, helpers, body,
                               shared="\n".join(shared) + ("\n" if shared else ""))
    per_invocation = _bytes(r.acc, width) + (_bytes(DType.U32, width) if r.arg else 0)
    return FusedReduceKernel(spec, source, read, write, words, tuple(order),
                             per_invocation if spec.routine == "cube" else 0)


def binding_list(signature: KernelSignature, written: frozenset[int]) -> tuple[list, list]:
    """The declared bindings (inputs, then owned outputs) and their ``("in"|"out", k)``
    order; an input written in place is ``read_write``."""
    bindings, order = [], []
    for k, tensor in enumerate(signature.inputs):
        bindings.append(Binding(f"in{k}", tensor.dtype, tensor.vector_size,
                                writable=k in written))
        order.append(("in", k))
    for k, tensor in enumerate(signature.outputs):
        if tensor.alias is None:
            bindings.append(Binding(f"out{k}", tensor.dtype, tensor.vector_size, writable=True))
            order.append(("out", k))
    return bindings, order


def _bytes(dtype: DType, width: int) -> int:
    size = 2 if dtype is DType.F16 else 4
    return size * (4 if width == 3 else width)
