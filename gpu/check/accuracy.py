"""Measure an adapter's float accuracy per op against the oracle.

burn counterpart: none. This is the measurement behind the "measured" column of
``docs/wgsl-semantics.md``: for every float op with an accuracy rule it runs ``samples``
random inputs from the op's domain through the op's standalone kernel and reports the
largest ULP distance and absolute error from ``NUMPY_IMPL``, and how many elements fall
outside ``GPU_ULP_TOLERANCE``. Run it on a new adapter before trusting the tolerance table
there: ``python -m fuselab.accuracy`` (``FUSELAB_ADAPTER`` picks the adapter).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from refimpl import ir
from refimpl.dtypes import DType
from refimpl.ir import TensorIr, TensorStatus
from refimpl.ops import op_named
from refimpl.semantics import NUMPY_IMPL
from gpu.check.tolerance import GPU_ULP_TOLERANCE, close_mask, ulp_distance
from gpu.runtime.device import GpuDevice
from gpu.runtime.unfused import run_op

__all__ = ["Measurement", "measure", "DOMAINS"]

# op name → (operand ranges, f32 then f16): finite results only.
DOMAINS = {
    "Float.Exp": (((-80.0, 80.0),), ((-10.0, 10.0),)),
    "Float.Log": (((1e-3, 1e3),), ((1e-2, 100.0),)),
    "Float.Log1p": (((-0.9, 100.0),), ((-0.9, 100.0),)),
    "Float.Sin": (((-3.14, 3.14),), ((-3.14, 3.14),)),
    "Float.Cos": (((-3.14, 3.14),), ((-3.14, 3.14),)),
    "Float.Tan": (((-1.4, 1.4),), ((-1.4, 1.4),)),
    "Float.Tanh": (((-10.0, 10.0),), ((-10.0, 10.0),)),
    "Float.Erf": (((-5.0, 5.0),), ((-5.0, 5.0),)),
    "Float.Sqrt": (((0.0, 1e4),), ((0.0, 100.0),)),
    "Float.Recip": (((0.01, 100.0),), ((0.01, 100.0),)),
    "NumericFloat.Div": (((-8.0, 8.0), (0.25, 4.0)), ((-8.0, 8.0), (0.25, 4.0))),
    "NumericFloat.Rem": (((-8.0, 8.0), (0.25, 4.0)), ((-8.0, 8.0), (0.25, 4.0))),
    "Float.Powf": (((0.01, 8.0), (-4.0, 4.0)), ((0.01, 3.0), (-3.0, 3.0))),
}


@dataclass(frozen=True)
class Measurement:
    """One op and dtype on one adapter."""

    op: str
    dtype: str
    samples: int
    max_ulp: int
    max_abs: float
    outside_tolerance: int


def _operands(rng: np.random.Generator, ranges, dtype: DType, n: int) -> list[np.ndarray]:
    values = [rng.uniform(lo, hi, n) for lo, hi in ranges]
    if len(values) == 2:  # divisors of both signs
        values[1] = values[1] * np.where(rng.random(n) < 0.5, -1.0, 1.0) \
            if ranges[1][0] > 0 else values[1]
    return [v.astype(dtype.numpy) for v in values]


def _op(name: str, dtype: DType, n: int) -> ir.OperationIr:
    def t(i: int, status=TensorStatus.ReadOnly) -> TensorIr:
        return TensorIr(i, (n,), dtype, status)
    out = t(9, TensorStatus.NotInit)
    op = op_named(name)
    desc = ir.UnaryOpIr(t(0), out) if op.struct is ir.UnaryOpIr else ir.BinaryOpIr(t(0), t(1), out)
    return ir.OperationIr(op, desc)


def measure(device: GpuDevice, name: str, dtype: DType, samples: int = 1 << 18,
            seed: int = 0) -> Measurement:
    """Largest ULP / absolute error of ``name`` on ``device`` against the oracle."""
    ranges = DOMAINS[name][0 if dtype is DType.F32 else 1]
    values = _operands(np.random.default_rng(seed), ranges, dtype, samples)
    op = _op(name, dtype, samples)
    expected = NUMPY_IMPL[name](op.desc, {t.id: v for t, v in zip(op.inputs(), values)})
    actual = run_op(device, op, values)
    finite = np.isfinite(expected)
    ok = close_mask(actual, expected, GPU_ULP_TOLERANCE[name], values)
    diff = np.abs(actual[finite].astype(np.float64) - expected[finite])
    return Measurement(name, dtype.value, samples,
                       int(ulp_distance(actual[finite], expected[finite]).max(initial=0)),
                       float(diff.max(initial=0.0)), int((~ok).sum()))

