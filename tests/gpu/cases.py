"""Test-case builders for the GPU tests: element-wise op cases, operands, layouts.

An ``OpCase`` is one (op, operand dtype, output dtype) the GPU runs; ``elementwise_cases``
lists every one the expression table supports for the WGSL dtypes (f32, f16, i32, u32,
bool). ``build_op`` makes the ``OperationIr`` for a case and shapes; ``operands`` draws finite,
bounded values in the op's domain; ``device_input`` lays a value out in a strided buffer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from refimpl import ir
from refimpl.data import contiguous_strides, strided_buffer
from refimpl.dtypes import DType, DTypeClass
from refimpl.ir import OperationIr, TensorIr, TensorStatus
from refimpl.ops import Op, OutDType
from refimpl.semantics import scalar_value
from gpu.codegen.literals import kind_of
from gpu.codegen.ops import ELEMENTWISE_OPS, WGSL_EXPR

FAMILY_DTYPES = {
    DTypeClass.FLOAT: (DType.F32, DType.F16),
    DTypeClass.INT: (DType.I32, DType.U32),
    DTypeClass.BOOL: (DType.BOOL,),
}
# Output dtypes of the ops whose output dtype is free within a class.
_OUT_CHOICES = {
    OutDType.FLOAT: (DType.F32, DType.F16),
    OutDType.INT: (DType.I32, DType.U32),
}


@dataclass(frozen=True)
class OpCase:
    op: Op
    dtype: DType  # main operand dtype
    out: DType

    @property
    def id(self) -> str:
        return f"{self.op.name}[{self.dtype.value}->{self.out.value}]"


def _outs(op: Op, dtype: DType) -> tuple[DType, ...]:
    if op.out_dtype is OutDType.SAME:
        return (dtype,)
    if op.out_dtype is OutDType.BOOL:
        return (DType.BOOL,)
    if op.out_dtype is OutDType.FAMILY:  # Cast / creation: any dtype of the class
        return FAMILY_DTYPES[dtype.cls]
    return _OUT_CHOICES[op.out_dtype]


def elementwise_cases() -> list[OpCase]:
    """Every (op, dtype, out dtype) the expression table supports, in op-table order."""
    cases = []
    for op in ELEMENTWISE_OPS:
        rule = WGSL_EXPR[op.name]
        for dtype in FAMILY_DTYPES[op.family]:
            if kind_of(dtype) not in rule.kinds:
                continue
            cases += [OpCase(op, dtype, out) for out in _outs(op, dtype)]
    return cases


def tensor(i: int, shape: Sequence[int], dtype: DType, out: bool = False) -> TensorIr:
    status = TensorStatus.NotInit if out else TensorStatus.ReadOnly
    return TensorIr(i, tuple(shape), dtype, status)


def _broadcast(*shapes: Sequence[int]) -> tuple[int, ...]:
    return tuple(max(d) for d in zip(*shapes))


def build_op(case: OpCase, shapes: Sequence[Sequence[int]], scalars: Sequence[Any],
             out_shape: Sequence[int] = (2, 3, 4)) -> OperationIr:
    """The ``OperationIr`` of ``case`` with tensor operand ``shapes`` (broadcastable) and
    scalar operand values; ``out_shape`` only serves ops without tensor operands."""
    op, d = case.op, case.dtype
    out_shape = _broadcast(*shapes) if shapes else tuple(out_shape)
    o = tensor(9, out_shape, case.out, out=True)
    t = [tensor(j, s, d) for j, s in enumerate(shapes)]
    builders = {
        ir.UnaryOpIr: lambda: ir.UnaryOpIr(t[0], o),
        ir.BinaryOpIr: lambda: ir.BinaryOpIr(t[0], t[1], o),
        ir.ScalarOpIr: lambda: ir.ScalarOpIr(t[0], scalars[0], o),
        ir.ClampOpIr: lambda: ir.ClampOpIr(t[0], min(scalars), max(scalars), o),
        ir.MaskWhereOpIr: lambda: ir.MaskWhereOpIr(
            t[0], tensor(1, shapes[1], DType.BOOL), tensor(2, shapes[2], d), o),
        ir.MaskFillOpIr: lambda: ir.MaskFillOpIr(t[0], tensor(1, shapes[1], DType.BOOL),
                                                 scalars[0], o),
        ir.FullOpIr: lambda: ir.FullOpIr(o, scalars[0]),
        ir.CreationOpIr: lambda: ir.CreationOpIr(o),
    }
    return OperationIr(op, builders[op.struct]())


# Number of tensor and scalar operands per operand struct.
ARITY = {
    ir.UnaryOpIr: (1, 0), ir.BinaryOpIr: (2, 0), ir.ScalarOpIr: (1, 1), ir.ClampOpIr: (1, 2),
    ir.MaskWhereOpIr: (3, 0), ir.MaskFillOpIr: (2, 1), ir.FullOpIr: (0, 1),
    ir.CreationOpIr: (0, 0),
}

# --- value domains --------------------------------------------------------------------------

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def _floats(rng: np.random.Generator, shape, lo: float, hi: float, ints: float = 0.2):
    """Uniform in [lo, hi] with a share of small integers (exact multiples, integer powers)."""
    values = rng.uniform(lo, hi, size=shape)
    whole = rng.integers(int(np.ceil(lo)), int(np.floor(hi)) + 1, size=shape)
    return np.where(rng.random(shape) < ints, whole, values)


def _away_from_zero(rng, shape, lo, hi, gap):
    v = _floats(rng, shape, lo, hi)
    return np.where(np.abs(v) < gap, np.copysign(gap, v + 1e-30), v)


# Float operand domains (first operand, second operand) per variant stem.
_FLOAT_DOMAIN = {
    "Log": ((0.01, 8.0),), "Sqrt": ((0.0, 8.0),), "Log1p": ((-0.9, 8.0),),
    "Sin": ((-3.14, 3.14),), "Cos": ((-3.14, 3.14),), "Tan": ((-1.4, 1.4),),
    "Exp": ((-10.0, 10.0),), "Recip": ((-4.0, 4.0),), "IntoInt": ((-3e9, 5e9),),
}
_F16_DOMAIN = {"Exp": ((-5.0, 5.0),), "IntoInt": ((-6e4, 6e4),)}


def _stem(op: Op) -> str:
    for suffix in ("Scalar", "Elem"):
        if op.variant.endswith(suffix):
            return op.variant[: -len(suffix)]
    return op.variant


def _int_values(rng, shape, dtype: DType, small: int = 20) -> np.ndarray:
    """Mostly small ints (negative ones for i32), some from the whole range (wrapping)."""
    info = np.iinfo(dtype.numpy)
    lo = -small if dtype is DType.I32 else 0
    values = rng.integers(lo, small + 1, size=shape, dtype=np.int64)
    wide = rng.integers(info.min, info.max, size=shape, dtype=np.int64, endpoint=True)
    return np.where(rng.random(shape) < 0.25, wide, values).astype(dtype.numpy)


def float_operand(rng, case: OpCase, index: int, shape) -> np.ndarray:
    """Finite float values for operand ``index`` of ``case``, in the op's domain."""
    stem, dtype = _stem(case.op), case.dtype
    domains = {**_FLOAT_DOMAIN, **(_F16_DOMAIN if dtype is DType.F16 else {})}
    if stem in ("Div", "Rem") and index == 1 or stem == "Recip":
        return _away_from_zero(rng, shape, -4.0, 4.0, 0.25)
    if stem == "Powf":
        limit = 3.0 if dtype is DType.F16 else 4.0
        return _floats(rng, shape, -limit, limit, ints=0.5 if index == 1 else 0.2)
    lo, hi = domains.get(stem, ((-4.0, 4.0),))[0]
    return _floats(rng, shape, lo, hi)


