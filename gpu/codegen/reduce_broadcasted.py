"""WGSL for burn's ReduceBroadcasted (softmax, layer norm) as one launch: each row runs every
block of the full trace in order, reductions and the element-wise blocks that broadcast their
results back over the row.

burn counterpart: ``burn-cubecl-fusion/src/optim/reduce_broadcasted/optimization.rs`` and
``launch.rs``/``unit.rs`` (``ReduceBroadcastedOptimization``: one row per unit, the reduce
blocks then the broadcast tail over the row, last axis only). Beyond burn, the ``cube`` form
runs a row per workgroup (long rows): invocations stride over the row, each reduction folds
through shared accumulators (``gpu.codegen.reduce_fused.reduce_lines``) and a
``storageBarrier`` after every block makes what one invocation wrote (the reduced value, an
intermediate the next block reads back) visible to the others of the row.

The blocks are the full trace's configs: a reduction's read block (the config that writes its
input) and write block (the next config), or an element-wise block (``fn e{i}_fuse(pos)``,
run on every position of the row). Each config keeps its own metadata layout, then come the
kernel's words:

==================  ==============================================================
words               content
==================  ==============================================================
``B + …``           rows, row shape[R] (the reduced axis 1), row length
per config ``c``    strides[R] of its reference (a row's first element), steps, step
per reduction       identity word
==================  ==============================================================

The numpy oracle of a ReduceBroadcasted step is burn's default path, its per-block
fallbacks (``refimpl.interpreter``): the fused launch agrees within the reduction bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

from refimpl.planner.launch.launch import FuseBlockConfig, config_id
from refimpl.planner.engine.trace import BlockLocal, FuseArg, FuseType
from gpu.codegen.fused_signature import KernelSignature, _args, compute_dtype
from gpu.codegen.reduce_blocks import MULTI, BlockFunction, block_function
from gpu.codegen.reduce_fused import (
    Reduction, ReduceKernelSpec, binding_list, reduce_lines, shared_lines,
)
from gpu.codegen.render import render_kernel
from gpu.codegen.types import WGSL_TYPE, value_type
from gpu.errors import UnsupportedOpError

__all__ = ["ReduceSegment", "BroadcastedSpec", "BroadcastedWords", "FusedBroadcastedKernel",
           "emit_broadcasted", "segments_of"]


@dataclass(frozen=True, slots=True)
class ReduceSegment:
    """A reduction of the full trace: its read and write configs (indices), instruction,
    input (multi-block value), output (write-block local) and accumulator."""

    read: int
    write: int
    inst: str
    input: FuseArg
    output: BlockLocal
    acc: FuseType


Segment = "ReduceSegment | int"  # an int: an element-wise config


def segments_of(configs: tuple[FuseBlockConfig, ...], reductions: tuple) -> tuple:
    """Split the full trace's configs into reductions (read + write) and element-wise blocks;
    ``reductions`` holds ``(inst, input, output, acc)`` in trace order."""
    segments, pending, i = [], list(reductions), 0
    while i < len(configs):
        if pending and any(isinstance(op.args.out, MULTI) and op.args.out.pos == pending[0][1].pos
                           for op in configs[i].ops if hasattr(op.args, "out")):
            if i + 1 >= len(configs):
                raise UnsupportedOpError("a reduction without a write block")
            inst, source, output, acc = pending.pop(0)
            segments.append(ReduceSegment(i, i + 1, inst, source, output, acc))
            i += 2
        else:
            segments.append(i)
            i += 1
    if pending:
        raise UnsupportedOpError("a reduction whose input no block writes")
    return tuple(segments)


@dataclass(frozen=True, slots=True)
class BroadcastedSpec:
    """What a fused ReduceBroadcasted kernel is specialised on."""

    configs: tuple[FuseBlockConfig, ...]
    signature: KernelSignature
    axis: int
    segments: tuple
    routine: str

    def key(self) -> tuple:
        return (tuple(config_id(c) for c in self.configs), self.signature, self.axis,
                self.segments, self.routine)


@dataclass(frozen=True, slots=True)
class BroadcastedWords:
    """Word positions of the kernel's own part of ``info``."""

    base: int
    rank: int
    configs: int
    reductions: int

    def groups(self) -> int:
        return self.base

    def group_shape(self, d: int) -> int:
        return self.base + 1 + d

    def length(self) -> int:
        return self.base + 1 + self.rank

    def stride(self, c: int, d: int) -> int:
        return self.length() + 1 + c * (self.rank + 2) + d

    def steps_of(self, c: int) -> int:
        return self.stride(c, self.rank)

    def step_of(self, c: int) -> int:
        return self.steps_of(c) + 1

    def identity_of(self, j: int) -> int:
        return self.stride(self.configs, 0) + j

    def total(self) -> int:
        return self.identity_of(self.reductions)


