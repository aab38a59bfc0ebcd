"""A straightforward batched matmul kernel (float and int).

burn counterpart: cubek's matmul (``burn-cubecl/src/kernel/matmul``), whose ``Simple`` /
double-buffering / cmma variants are picked by autotune. This is the correctness baseline:
one invocation per output element, a sequential loop over ``K``, operands read through
strides (any layout, batch dims broadcast with stride 0). Float16 accumulates in f32 and
rounds once; ints wrap.

The iteration shape is the output's ``[..., M, N]``; the lhs view has stride 0 on ``N``, the
rhs view stride 0 on ``M``, so ``offset_expr`` gives each operand's row/column start, and the
runtime words ``K``, ``lhs_k_stride``, ``rhs_k_stride`` walk the inner dimension.
"""

from __future__ import annotations

from dataclasses import dataclass

from refimpl.dtypes import DType
from gpu.codegen.literals import literal
from gpu.codegen.render import Binding, Schema, coords_lines, render_kernel
from gpu.codegen.types import WGSL_TYPE

__all__ = ["MatmulKernel"]


@dataclass(frozen=True, slots=True)
class MatmulKernel:
    """``out[..., m, n] = Σ_k lhs[..., m, k] * rhs[..., k, n]``."""

    dtype: DType
    rank: int  # the output's rank (≥ 2)

    @property
    def schema(self) -> Schema:
        return Schema(self.rank, 2, 3)  # scalars: K, lhs k-stride, rhs k-stride

    @property
    def accumulator(self) -> DType:
        return DType.F32 if self.dtype is DType.F16 else self.dtype

    def source(self) -> str:
        s, acc = self.schema, self.accumulator
        widen = (lambda v: f"f32({v})") if acc is not self.dtype else (lambda v: v)
        lhs = widen(f"lhs[u32(a + i32(k) * bitcast<i32>(info[{s.scalar(1)}]))]")
        rhs = widen(f"rhs[u32(b + i32(k) * bitcast<i32>(info[{s.scalar(2)}]))]")
        result = "acc" if acc is self.dtype else f"{WGSL_TYPE[self.dtype]}(acc)"
        body = coords_lines(s) + [
            f"    let a = i32({s.offset_expr(0)});",
            f"    let b = i32({s.offset_expr(1)});",
            f"    var acc = {literal(0, acc)};",
            f"    for (var k = 0u; k < info[{s.scalar(0)}]; k = k + 1u) {{",
            f"        acc = acc + {lhs} * {rhs};",
            "    }",
            f"    out[pos] = {result};",
        ]
        bindings = [Binding("lhs", self.dtype), Binding("rhs", self.dtype),
                    Binding("out", self.dtype, writable=True)]
        return render_kernel("elementwise", f"matmul {self.dtype.value} rank {self.rank}",
                             bindings, (), body)
