"""Kernel rendering, what every kernel (standalone or fused) shares: bindings, the metadata word
layout, index math and skeleton filling.

burn counterpart: cubecl's kernel ``info`` buffer (``compute/metadata`` — shapes, strides and
scalars passed at launch, not compiled in) and burn-cubecl-fusion's index helpers
(``engine/codegen/io.rs``: ``get_offset``, position → coordinates → strided offset).

Metadata is one read-only storage buffer of ``u32`` words, bound last and named ``info``.
Its layout is fixed when the source is generated (``Schema``: rank, number of strided
views, number of scalars) and filled per launch, so the same kernel serves every shape:

====================  =========================================================
word                  content
====================  =========================================================
0                     number of invocations that do work (elements / width)
1 .. R                the iteration shape (row-major, last dim fastest)
per view j            offset, then R strides (i32 bit patterns, in elements)
then                  scalars (f32/i32/u32 bit patterns; f16 in the low half)
====================  =========================================================
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from string import Template
from typing import Sequence

import numpy as np

from refimpl.dtypes import DType
from gpu.codegen.types import WGSL_TYPE, vector_type

__all__ = ["Binding", "Schema", "render_kernel", "scalar_word", "scalar_load",
           "coords_lines", "dedupe"]


@dataclass(frozen=True, slots=True)
class Binding:
    """One storage buffer of a kernel (bound in declaration order; ``info`` comes last)."""

    name: str
    dtype: DType
    width: int = 1
    writable: bool = False
    storage: str | None = None  # element type override (``u32`` for bit copies)

    def declaration(self, index: int) -> str:
        scalar = self.storage or WGSL_TYPE[self.dtype]
        access = "read_write" if self.writable else "read"
        element = vector_type(scalar, self.width)
        return (f"@group(0) @binding({index}) var<storage, {access}> {self.name}: "
                f"array<{element}>;")

    @property
    def needs_f16(self) -> bool:
        return (self.storage or WGSL_TYPE[self.dtype]) == "f16"


@dataclass(frozen=True, slots=True)
class Schema:
    """Word positions of the metadata buffer for ``rank`` dims, ``views`` strided views and
    ``scalars`` scalar words."""

    rank: int
    views: int
    scalars: int = 0

    def shape(self, dim: int) -> int:
        return 1 + dim

    def offset(self, view: int) -> int:
        return 1 + self.rank + view * (self.rank + 1)

    def stride(self, view: int, dim: int) -> int:
        return self.offset(view) + 1 + dim

    def scalar(self, k: int) -> int:
        return 1 + self.rank + self.views * (self.rank + 1) + k

    def pack(self, count: int, shape: Sequence[int],
             views: Sequence[tuple[int, Sequence[int]]], scalars: Sequence[int] = ()) -> list[int]:
        """The words for one launch: ``count`` working invocations, the iteration shape,
        ``(offset, strides)`` per view and the scalar words."""
        if len(shape) != self.rank or len(views) != self.views or len(scalars) != self.scalars:
            raise ValueError("metadata does not match the kernel's schema")
        words = [count, *shape]
        for offset, strides in views:
            words += [offset, *strides]
        return words + list(scalars)

    def offset_expr(self, view: int, coords: str = "c") -> str:
        """``u32(offset + Σ c_d * stride_d)`` with i32 arithmetic (strides may be negative)."""
        terms = [f"bitcast<i32>(info[{self.offset(view)}])"]
        terms += [f"i32({coords}{d}) * bitcast<i32>(info[{self.stride(view, d)}])"
                  for d in range(self.rank)]
        return f"u32({' + '.join(terms)})"


def coords_lines(schema: Schema, index: str = "pos", coords: str = "c",
                 indent: str = "    ") -> list[str]:
    """Lines splitting a linear ``index`` into coordinates ``c0 .. c{R-1}`` (row-major)."""
    rank = schema.rank
    if rank == 0:
        return []
    lines = [f"{indent}var rest_{coords} = {index};"]
    for d in range(rank - 1, 0, -1):
        size = f"info[{schema.shape(d)}]"
        lines.append(f"{indent}let {coords}{d} = rest_{coords} % {size};")
        lines.append(f"{indent}rest_{coords} = rest_{coords} / {size};")
    lines.append(f"{indent}let {coords}0 = rest_{coords};")
    return lines


def scalar_word(value: np.ndarray | float | int | bool, dtype: DType) -> int:
    """The u32 word holding a scalar of ``dtype`` (already converted to it)."""
    typed = np.asarray(value).astype(dtype.numpy if dtype is not DType.BOOL else np.uint32)
    if dtype is DType.F32:
        return int(typed.astype(np.float32).view(np.uint32))
    if dtype is DType.F16:
        return int(typed.astype(np.float16).view(np.uint16))
    return int(typed.astype(np.int64)) & 0xFFFFFFFF


def scalar_load(word: int, dtype: DType, width: int = 1) -> str:
    """WGSL reading scalar word ``word`` of ``info`` as ``dtype``, splatted to ``width``."""
    raw = f"info[{word}]"
    scalar = WGSL_TYPE[dtype]
    loads = {
        "f32": f"bitcast<f32>({raw})",
        "f16": f"f16(unpack2x16float({raw}).x)",
        "i32": f"bitcast<i32>({raw})",
        "u32": raw,
    }
    text = loads[scalar]
    return text if width == 1 else f"{vector_type(scalar, width)}({text})"


def dedupe(items: Sequence[str]) -> tuple[str, ...]:
    """Items in first-appearance order, each once."""
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return tuple(seen)


@functools.cache
def _skeleton(name: str) -> Template:
    text = resources.files("gpu.codegen").joinpath("skeletons", f"{name}.wgsl").read_text()
    return Template(text)


def render_kernel(skeleton: str, kernel: str, bindings: Sequence[Binding],
                  helpers: Sequence[str], body: Sequence[str], **fields: str) -> str:
    """Fill ``skeletons/<skeleton>.wgsl``: bindings (then ``info``), helper functions, body.

    ``Template.substitute`` raises ``KeyError`` on a missing field, so a skeleton and its
    caller cannot drift apart silently.
    """
    declared = [b.declaration(i) for i, b in enumerate(bindings)]
    declared.append(f"@group(0) @binding({len(bindings)}) var<storage, read> info: array<u32>;")
    enable = "enable f16;\n" if any(b.needs_f16 for b in bindings) or "f16" in "".join(
        helpers) + "".join(body) else ""
    helper_text = "".join(f"{src}\n\n" for src in dedupe(helpers))
    return _skeleton(skeleton).substitute(
        enable=enable, kernel=kernel, bindings="\n".join(declared) + "\n",
        helpers=helper_text, body="\n".join(body), **fields)