def int_operand(rng, case: OpCase, index: int, shape) -> np.ndarray:
    stem = _stem(case.op)
    if stem in ("BitwiseLeftShift", "BitwiseRightShift") and index == 1:
        counts = rng.integers(-40 if case.dtype is DType.I32 else 0, 41, size=shape)
        return counts.astype(case.dtype.numpy)
    values = _int_values(rng, shape, case.dtype)
    if case.out is DType.F16:  # int → f16 past 65504 overflows (indeterminate in WGSL)
        values = (values % 1000).astype(case.dtype.numpy)
    if stem in ("Div", "Rem") and index == 1:  # zeros and -1 (MIN / -1) on purpose
        special = rng.choice(np.array([0, 1, -1 if case.dtype is DType.I32 else 2]), size=shape)
        values = np.where(rng.random(shape) < 0.2, special.astype(case.dtype.numpy), values)
    if stem in ("Div", "Rem") and index == 0 and case.dtype is DType.I32:
        values = np.where(rng.random(shape) < 0.1, np.int32(I32_MIN), values)
    return values.astype(case.dtype.numpy)


def operand(rng, case: OpCase, index: int, shape, dtype: DType) -> np.ndarray:
    """Values of tensor operand ``index`` (``dtype``: bool for masks)."""
    shape = tuple(shape)
    if dtype is DType.BOOL:
        return rng.random(shape) < 0.5
    if dtype.is_float:
        return float_operand(rng, case, index, shape).astype(dtype.numpy)
    return int_operand(rng, case, index, shape)


