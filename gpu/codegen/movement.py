"""Copy and indexed-read kernels: Reshape (copy), SwapDims, Permute, Flip, Expand, Slice, Cat,
Gather and Select.

burn counterpart: burn-cubecl's ``kernel/index/`` (``slice``, ``gather``, ``select``, ``flip``)
and ``kernel/contiguous`` (``into_contiguous``: a strided read written densely); ``cat`` is
burn's default implementation, one ``slice_assign`` per input.

Every movement op is one strided copy: iterate over a shape, read ``in`` through one
offset/strides view, write ``out`` through another. Strides are i32 (``Flip`` walks
backwards). The element type is only moved, never computed on, so all 4-byte dtypes share
one ``u32`` kernel; f16 gets its own. ``Cat`` launches the same kernel once per input, so it
never needs more than three bindings whatever the number of inputs.

Gather and Select share one kernel: the input is read through a view whose stride on
``dim`` is 0, plus ``index * dim_stride``, the index being read through the indices view
(Gather: the indices' own strides; Select: only the ``dim`` stride, the rest 0).
"""

from __future__ import annotations

from dataclasses import dataclass

from refimpl.dtypes import DType
from gpu.codegen.render import Binding, Schema, coords_lines, render_kernel

__all__ = ["CopyKernel", "IndexKernel", "bit_storage"]


def bit_storage(dtype: DType) -> str:
    """The WGSL type a copy moves ``dtype`` as: ``u32`` for 4-byte types, ``f16`` for f16."""
    return "f16" if dtype is DType.F16 else "u32"


@dataclass(frozen=True, slots=True)
class CopyKernel:
    """``out[out_view(c)] = in[in_view(c)]`` over a rank-``rank`` iteration shape."""

    storage: str  # "u32" or "f16"
    rank: int

    @property
    def schema(self) -> Schema:
        return Schema(self.rank, 2)

    def source(self) -> str:
        dtype = DType.F16 if self.storage == "f16" else DType.U32
        bindings = [Binding("src", dtype, storage=self.storage),
                    Binding("dst", dtype, writable=True, storage=self.storage)]
        body = coords_lines(self.schema) + [
            f"    dst[{self.schema.offset_expr(1)}] = src[{self.schema.offset_expr(0)}];"]
        return render_kernel("elementwise", f"copy {self.storage} rank {self.rank}",
                             bindings, (), body)


@dataclass(frozen=True, slots=True)
class IndexKernel:
    """``out[pos] = in[in_view(c) + index_view(c) * dim_stride]`` (Gather / Select)."""

    storage: str
    index: DType  # i32 or u32
    rank: int

    @property
    def schema(self) -> Schema:
        return Schema(self.rank, 2, 1)  # views: input, indices; scalar: the dim stride

    def source(self) -> str:
        dtype = DType.F16 if self.storage == "f16" else DType.U32
        schema = self.schema
        bindings = [Binding("src", dtype, storage=self.storage), Binding("indices", self.index),
                    Binding("dst", dtype, writable=True, storage=self.storage)]
        body = coords_lines(schema) + [
            f"    let index = i32(indices[{schema.offset_expr(1)}]);",
            f"    let base = i32({schema.offset_expr(0)});",
            f"    dst[pos] = src[u32(base + index * bitcast<i32>(info[{schema.scalar(0)}]))];",
        ]
        return render_kernel("elementwise", f"index {self.storage} by {self.index.value} "
                             f"rank {self.rank}", bindings, (), body)
