"""The blocks of a multi-block fused kernel (reduce, ReduceBroadcasted) printed as WGSL
functions: the read block as ``fn r{b}_fuse(pos) -> value``, the write block as
``fn w{b}_fuse(pos, reduced)``.

burn counterpart: ``burn-cubecl-fusion/src/optim/reduce/args.rs`` (``FusedReduceInput`` /
``FusedReduceOutput``: ``fuse_on_read`` runs the read block inside every load of the
reduction, ``fuse_on_write`` the write block on every reduced value) and
``engine/codegen/kernel.rs`` (``fuse_on_read``, ``fuse_on_write``, ``multi_block_variables``).
The numpy twin is ``refimpl.interpreter.Interpreter.run_reduce`` (``refimpl.fused_kernel``
with ``seeds`` and ``shared``).

Each block is printed by ``gpu.codegen.fuse_io.BodyWriter`` with ``gpu.codegen.emit``'s op
emitters, exactly as an element-wise block; three things differ:

* its metadata words sit at ``base`` in the one ``info`` buffer (``OffsetLayout``), so every
  block keeps its own reference layout (the read block's is the reduction's input, the write
  block's its output);
* its helper functions are prefixed with the block's name (``r0_offset_in0``): two blocks
  index the same binding with different reference strides;
* a multi-block value (``MultiBlockLocal`` / ``MultiBlockGlobal``) written by the block is
  captured (the reduction's input, a value a later block reads) instead of stored; one read
  is a parameter of the function, bound by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping

from refimpl.dtypes import DType
from refimpl.planner.launch.launch import FuseBlockConfig
from refimpl.planner.engine.trace import (
    BlockLocal, FuseArg, Literal, MultiBlockGlobal, MultiBlockLocal, Scalar,
)
from gpu.codegen.emit import _OPS, _elementwise
from gpu.codegen.fuse_io import BodyWriter
from gpu.codegen.fused_signature import (
    KernelSignature, MetadataLayout, compute_dtype, literals, metadata_layout,
)
from gpu.codegen.render import scalar_load
from gpu.codegen.types import value_type
from gpu.errors import UnsupportedOpError

__all__ = ["OffsetLayout", "BlockFunction", "block_function", "MULTI"]

MULTI = (MultiBlockLocal, MultiBlockGlobal)


class OffsetLayout:
    """A block's ``MetadataLayout`` whose words start at ``base`` of the shared ``info``."""

    def __init__(self, layout: MetadataLayout, base: int) -> None:
        self.inner, self.base = layout, base

    def __getattr__(self, name: str) -> Callable[..., int]:
        method = getattr(self.inner, name)
        return lambda *args: self.base + method(*args)

    def words(self) -> int:
        """How many words the block's layout holds (``pack``'s length)."""
        return self.inner.literal(len(self.inner.literal_words))


class _BlockWriter(BodyWriter):
    """A ``BodyWriter`` for one block of a multi-block kernel (see the module docstring)."""

    def __init__(self, config: FuseBlockConfig, signature: KernelSignature,
                 layout: OffsetLayout, prefix: str,
                 params: Mapping[FuseArg, tuple[str, DType]]) -> None:
        super().__init__(config, signature, layout)  # type: ignore[arg-type]
        self.prefix = prefix
        self.params = dict(params)
        self.captured: dict[object, tuple[str, DType]] = {}
        for arg, named in params.items():
            if isinstance(arg, BlockLocal):
                self.names[arg] = named

    def helper(self, name: str, source: Callable[[], str]) -> str:
        prefixed = f"{self.prefix}_{name}"
        if prefixed not in self.helpers:
            self.helpers[prefixed] = source().replace(f"fn {name}(", f"fn {prefixed}(", 1)
        return prefixed

    def raw(self, arg: FuseArg, name: str) -> tuple[str, DType]:
        if isinstance(arg, MULTI):
            if arg.pos in self.captured:
                return self.captured[arg.pos]
            for known, named in self.params.items():
                if isinstance(known, MULTI) and known.pos == arg.pos:
                    return named
            raise UnsupportedOpError(f"{arg!r} is read but no earlier block wrote it")
        if isinstance(arg, Scalar):
            dtype = compute_dtype(arg.ty)
            return scalar_load(self.layout.scalar(arg.index), dtype, self.width), dtype
        if isinstance(arg, Literal):
            dtype = compute_dtype(arg.ty)
            k = literals(self.config).index(arg)
            return scalar_load(self.layout.literal(k), dtype, self.width), dtype
        return super().raw(arg, name)

    def define(self, i: int, out: FuseArg, expr: str, dtype: DType) -> None:
        if isinstance(out, MULTI):
            want = compute_dtype(out.ty)
            self.captured[out.pos] = (self.let(f"t{i}", self.convert(expr, dtype, want)), want)
            return
        super().define(i, out, expr, dtype)


@dataclass(frozen=True, slots=True)
class BlockFunction:
    """One block printed as a function: its source, the helpers it calls, the values it
    captured (multi-block position → local name and dtype), its metadata layout and words."""

    name: str
    source: str
    helpers: tuple[str, ...]
    captured: Mapping[object, tuple[str, DType]]
    layout: OffsetLayout
    written: frozenset[int]
    width: int
    vector_accesses: tuple = ()
    args: tuple[str, ...] = ()  # what a call passes after ``pos``
    result: bool = False  # the function returns a value

    def call(self, pos: str) -> str:
        return f"{self.name}({', '.join((pos, *self.args))})"


def block_function(config: FuseBlockConfig, signature: KernelSignature, base: int,
                   prefix: str, params: Mapping[FuseArg, tuple[str, DType, str]],
                   returns: FuseArg | None, width: int | None = None,
                   args: tuple[str, ...] = ()) -> BlockFunction:
    """``fn {prefix}_fuse(pos: u32, <params>) -> <returns>`` evaluating ``config``'s ops at
    position ``pos`` of its reference (``width`` elements per position, default the
    config's). ``params`` maps a local or a multi-block value the block reads to its
    parameter name, dtype and WGSL type (``None``: the dtype at the block's width);
    ``returns`` is the multi-block value the function returns (the reduction's input, a
    reduced value later blocks read) or ``None``; ``args`` the expressions a call passes for
    the parameters after ``pos``."""
    if width is not None and width != config.width:
        config = replace(config, width=width)
    params = {arg: (name, dtype, value_type(dtype, config.width) if ty is None else ty)
              for arg, (name, dtype, ty) in params.items()}
    layout = OffsetLayout(metadata_layout(config, signature), base)
    writer = _BlockWriter(config, signature, layout, prefix,
                          {arg: (name, dtype) for arg, (name, dtype, _) in params.items()})
    for i, op in enumerate(config.ops):
        _OPS.get(op.name, _elementwise)(writer, i, op)
    header = ", ".join(["pos: u32"] + [f"{name}: {ty}" for name, _, ty in params.values()])
    lines = list(writer.lines)
    result = ""
    if returns is not None:
        if returns.pos not in writer.captured:
            raise UnsupportedOpError("the read block never writes the reduction's input")
        value, dtype = writer.captured[returns.pos]
        result = f" -> {value_type(dtype, config.width)}"
        lines.append(f"    return {value};")
    source = f"fn {prefix}_fuse({header}){result} {{\n" + "\n".join(lines) + "\n}"
    return BlockFunction(f"{prefix}_fuse", source, tuple(writer.helpers.values()),
                         dict(writer.captured), layout, frozenset(writer.written),
                         config.width, tuple(writer.vector_accesses), tuple(args),
                         returns is not None)