class _SegmentWords:
    """A ``ReduceWords`` view for one reduction (what ``Reduction`` reads)."""

    def __init__(self, words: BroadcastedWords, read: int, j: int) -> None:
        self.words, self.read, self.j = words, read, j

    def steps(self) -> int:
        return self.words.steps_of(self.read)

    def step(self) -> int:
        return self.words.step_of(self.read)

    def identity(self) -> int:
        return self.words.identity_of(self.j)

    def length(self) -> int:
        return self.words.length()

    def groups(self) -> int:
        return self.words.groups()

    def lane_step(self) -> int:
        raise UnsupportedOpError("ReduceBroadcasted reduces its last axis: no perpendicular")


@dataclass(frozen=True, slots=True)
class FusedBroadcastedKernel:
    """An emitted ReduceBroadcasted launch: source, the block functions, words, bindings and
    workgroup storage per invocation (bytes, cube form)."""

    spec: BroadcastedSpec
    source: str
    functions: tuple[BlockFunction, ...]
    words: BroadcastedWords
    bindings: tuple[tuple[str, int], ...]
    shared_bytes_per_invocation: int

    @property
    def config(self) -> FuseBlockConfig:
        return self.spec.configs[0]


def _info(word: int) -> str:
    return f"info[{word}u]"


def _mode(config: FuseBlockConfig, axis: int) -> str:
    if config.width == 1:
        return "scalar"
    if config.vector_axis != axis:
        raise UnsupportedOpError("ReduceBroadcasted: a block vectorised across rows")
    return "parallel"


