"""Standalone kernels of the most common element-wise ops compiled ahead, so that an op run
unfused (fusion off, or a lone op the planner leaves alone) finds its pipeline ready.

burn counterpart: none (cubecl compiles a kernel on its first launch; its autotune can run
ahead, this only compiles). The sources are exactly those ``gpu.runtime.unfused`` launches
for contiguous operands of the op's shape (the dense layout, widths 4, 2 and 1), compiled
into the runtime's own pipeline cache with its workgroup size, so the launch is a cache hit.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from refimpl.dtypes import DType
from refimpl.ir import BinaryOpIr, ScalarOpIr, UnaryOpIr
from refimpl.ops import op_named
from gpu.codegen.elementwise import WIDTHS, ElementwiseKernel

__all__ = ["COMMON_OPS", "warm_unfused"]

# The float ops a stream most often runs on their own: arithmetic with a tensor or a scalar,
# and the usual activations.
COMMON_OPS = ("NumericFloat.Add", "NumericFloat.Sub", "NumericFloat.Mul", "NumericFloat.Div",
              "NumericFloat.AddScalar", "NumericFloat.SubScalar", "NumericFloat.MulScalar",
              "NumericFloat.DivScalar", "NumericFloat.Neg", "NumericFloat.Abs", "Float.Exp",
              "Float.Log", "Float.Tanh", "Float.Sqrt", "Float.Recip", "Float.Sin", "Float.Cos")


def _kernel(name: str, dtype: DType, width: int) -> ElementwiseKernel:
    struct = op_named(name).struct
    inputs = {BinaryOpIr: (dtype, dtype), ScalarOpIr: (dtype,), UnaryOpIr: (dtype,)}[struct]
    scalars = (dtype,) if struct is ScalarOpIr else ()
    return ElementwiseKernel(name, inputs, scalars, dtype, 0, width, dense=True)


def warm_unfused(device: Any, ops: Sequence[str] = COMMON_OPS,
                 dtypes: Sequence[DType] = (DType.F32,),
                 widths: Sequence[int] = WIDTHS) -> float:
    """Compile the dense standalone kernels of ``ops`` ahead; the seconds it took."""
    rt = device.runtime
    started = time.perf_counter()
    for dtype in dtypes:
        for name in ops:
            for width in widths:
                rt.pipeline_for(_kernel(name, dtype, width).source(),
                                {"WG_SIZE": rt.workgroup_size})
    return time.perf_counter() - started
