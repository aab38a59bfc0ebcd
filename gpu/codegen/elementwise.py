"""Standalone element-wise kernels: one op, one kernel (the "fusion off" baseline).

burn counterpart: burn-cubecl's ``kernel/binary.rs`` (``kernel_binop``: broadcasting through
per-input strides), ``kernel/unary_float.rs`` / ``unary_numeric.rs``, ``kernel/comparison.rs``,
``kernel/clamp.rs``, ``kernel/mask`` and ``kernel/cast`` — each a kernel of its own, which is
what running a stream without fusion launches.

Two layouts, fixed at generation time:

* dense — every input is contiguous with the output's shape: all tensors are indexed by the
  linear position, as ``vec{width}<T>`` arrays (width 4, 2 or 1 dividing the element count,
  the candidates burn uses on wgpu for 4-byte elements).
* strided — width 1; each input is read through its own offset and strides (stride 0 on a
  broadcast dim) from the output's coordinates.

The source depends only on (op, dtypes, layout, rank for strided, width), never on shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from refimpl.dtypes import DType
from refimpl.ops import op_named
from gpu.codegen.ops import WGSL_EXPR, expr_ctx
from gpu.codegen.render import Binding, Schema, coords_lines, render_kernel, scalar_load

__all__ = ["ElementwiseKernel", "WIDTHS"]

# Vector widths tried, widest first (cubecl-wgpu's io-optimised sizes for ≤ 4-byte elements).
WIDTHS = (4, 2, 1)


@dataclass(frozen=True, slots=True)
class ElementwiseKernel:
    """The kernel of one element-wise op for given dtypes and layout."""

    op_name: str
    inputs: tuple[DType, ...]  # tensor operands, in field order
    scalars: tuple[DType, ...]  # scalar operands, in field order
    out: DType
    rank: int  # iteration rank (0 for the dense layout)
    width: int = 1
    dense: bool = False

    @property
    def schema(self) -> Schema:
        if self.dense:
            return Schema(0, 0, len(self.scalars))
        return Schema(self.rank, len(self.inputs), len(self.scalars))

    @property
    def name(self) -> str:
        layout = f"dense x{self.width}" if self.dense else f"strided rank {self.rank}"
        dtypes = ",".join(d.value for d in self.inputs + self.scalars)
        return f"{self.op_name}({dtypes}) -> {self.out.value}, {layout}"

    def bindings(self) -> list[Binding]:
        ins = [Binding(f"in{j}", d, self.width) for j, d in enumerate(self.inputs)]
        return ins + [Binding("out", self.out, self.width, writable=True)]

    def _main_dtype(self) -> DType:
        return self.inputs[0] if self.inputs else self.out

    def body(self) -> tuple[list[str], tuple[str, ...]]:
        """The body lines and the helper functions they call."""
        schema = self.schema
        lines = [] if self.dense else coords_lines(schema)
        names = []
        for j in range(len(self.inputs)):
            index = "pos" if self.dense else schema.offset_expr(j)
            lines.append(f"    let v{j} = in{j}[{index}];")
            names.append(f"v{j}")
        for k, dtype in enumerate(self.scalars):
            lines.append(f"    let s{k} = {scalar_load(schema.scalar(k), dtype, self.width)};")
            names.append(f"s{k}")
        op = op_named(self.op_name)
        ctx = expr_ctx(op, self._main_dtype(), self.out, self.width)
        expr, helpers = WGSL_EXPR[self.op_name].render(ctx, *names)
        lines.append(f"    out[pos] = {expr};")
        return lines, helpers

    def source(self) -> str:
        """The WGSL text (deterministic: equal kernels give equal bytes)."""
        body, helpers = self.body()
        return render_kernel("elementwise", self.name, self.bindings(), helpers, body)

    def words(self, count: int, shape: Sequence[int],
              views: Sequence[tuple[int, Sequence[int]]], scalars: Sequence[int]) -> list[int]:
        """Metadata for one launch (``count`` = invocations that do work)."""
        if self.dense:
            return self.schema.pack(count, (), (), scalars)
        return self.schema.pack(count, shape, views, scalars)