def emit_broadcasted(spec: BroadcastedSpec) -> FusedBroadcastedKernel:
    """The WGSL of one ReduceBroadcasted launch (deterministic bytes)."""
    if spec.routine not in ("unit", "cube"):
        raise UnsupportedOpError(f"ReduceBroadcasted has no {spec.routine!r} form")
    configs, rank = spec.configs, spec.configs[0].rank
    writes = {s.write: s for s in spec.segments if isinstance(s, ReduceSegment)}
    reads = {s.read: s for s in spec.segments if isinstance(s, ReduceSegment)}
    functions, base, produced = [], 0, {}
    for c, config in enumerate(configs):
        width = 1 if c in writes else config.width
        params, args = {}, []
        for arg in _multi_reads(config):
            if arg.pos not in produced:
                raise UnsupportedOpError(f"{arg!r} is read but no earlier reduction wrote it")
            name, dtype = produced[arg.pos]
            params[arg] = (f"m{len(args)}", dtype, None)
            args.append(name if width == 1 else f"{value_type(dtype, width)}({name})")
        if c in writes:
            out_ty = compute_dtype(writes[c].output.ty)
            params[writes[c].output] = ("reduced", out_ty, WGSL_TYPE[out_ty])
            later = {arg.pos: arg for later in configs[c + 1:] for arg in _multi_reads(later)}
            mine = [arg for arg in _multi_writes(config) if arg.pos in later]
            if len(mine) > 1:
                raise UnsupportedOpError("a write block sharing several values")
            fn = block_function(config, spec.signature, base, f"w{c}", params,
                                mine[0] if mine else None, 1, tuple(args))
            if mine:
                produced[mine[0].pos] = (f"{fn.name}_out", compute_dtype(mine[0].ty))
        elif c in reads:
            _mode(config, spec.axis)
            fn = block_function(config, spec.signature, base, f"r{c}", params, reads[c].input,
                                None, tuple(args))
        else:
            _mode(config, spec.axis)
            fn = block_function(config, spec.signature, base, f"e{c}", params, None, None,
                                tuple(args))
        functions.append(fn)
        base = fn.layout.base + fn.layout.words()
    n_reductions = len(reads)
    words = BroadcastedWords(base, rank, len(configs), n_reductions)
    cube = spec.routine == "cube"
    body = [f"    let live = group < {_info(words.groups())};"] if cube else [
        "    let g = group * WG_SIZE + lid;",
        f"    if (g >= {_info(words.groups())}) {{", "        return;", "    }"]
    body += [f"    var rest = {'group' if cube else 'g'};"]
    for d in range(rank - 1, 0, -1):
        body += [f"    let c{d} = rest % {_info(words.group_shape(d))};",
                 f"    rest = rest / {_info(words.group_shape(d))};"]
    body += ["    let c0 = rest;"]
    shared, per_invocation = [], 0
    for name, dtype in produced.values():  # reduced values later blocks read
        if cube:
            shared.append(f"var<workgroup> {name}: {WGSL_TYPE[dtype]};")
        else:
            body.append(f"    var {name}: {WGSL_TYPE[dtype]};")
    for j, segment in enumerate(spec.segments):
        first = segment.read if isinstance(segment, ReduceSegment) else segment
        body += ["    {", f"        let base_in = {_base(words, first, rank)};",
                 f"        let step = {_info(words.step_of(first))};"]
        if isinstance(segment, ReduceSegment):
            k = sum(1 for s in spec.segments[:j] if isinstance(s, ReduceSegment))
            r = _reduction(spec, segment, words, k)
            body += [f"        let base_out = {_base(words, segment.write, rank)};"]
            body += reduce_lines(r, functions[segment.read], functions[segment.write],
                                 spec.routine, str(k), "        ")
            if cube:
                shared += shared_lines(r, str(k))
                per_invocation += _bytes(r)
        else:
            width = configs[segment].width
            pos = "base_in + k * step" if width == 1 else f"(base_in + k * step) / {width}u"
            start, stride = ("lid", "WG_SIZE") if cube else ("0u", "1u")
            steps = f"select(0u, {_info(words.steps_of(segment))}, live)" if cube else \
                _info(words.steps_of(segment))
            body += [f"        for (var k = {start}; k < {steps}; k = k + {stride}) {{",
                     f"            {functions[segment].call(pos)};", "        }"]
        body += ["    }"]
        if cube:
            body += ["    storageBarrier();"]
            if isinstance(segment, ReduceSegment) and functions[segment.write].result:
                body += ["    workgroupBarrier();"]
    written = frozenset().union(*(fn.written for fn in functions))
    bindings, order = binding_list(spec.signature, written)
    helpers = [h for fn in functions for h in (*fn.helpers, fn.source)]
    summary = (f"ReduceBroadcasted axis {spec.axis}, {spec.routine} form, "
               f"{n_reductions} reductions\n// blocks: " + " | ".join(
                   " ".join(op.name for op in config.ops) for config in configs))
    source = render_kernel("reduce_fuse", summary, bindings, helpers, body,
                           shared="\n".join(shared) + ("\n" if shared else ""))
    return FusedBroadcastedKernel(spec, source, tuple(functions), words, tuple(order),
                                  per_invocation)


def _multi_reads(config: FuseBlockConfig) -> list:
    """The multi-block values ``config`` reads that it did not write itself (first use)."""
    written, found = set(), {}
    for op in config.ops:
        out = getattr(op.args, "out", None)
        for arg in _args(op.args):
            if isinstance(arg, MULTI) and arg is not out and arg.pos not in written:
                found.setdefault(arg.pos, arg)
        if isinstance(out, MULTI):
            written.add(out.pos)
    return list(found.values())


def _multi_writes(config: FuseBlockConfig) -> list:
    return [op.args.out for op in config.ops if isinstance(getattr(op.args, "out", None), MULTI)]


def _base(words: BroadcastedWords, c: int, rank: int) -> str:
    return " + ".join(f"c{d} * {_info(words.stride(c, d))}" for d in range(rank)) or "0u"


def _reduction(spec: BroadcastedSpec, segment: ReduceSegment, words: BroadcastedWords,
               k: int) -> Reduction:
    read = spec.configs[segment.read]
    part = ReduceKernelSpec(read, spec.configs[segment.write], spec.signature, segment.inst,
                            spec.axis, segment.input, segment.output, segment.acc,
                            spec.routine, _mode(read, spec.axis))
    return Reduction(part, _SegmentWords(words, segment.read, k))


def _bytes(r: Reduction) -> int:
    size = 2 if WGSL_TYPE[r.acc] == "f16" else 4
    return size * r.width * (2 if r.arg else 1)