def fix_powf_domain(base: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """Negative bases only with integer exponents (pow(b < 0, fractional) is NaN, which
    WGSL's finite-math assumption leaves indeterminate), no zero base with a negative one."""
    integral = np.floor(exponent) == exponent
    base = np.where(integral, base, np.abs(base))
    # 0 ** negative is inf: a non-finite result, indeterminate in WGSL (lavapipe gives 0)
    return np.where((base == 0) & (exponent < 0), 1, base).astype(base.dtype)


def scalar_operands(rng, case: OpCase, count: int) -> list[Any]:
    """Python scalars for the scalar operands, in the op's domain."""
    values = []
    for k in range(count):
        dtype = case.out if case.op.struct is not ir.ScalarOpIr else case.dtype
        if dtype is DType.BOOL:
            values.append(bool(rng.random() < 0.5))
        elif dtype.is_float:
            values.append(float(operand(rng, case, 1 + k, (), dtype)))
        else:
            values.append(int(operand(rng, case, 1 + k, (), dtype)))
    return values


def scalar_arrays(op: OperationIr) -> list[np.ndarray]:
    """The scalar operands as the oracle converts them (for tolerance inputs)."""
    desc = op.desc
    dtype = desc.lhs.dtype if isinstance(desc, ir.ScalarOpIr) else desc.out.dtype
    return [scalar_value(v, dtype) for v in op.scalars()]


# --- layouts --------------------------------------------------------------------------------


def strides_for(shape: Sequence[int], perm: Sequence[int], pad: int) -> tuple[int, ...]:
    """Strides that lay ``shape`` out in axis order ``perm`` (last = fastest), with ``pad``
    unused elements after each fastest-axis row: transposed and padded layouts."""
    strides = [0] * len(shape)
    step = 1
    for rank_pos, axis in enumerate(reversed(perm)):
        strides[axis] = step
        step *= shape[axis] + (pad if rank_pos == 0 else 0)
    return tuple(strides)


def device_input(runtime, values: np.ndarray, dtype: DType, perm, pad: int):
    """``values`` in a strided buffer (sentinels in the gaps) as a ``DeviceTensor``."""
    strides = strides_for(values.shape, perm, pad)
    if strides == contiguous_strides(values.shape):
        return runtime.upload(values, dtype)
    buffer = strided_buffer(values, strides)
    return runtime.upload_strided(buffer, values.shape, strides, dtype)
