"""refimpl.semantics: NUMPY_IMPL covers the op table, yields the snapshot dtype, follows burn."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from refimpl import ir
from refimpl.data import random_values
from refimpl.dtypes import DType, DTypeClass
from refimpl.errors import InputDataError
from refimpl.ir import OperationIr, TensorIr, TensorStatus
from refimpl.ops import OPS, OutDType, op_named
from refimpl.semantics import BINARY, NUMPY_IMPL, UNARY, convert, scalar_value
from refimpl.semantics_module import INTERPOLATE_TAPS
from refimpl.shapes import INTERPOLATE_MODES, expected_shape

NUMPY_TO_DTYPE = {d.numpy: d for d in DType}
FAMILY_DTYPES = {
    DTypeClass.FLOAT: [DType.F64, DType.F32, DType.F16],
    DTypeClass.INT: [DType.I64, DType.I32, DType.I16, DType.I8,
                     DType.U64, DType.U32, DType.U16, DType.U8],
    DTypeClass.BOOL: [DType.BOOL],
}
OUT_CLASS = {OutDType.BOOL: DTypeClass.BOOL, OutDType.INT: DTypeClass.INT,
             OutDType.FLOAT: DTypeClass.FLOAT}


# --- building operand structs from arrays ----------------------------------------------------


def build(name: str, out_dtype: DType | None = None, out_shape=None, **fields):
    """The op's operand struct over ``fields`` (arrays for tensor fields) and its env."""
    op = op_named(name)
    env, values, ids = {}, {}, itertools.count()

    def tensor(array):
        array = np.asarray(array)
        tid = next(ids)
        env[tid] = array
        return TensorIr(tid, array.shape, NUMPY_TO_DTYPE[array.dtype], TensorStatus.ReadOnly)

    for field, kind in op.struct.SCHEMA:
        if field == "out":
            continue
        if kind is ir.FieldKind.TENSOR:
            values[field] = tensor(fields[field])
        elif kind is ir.FieldKind.TENSORS:
            values[field] = tuple(tensor(a) for a in fields[field])
        else:
            values[field] = fields[field]
    tensors = [t for v in values.values() for t in (v if isinstance(v, tuple) else (v,))
               if isinstance(t, TensorIr)]
    first = tensors[0] if tensors else None
    rule_dtype = {OutDType.SAME: first.dtype if first else None, OutDType.BOOL: DType.BOOL}
    dtype = out_dtype or rule_dtype.get(op.out_dtype)
    placeholder = TensorIr(999, tuple(out_shape or ()), dtype, TensorStatus.NotInit)
    if out_shape is None:
        out_shape = expected_shape(OperationIr(op, op.struct(**values, out=placeholder)), 0)
    out = TensorIr(999, tuple(out_shape), dtype, TensorStatus.NotInit)
    return op.struct(**values, out=out), env


def run(name: str, out_dtype: DType | None = None, out_shape=None, **fields) -> np.ndarray:
    desc, env = build(name, out_dtype, out_shape, **fields)
    with np.errstate(all="raise"):  # the impl must silence its own warnings
        result = NUMPY_IMPL[name](desc, env)
    assert isinstance(result, np.ndarray)
    assert result.dtype == desc.out.dtype.numpy, name
    assert result.shape == desc.out.shape, name
    return result


def assert_bits(result: np.ndarray, expected) -> None:
    expected = np.asarray(expected, dtype=result.dtype)
    assert result.shape == expected.shape
    assert np.array_equal(result, expected, equal_nan=result.dtype.kind == "f"), \
        f"{result.tolist()} != {expected.tolist()}"


def arr(dtype: str, *values):
    return np.array(values, dtype=DType(dtype).numpy)


I32_MIN, I32_MAX = np.iinfo(np.int32).min, np.iinfo(np.int32).max
NAN, INF = float("nan"), float("inf")

# --- completeness and dtypes over the whole table ------------------------------------------


def test_numpy_impl_covers_the_op_table():
    assert set(NUMPY_IMPL) == {op.name for op in OPS} - {"Init", "Drop"}


def test_interpolate_modes_match_the_shape_rules():
    assert tuple(INTERPOLATE_TAPS) == tuple(INTERPOLATE_MODES)


def _x(dtype: DType, shape=(2, 3), seed=0):
    return random_values(shape, dtype, seed)


_SCALAR = {DTypeClass.FLOAT: 2.0, DTypeClass.INT: 3, DTypeClass.BOOL: True}
_MASK = np.array([[True, False, True], [False, False, True]])
_POOL = dict(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))

# operands of a small valid example, by variant first, then by operand struct
_BY_VARIANT = {
    "Matmul": lambda dt, s: dict(lhs=_x(dt, (2, 2, 3)), rhs=_x(dt, (1, 3, 4), 1)),
    "Reshape": lambda dt, s: dict(input=_x(dt), out_shape=(3, 2)),
    "Expand": lambda dt, s: dict(input=_x(dt, (1, 3)), out_shape=(2, 2, 3)),
}
_BY_STRUCT = {
    ir.UnaryOpIr: lambda dt, s: dict(input=_x(dt)),
    ir.BinaryOpIr: lambda dt, s: dict(lhs=_x(dt), rhs=_x(dt, (1, 3), 1)),
    ir.ScalarOpIr: lambda dt, s: dict(lhs=_x(dt), rhs=s),
    ir.ReduceDimOpIr: lambda dt, s: dict(input=_x(dt), axis=1),
    ir.SwapDimsOpIr: lambda dt, s: dict(input=_x(dt), dim1=0, dim2=1),
    ir.PermuteOpIr: lambda dt, s: dict(input=_x(dt, (2, 3, 4)), axes=(2, 0, 1)),
    ir.FlipOpIr: lambda dt, s: dict(input=_x(dt), axes=(1,)),
    ir.SliceOpIr: lambda dt, s: dict(tensor=_x(dt), ranges=((0, 1), (1, 3))),
    ir.CatOpIr: lambda dt, s: dict(tensors=(_x(dt), _x(dt, (1, 3), 1)), dim=0),
    ir.GatherOpIr: lambda dt, s: dict(tensor=_x(dt), dim=1,
                                      indices=np.array([[0, 2, 1], [1, 1, 0]], np.int64)),
    ir.SelectOpIr: lambda dt, s: dict(tensor=_x(dt), dim=1, indices=np.array([2, 0], np.int32)),
    ir.MaskWhereOpIr: lambda dt, s: dict(tensor=_x(dt), mask=_MASK, value=_x(dt, (1, 3), 1)),
    ir.MaskFillOpIr: lambda dt, s: dict(tensor=_x(dt), mask=_MASK, value=s),
    ir.ClampOpIr: lambda dt, s: dict(tensor=_x(dt), min=1, max=s),
    ir.FullOpIr: lambda dt, s: dict(value=s, out_shape=(2, 3)),
    ir.CreationOpIr: lambda dt, s: dict(out_shape=(2, 3)),
    ir.MaxPool2dOpIr: lambda dt, s: dict(x=_x(dt, (1, 2, 5, 5)), dilation=(1, 1), **_POOL),
    ir.AvgPool2dOpIr: lambda dt, s: dict(x=_x(dt, (1, 2, 5, 5)), count_include_pad=False,
                                         **_POOL),
    ir.AdaptiveAvgPool2dOpIr: lambda dt, s: dict(x=_x(dt, (1, 2, 5, 5)), output_size=(3, 2)),
    ir.InterpolateOpIr: lambda dt, s: dict(x=_x(dt, (1, 2, 3, 4)), output_size=(5, 3),
                                           mode="bilinear"),
}


def _example(op, dtype: DType) -> dict:
    make = _BY_VARIANT.get(op.variant) or _BY_STRUCT[op.struct]
    return make(dtype, _SCALAR[op.family])


def _out_dtype(op, dtype: DType, k: int) -> DType:
    """The rule's output dtype; for a free choice, a family member other than the input's."""
    if op.out_dtype is OutDType.SAME:
        return dtype
    cls = OUT_CLASS.get(op.out_dtype, dtype.cls)
    choices = [d for d in FAMILY_DTYPES[cls] if d is not dtype] or FAMILY_DTYPES[cls]
    return choices[k % len(choices)]


_EVERY_OP = [(op, dtype, k) for op in OPS if op.name in NUMPY_IMPL
             for k, dtype in enumerate(FAMILY_DTYPES[op.family])]


@pytest.mark.parametrize("op,dtype,k", _EVERY_OP,
                         ids=[f"{op.name}-{dt.value}" for op, dt, _ in _EVERY_OP])
def test_numpy_impl_output_matches_snapshot_dtype(op, dtype, k):
    fields = _example(op, dtype)
    out_shape = fields.pop("out_shape", None)
    run(op.name, out_dtype=_out_dtype(op, dtype, k), out_shape=out_shape, **fields)


@pytest.mark.parametrize("op,dtype,k", _EVERY_OP[::7],
                         ids=[f"{op.name}-{dt.value}" for op, dt, _ in _EVERY_OP[::7]])
def test_numpy_impl_deterministic_and_leaves_inputs_alone(op, dtype, k):
    fields = _example(op, dtype)
    out_shape = fields.pop("out_shape", None)
    desc, env = build(op.name, _out_dtype(op, dtype, k), out_shape, **fields)
    before = {tid: a.tobytes() for tid, a in env.items()}
    first = NUMPY_IMPL[op.name](desc, env)
    second = NUMPY_IMPL[op.name](desc, env)
    assert first.tobytes() == second.tobytes()
    assert {tid: a.tobytes() for tid, a in env.items()} == before


# --- element-wise math against Python's math module ----------------------------------------

_MATH = {
    "Exp": math.exp, "Log": math.log, "Log1p": lambda x: math.log(1 + x), "Cos": math.cos,
    "Sin": math.sin, "Tan": math.tan, "Tanh": math.tanh, "Sqrt": math.sqrt,
    "Recip": lambda x: 1 / x, "Abs": abs, "Neg": lambda x: -x,
    "Sign": lambda x: float((x > 0) - (x < 0)), "Floor": math.floor, "Ceil": math.ceil,
    "Round": round,  # Python rounds ties to even, as burn
}
_POINTS = [0.25, 0.5, 1.5, 2.5, 1.75, 3.0]


@pytest.mark.parametrize("variant", sorted(_MATH))
def test_float_unary_matches_math(variant):
    category = "NumericFloat" if variant in ("Abs", "Neg", "Sign") else "Float"
    got = run(f"{category}.{variant}", input=np.array(_POINTS + [-p for p in _POINTS[:2]]))
    points = _POINTS + [-p for p in _POINTS[:2]]
    expected = [_MATH[variant](p) if not (variant in ("Log", "Log1p", "Sqrt") and p < 0)
                else NAN for p in points]
    if variant == "Log1p":
        expected[-2:] = [math.log(1 + p) for p in points[-2:]]
    np.testing.assert_allclose(got, expected, rtol=4e-16, atol=0)


_PYTHON_BINARY = {
    "Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
    "Div": lambda a, b: a / b, "Lower": lambda a, b: a < b, "Greater": lambda a, b: a > b,
    "LowerEqual": lambda a, b: a <= b, "GreaterEqual": lambda a, b: a >= b,
    "Equal": lambda a, b: a == b, "NotEqual": lambda a, b: a != b,
}
_PAIRS = [(1.5, 2.0), (-3.25, 0.5), (2.0, 2.0), (7.0, -4.0)]


@pytest.mark.parametrize("variant", sorted(_PYTHON_BINARY))
@pytest.mark.parametrize("form", ["tensor", "scalar"])
def test_float_binary_matches_python(variant, form):
    category = "BaseFloat" if "Equal" in variant and "Lower" not in variant \
        and "Greater" not in variant else "NumericFloat"
    lhs = np.array([a for a, _ in _PAIRS])
    expected = [_PYTHON_BINARY[variant](a, b) for a, b in _PAIRS]
    if form == "tensor":
        got = run(f"{category}.{variant}", lhs=lhs, rhs=np.array([b for _, b in _PAIRS]))
    else:
        suffix = "Elem" if op_named(f"{category}.{variant}").out_dtype is OutDType.BOOL \
            else "Scalar"
        got = np.concatenate([run(f"{category}.{variant}{suffix}", lhs=lhs[i:i + 1], rhs=b)
                              for i, (_, b) in enumerate(_PAIRS)])
    assert got.tolist() == expected


# --- burn-specific rules, hand-checked ------------------------------------------------------

CASES = [
    # integer division: truncation, x/0 = x, MIN/-1 = MIN
    ("NumericInt.Div", dict(lhs=arr("i32", 7, -7, 7, -7, 5, I32_MIN, 0),
                            rhs=arr("i32", 2, 2, -2, -2, 0, -1, 0)),
     arr("i32", 3, -3, -3, 3, 5, I32_MIN, 0)),
    ("NumericInt.Div", dict(lhs=arr("u8", 7, 9, 255), rhs=arr("u8", 0, 2, 16)),
     arr("u8", 7, 4, 15)),
    ("NumericInt.DivScalar", dict(lhs=arr("i16", -9, 9), rhs=4), arr("i16", -2, 2)),
    # integer remainder: floor modulo, x % 0 = 0
    ("NumericInt.Rem", dict(lhs=arr("i32", -7, 7, -7, 7, 5, I32_MIN),
                            rhs=arr("i32", 2, -2, -2, 2, 0, -1)),
     arr("i32", 1, -1, -1, 1, 0, 0)),
    ("NumericInt.RemScalar", dict(lhs=arr("i8", -1, 5), rhs=5), arr("i8", 4, 0)),
    ("NumericInt.Rem", dict(lhs=arr("u16", 7, 7), rhs=arr("u16", 3, 0)), arr("u16", 1, 0)),
    # float remainder: x - y*floor(x/y)
    ("NumericFloat.Rem", dict(lhs=arr("f32", -7.5, 7.5, 5.0, 1.0),
                              rhs=arr("f32", 2, -2, 0, INF)),
     arr("f32", 0.5, -0.5, NAN, NAN)),
    ("NumericFloat.RemScalar", dict(lhs=arr("f64", -1.0, 3.5), rhs=3.0), arr("f64", 2.0, 0.5)),
    # wrapping arithmetic
    ("NumericInt.Add", dict(lhs=arr("i8", 127, -128), rhs=arr("i8", 1, -1)), arr("i8", -128, 127)),
    ("NumericInt.Mul", dict(lhs=arr("i8", 64, 100), rhs=arr("i8", 4, 3)), arr("i8", 0, 44)),
    ("NumericInt.SubScalar", dict(lhs=arr("u8", 0, 5), rhs=1), arr("u8", 255, 4)),
    ("NumericInt.Neg", dict(input=arr("i32", I32_MIN, 5)), arr("i32", I32_MIN, -5)),
    ("NumericInt.Abs", dict(input=arr("i32", I32_MIN, -5)), arr("i32", I32_MIN, 5)),
    ("NumericInt.Sign", dict(input=arr("i8", -3, 0, 9)), arr("i8", -1, 0, 1)),
    # scalars take the lhs precision first
    ("NumericInt.AddScalar", dict(lhs=arr("i8", 1), rhs=300), arr("i8", 45)),
    ("NumericInt.MulScalar", dict(lhs=arr("i32", 5), rhs=2.7), arr("i32", 10)),
    ("NumericFloat.MulScalar", dict(lhs=arr("f16", 3.0), rhs=0.1),
     [np.float16(3.0) * np.float16(0.1)]),
    ("NumericFloat.AddScalar", dict(lhs=arr("f16", 2048.0), rhs=1.0), arr("f16", 2048.0)),
    ("NumericFloat.LowerElem", dict(lhs=arr("f16", 0.1), rhs=0.1), [False]),
    ("BaseBool.EqualElem", dict(lhs=np.array([True, False]), rhs=True), [True, False]),
    # shifts: the count modulo the bit width
    ("Int.BitwiseLeftShift", dict(lhs=arr("i32", 1, 1, 3, -1), rhs=arr("i32", 33, -1, 0, 31)),
     arr("i32", 2, I32_MIN, 3, I32_MIN)),
    ("Int.BitwiseLeftShiftScalar", dict(lhs=arr("u8", 1, 255), rhs=9), arr("u8", 2, 254)),
    ("Int.BitwiseRightShift", dict(lhs=arr("i32", -8, -8, 256), rhs=arr("i32", 1, 33, 36)),
     arr("i32", -4, -4, 16)),
    ("Int.BitwiseRightShiftScalar", dict(lhs=arr("u16", 0x8000), rhs=17), arr("u16", 0x4000)),
    ("Int.BitwiseAnd", dict(lhs=arr("i16", 12, -1), rhs=arr("i16", 10, 7)), arr("i16", 8, 7)),
    ("Int.BitwiseOrScalar", dict(lhs=arr("u8", 1, 2), rhs=4), arr("u8", 5, 6)),
    ("Int.BitwiseXor", dict(lhs=arr("i8", 5), rhs=arr("i8", 3)), arr("i8", 6)),
    ("Int.BitwiseNot", dict(input=arr("i8", 0, 5)), arr("i8", -1, -6)),
    # float division by zero is IEEE
    ("NumericFloat.Div", dict(lhs=arr("f32", 1, -1, 0), rhs=arr("f32", 0, 0, 0)),
     arr("f32", INF, -INF, NAN)),
    ("Float.Recip", dict(input=arr("f32", 0.0, -0.0, 4.0)), arr("f32", INF, -INF, 0.25)),
    # powf: integral exponents take the sign rule, others are pow()
    ("Float.Powf", dict(lhs=arr("f64", -2, -2, -2, 2, -8, 0.5),
                        rhs=arr("f64", 2, 3, 0.5, 0.5, 1 / 3, -2)),
     arr("f64", 4, -8, NAN, math.sqrt(2), NAN, 4)),
    ("Float.PowfScalar", dict(lhs=arr("f32", -2, 3), rhs=3.0), arr("f32", -8, 27)),
    ("Float.PowfScalar", dict(lhs=arr("f32", -3, 3), rhs=4.0), arr("f32", 81, 81)),
    # log1p is not compensated
    ("Float.Log1p", dict(input=arr("f32", 1e-8, 0.0)), arr("f32", 0.0, 0.0)),
    # comparisons: NaN compares false; bool results
    ("NumericFloat.GreaterEqual", dict(lhs=arr("f32", NAN, 1), rhs=arr("f32", NAN, 1)),
     [False, True]),
    ("BaseFloat.NotEqual", dict(lhs=arr("f32", NAN, 1), rhs=arr("f32", NAN, 1)), [True, False]),
    ("Float.IsNan", dict(input=arr("f32", NAN, INF, 1)), [True, False, False]),
    ("Float.IsInf", dict(input=arr("f32", NAN, -INF, 1)), [False, True, False]),
    # clamp: min(max(x, lo), hi), scalars in the output dtype
    ("NumericFloat.Clamp", dict(tensor=arr("f32", -5, 0.5, 5, NAN), min=-1.0, max=1.0),
     arr("f32", -1, 0.5, 1, NAN)),
    ("NumericInt.Clamp", dict(tensor=arr("u8", 0, 9, 200), min=3, max=100), arr("u8", 3, 9, 100)),
    ("NumericInt.ClampMin", dict(lhs=arr("i32", -5, 5), rhs=0), arr("i32", 0, 5)),
    ("NumericFloat.ClampMax", dict(lhs=arr("f32", -5, 5), rhs=0.0), arr("f32", -5, 0)),
    # bool ops
    ("Bool.And", dict(lhs=np.array([True, True, False]), rhs=np.array([True, False, False])),
     [True, False, False]),
    ("Bool.Or", dict(lhs=np.array([True, False]), rhs=np.array([False, False])), [True, False]),
    ("Bool.Not", dict(input=np.array([True, False])), [False, True]),
    # masks, creation
    ("BaseFloat.MaskWhere", dict(tensor=arr("f32", 1, 2, 3), mask=np.array([True, False, True]),
                                 value=arr("f32", 9)), arr("f32", 9, 2, 9)),
    ("BaseInt.MaskFill", dict(tensor=arr("i32", 1, 2), mask=np.array([False, True]), value=7),
     arr("i32", 1, 7)),
    ("BaseFloat.MaskFill", dict(tensor=arr("f16", 1, 2), mask=np.array([False, True]),
                                value=0.1), arr("f16", 1, 0.1)),
]


@pytest.mark.parametrize("name,fields,expected", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_burn_rule(name, fields, expected):
    assert_bits(run(name, **fields), expected)


@pytest.mark.parametrize("name,value,out_dtype,expected", [
    ("BaseFloat.Ones", None, DType.F16, 1.0),
    ("BaseInt.Zeros", None, DType.U8, 0),
    ("BaseBool.Ones", None, DType.BOOL, True),
    ("NumericFloat.Full", 0.1, DType.F16, np.float16(0.1)),
    ("NumericInt.Full", -1, DType.U16, 65535),
    ("NumericInt.Full", 3.9, DType.I32, 3),
])
def test_creation_fills_out_shape(name, value, out_dtype, expected):
    fields = {} if value is None else dict(value=value)
    got = run(name, out_dtype=out_dtype, out_shape=(2, 3), **fields)
    assert_bits(got, np.full((2, 3), expected, dtype=out_dtype.numpy))


# --- erf -----------------------------------------------------------------------------------


def _erf_reference(x: float) -> float:
    """Abramowitz–Stegun 7.1.26 in Python doubles, burn's order."""
    a1, a2, a3, a4, a5 = 0.2548296, -0.28449674, 1.4214137, -1.453152, 1.0614054
    ax = abs(x)
    t = 1.0 / (1.0 + 0.3275911 * ax)
    poly = ((((a5 * t + a4) * t) + a3) * t + a2) * t + a1
    y = 1.0 - poly * t * math.exp(-ax * ax)
    return -y if x < 0 else y


@pytest.mark.parametrize("x", [0.0, 0.1, 0.5, 1.0, 1.7, 3.0, 6.0, -0.3, -2.2])
def test_erf_is_abramowitz_stegun(x):
    got = run("Float.Erf", input=arr("f64", x))[0]
    assert got == pytest.approx(_erf_reference(x), rel=1e-14, abs=1e-16)
    assert abs(got - math.erf(x)) < 2e-7
    if 0.0 < abs(x) < 3.0:  # the approximation, not the exact function
        assert got != math.erf(x)


@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
def test_erf_odd_and_in_dtype(dtype):
    # 0 is left out: the polynomial's coefficients sum to 0.99999996, so erf(±0) = +4e-8
    xs = np.linspace(0.1, 4.0, 40).astype(DType(dtype).numpy)
    pos, neg = run("Float.Erf", input=xs), run("Float.Erf", input=-xs)
    assert pos.tobytes() == (-neg).tobytes()
    assert np.all(np.abs(pos.astype(np.float64) - [math.erf(v) for v in xs.astype(float)])
                  < {"f16": 2e-3, "f32": 1e-6, "f64": 2e-7}[dtype])
    assert np.isnan(run("Float.Erf", input=arr(dtype, NAN))[0])


# --- conversions ---------------------------------------------------------------------------


@pytest.mark.parametrize("name,values,out_dtype,expected", [
    ("Float.IntoInt", arr("f32", 2.7, -2.7, 1e10, -1e10, NAN, INF, -INF), DType.I32,
     [2, -2, I32_MAX, I32_MIN, 0, I32_MAX, I32_MIN]),
    ("Float.IntoInt", arr("f64", -1.5, 255.9, 256.0, 2.0**63), DType.U8, [0, 255, 255, 255]),
    ("Float.IntoInt", arr("f64", 2.0**63, -(2.0**63), 2.0**62), DType.I64,
     [2**63 - 1, -(2**63), 2**62]),
    ("Float.IntoInt", arr("f64", 2.0**64, 2.0**63), DType.U64, [2**64 - 1, 2**63]),
    ("BaseInt.Cast", arr("i32", 300, -1), DType.I8, [44, -1]),
    ("BaseInt.Cast", arr("i8", -1), DType.U32, [2**32 - 1]),
    ("BaseFloat.Cast", arr("f32", 70000.0, 0.1), DType.F16, [INF, np.float16(0.1)]),
    ("Int.IntoFloat", arr("i64", 2**53 + 1, -3), DType.F64, [2.0**53, -3.0]),
    ("Bool.IntoInt", np.array([True, False]), DType.U8, [1, 0]),
    ("Bool.IntoFloat", np.array([True, False]), DType.F16, [1.0, 0.0]),
])
def test_conversion(name, values, out_dtype, expected):
    assert_bits(run(name, out_dtype=out_dtype, input=values), expected)


@pytest.mark.parametrize("value,dtype,expected", [
    (300, DType.U8, 44), (-1, DType.U32, 2**32 - 1), (2.9, DType.I16, 2), (-2.9, DType.I16, -2),
    (1e9, DType.I8, 127), (True, DType.I32, 1), (0.1, DType.F16, np.float16(0.1)),
    (3, DType.F32, 3.0), (2, DType.BOOL, True), (0.0, DType.BOOL, False),
])
def test_scalar_value_converts_to_dtype(value, dtype, expected):
    got = scalar_value(value, dtype)
    assert got.shape == () and got.dtype == dtype.numpy and got == expected


@pytest.mark.parametrize("name,fields", [
    ("Float.Exp", dict(input=np.array(0.0, np.float32))),
    ("NumericInt.AddScalar", dict(lhs=np.array(1, np.int8), rhs=2)),
    ("NumericFloat.Lower", dict(lhs=np.array(1.0), rhs=np.array(2.0))),
])
def test_rank_zero_tensors_give_arrays(name, fields):
    assert run(name, **fields).shape == ()


def test_convert_is_identity_for_same_dtype():
    values = arr("f32", 1, 2)
    assert convert(values, DType.F32) is values


# --- reductions ----------------------------------------------------------------------------

M = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)


@pytest.mark.parametrize("name,values,axis,expected", [
    ("NumericFloat.SumDim", M, 0, [[5, 7, 9]]),
    ("NumericFloat.SumDim", M, 1, [[6], [15]]),
    ("NumericFloat.MeanDim", M, 1, [[2], [5]]),
    ("NumericFloat.ProdDim", M, 1, [[6], [120]]),
    ("NumericFloat.MaxDim", M, 0, [[4, 5, 6]]),
    ("NumericFloat.MinDim", M, 1, [[1], [4]]),
    ("NumericFloat.MaxAbsDim", arr("f32", -5, 3).reshape(1, 2), 1, [[5]]),
    ("NumericFloat.MaxDim", np.array([[1, NAN], [2, 3]], np.float32), 1, [[NAN], [3]]),
    ("NumericFloat.MinDim", np.array([[NAN, 1], [2, 3]], np.float32), 1, [[NAN], [2]]),
    ("NumericFloat.SumDim", arr("f16", 2048, 1, 1).reshape(1, 3), 1, [[2050]]),
    ("NumericFloat.MeanDim", arr("f16", 2048, 1, 1, 2).reshape(1, 4), 1, [[513]]),
    ("NumericInt.SumDim", arr("i8", 100, 100).reshape(1, 2), 1, [[-56]]),
    ("NumericInt.ProdDim", arr("i8", 16, 16, 3).reshape(1, 3), 1, [[0]]),
    ("NumericInt.MeanDim", np.array([[1, 2], [-1, -2]], np.int32), 1, [[1], [-1]]),
    ("NumericInt.MeanDim", arr("u8", 200, 100).reshape(1, 2), 1, [[22]]),  # wrapped sum 44 / 2
    ("NumericInt.MaxAbsDim", arr("i32", -7, 3).reshape(1, 2), 1, [[7]]),
    ("BaseFloat.AnyDim", np.array([[0, NAN], [0, 0]], np.float32), 1, [[True], [False]]),
    ("BaseInt.AllDim", np.array([[1, 2], [3, 0]], np.int32), 1, [[True], [False]]),
    ("BaseBool.AnyDim", np.array([[False], [True]]), 0, [[True]]),
])
def test_reduce_dim_keeps_axis(name, values, axis, expected):
    assert_bits(run(name, input=values, axis=axis), expected)


@pytest.mark.parametrize("name,values,expected", [
    ("NumericFloat.Sum", M, [21]),
    ("NumericFloat.Mean", M, [3.5]),
    ("NumericFloat.Prod", M, [720]),
    ("NumericFloat.Max", M, [6]),
    ("NumericFloat.Min", M, [1]),
    ("NumericFloat.MaxAbs", -M, [6]),
    ("NumericInt.Sum", arr("u8", 200, 100), [44]),
    ("NumericInt.Mean", arr("i32", -3, -4), [-3]),
    ("BaseBool.All", np.array([[True, False]]), [False]),
    ("BaseInt.Any", np.zeros((2, 2), np.int64), [False]),
])
def test_full_reduction_has_shape_one(name, values, expected):
    assert_bits(run(name, input=values), expected)


@pytest.mark.parametrize("name,values,out_dtype,expected", [
    ("NumericFloat.ArgMax", np.array([[3, 1, 3], [0, 2, 2]], np.float32), DType.I32, [[0], [1]]),
    ("NumericFloat.ArgMin", np.array([[2, 1, 1], [0, 0, 5]], np.float32), DType.I64, [[1], [0]]),
    ("NumericFloat.ArgMax", np.array([[1, NAN, 5]], np.float32), DType.I64, [[1]]),
    ("NumericInt.ArgMax", np.array([[-1, 7, 7]], np.int8), DType.U8, [[1]]),
])
def test_argmax_first_index_in_snapshot_dtype(name, values, out_dtype, expected):
    assert_bits(run(name, out_dtype=out_dtype, input=values, axis=1), expected)


def test_reductions_do_not_depend_on_memory_layout():
    x = random_values((64, 33), DType.F32, 4)
    col_major = np.asfortranarray(x)
    for axis in (0, 1):
        a = run("NumericFloat.SumDim", input=x, axis=axis)
        b = run("NumericFloat.SumDim", input=col_major, axis=axis)
        assert a.tobytes() == b.tobytes()


def test_reduce_over_empty_axis_gives_identity():
    empty = np.zeros((2, 0), np.float32)
    assert_bits(run("NumericFloat.SumDim", input=empty, axis=1), [[0], [0]])
    assert_bits(run("NumericFloat.MaxDim", input=empty, axis=1), [[-INF], [-INF]])
    assert_bits(run("NumericFloat.ArgMin", out_dtype=DType.I32, input=empty, axis=1),
                [[0], [0]])


# --- movement and indexing ------------------------------------------------------------------

X23 = np.arange(6, dtype=np.int32).reshape(2, 3)


@pytest.mark.parametrize("name,fields,out_shape,expected", [
    ("BaseInt.Reshape", dict(input=X23), (3, 2), [[0, 1], [2, 3], [4, 5]]),
    ("BaseInt.SwapDims", dict(input=X23, dim1=1, dim2=0), None, [[0, 3], [1, 4], [2, 5]]),
    ("BaseInt.Permute", dict(input=X23, axes=(1, 0)), None, [[0, 3], [1, 4], [2, 5]]),
    ("BaseInt.Flip", dict(input=X23, axes=(0, 1)), None, [[5, 4, 3], [2, 1, 0]]),
    ("BaseInt.Flip", dict(input=X23, axes=()), None, X23),
    ("BaseInt.Expand", dict(input=X23[:1]), (2, 2, 3), [[[0, 1, 2]] * 2] * 2),
    ("BaseInt.Slice", dict(tensor=X23, ranges=((1, 2), (0, 2))), None, [[3, 4]]),
    ("BaseInt.Slice", dict(tensor=X23, ranges=((0, 2),)), None, X23),
    ("BaseInt.Cat", dict(tensors=(X23, X23[:1]), dim=0), None, [[0, 1, 2], [3, 4, 5],
                                                                  [0, 1, 2]]),
    ("BaseInt.Cat", dict(tensors=(X23, X23[:, :1]), dim=1), None, [[0, 1, 2, 0], [3, 4, 5, 3]]),
    ("BaseInt.Gather", dict(tensor=X23, dim=1, indices=np.array([[0, 0], [2, 1]], np.int32)),
     None, [[0, 0], [5, 4]]),
    ("BaseInt.Gather", dict(tensor=X23, dim=0, indices=np.array([[1, 0, 1]], np.int64)),
     None, [[3, 1, 5]]),
    ("BaseInt.Select", dict(tensor=X23, dim=1, indices=np.array([2, 0, 2], np.int64)), None,
     [[2, 0, 2], [5, 3, 5]]),
    ("BaseInt.Select", dict(tensor=X23, dim=0, indices=np.array([1], np.uint8)), None,
     [[3, 4, 5]]),
])
def test_movement_and_indexing(name, fields, out_shape, expected):
    got = run(name, out_shape=out_shape, **fields)
    assert_bits(got, expected)


def test_gather_is_torch_gather():
    x = random_values((3, 4, 5), DType.F32, 1)
    idx = np.random.default_rng(0).integers(0, 4, size=(3, 2, 5))
    got = run("BaseFloat.Gather", tensor=x, dim=1, indices=idx)
    for i, j, k in np.ndindex(idx.shape):
        assert got[i, j, k] == x[i, idx[i, j, k], k]


@pytest.mark.parametrize("name,indices", [
    ("BaseFloat.Gather", np.array([[0, 3]], np.int64)),
    ("BaseFloat.Gather", np.array([[0, -1]], np.int64)),
    ("BaseFloat.Select", np.array([3], np.int32)),
])
def test_indexing_out_of_range_raises(name, indices):
    tensor = np.zeros((1, 3), np.float32)
    with pytest.raises(InputDataError) as info:
        run(name, tensor=tensor, dim=1, indices=indices)
    assert info.value.field == "indices"


# --- matmul --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["f64", "f32", "f16"])
def test_float_matmul_broadcasts_batch(dtype):
    a = random_values((2, 1, 3, 4), DType(dtype), 1)
    b = random_values((1, 3, 4, 2), DType(dtype), 2)
    got = run("Float.Matmul", lhs=a, rhs=b)
    assert got.shape == (2, 3, 3, 2)
    exact = np.einsum("...ij,...jk->...ik", a.astype(np.float64), b.astype(np.float64))
    tol = {"f64": 1e-12, "f32": 1e-5, "f16": 2e-2}[dtype]
    np.testing.assert_allclose(got.astype(np.float64), exact, rtol=tol, atol=tol)


def test_int_matmul_wraps_exact_product():
    a = np.array([[100, 100], [-128, 1]], np.int8)
    b = np.array([[3], [1]], np.int8)
    def wrap8(v):
        return (v + 128) % 256 - 128
    assert_bits(run("Int.Matmul", lhs=a, rhs=b), [[wrap8(400)], [wrap8(-128 * 3 + 1)]])
    big = np.array([[2**62, 2**62]], np.int64)
    assert_bits(run("Int.Matmul", lhs=big, rhs=np.array([[2], [2]], np.int64)), [[0]])


# --- module ops against per-element PyTorch formulas ----------------------------------------


def _naive_pool(x, kernel, stride, padding, dilation, reduce):
    n, c, h, w = x.shape
    oh = (h + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    out = np.zeros((n, c, oh, ow))
    for b, ch, i, j in np.ndindex(out.shape):
        window = []
        for ki in range(kernel[0]):
            for kj in range(kernel[1]):
                y = i * stride[0] - padding[0] + ki * dilation[0]
                z = j * stride[1] - padding[1] + kj * dilation[1]
                inside = 0 <= y < h and 0 <= z < w
                window.append((float(x[b, ch, y, z]) if inside else None))
        out[b, ch, i, j] = reduce(window)
    return out


@pytest.mark.parametrize("kernel,stride,padding,dilation", [
    ((2, 2), (2, 2), (0, 0), (1, 1)), ((3, 3), (1, 2), (1, 1), (1, 1)),
    ((3, 2), (2, 1), (1, 0), (2, 1)),
])
def test_max_pool2d_matches_naive(kernel, stride, padding, dilation):
    x = random_values((2, 3, 7, 6), DType.F32, 3)
    got = run("Module.MaxPool2d", x=x, kernel_size=kernel, stride=stride, padding=padding,
              dilation=dilation)
    expected = _naive_pool(x, kernel, stride, padding, dilation,
                           lambda win: max(v for v in win if v is not None))
    assert_bits(got, expected)


def test_max_pool2d_propagates_nan():
    x = np.zeros((1, 1, 2, 2), np.float32)
    x[0, 0, 0, 1] = NAN
    got = run("Module.MaxPool2d", x=x, kernel_size=(2, 2), stride=(1, 1), padding=(0, 0),
              dilation=(1, 1))
    assert np.isnan(got).all()


@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d_matches_naive(count_include_pad):
    x = random_values((1, 2, 5, 6), DType.F64, 4)
    kernel, stride, padding = (3, 2), (2, 2), (1, 1)

    def mean(window):
        inside = [v for v in window if v is not None]
        return sum(inside) / (len(window) if count_include_pad else len(inside))
    got = run("Module.AvgPool2d", x=x, kernel_size=kernel, stride=stride, padding=padding,
              count_include_pad=count_include_pad)
    np.testing.assert_allclose(got, _naive_pool(x, kernel, stride, padding, (1, 1), mean),
                               rtol=1e-14)


def test_adaptive_avg_pool2d_uses_pytorch_windows():
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 1, 5)
    got = run("Module.AdaptiveAvgPool2d", x=x, output_size=(1, 3))
    # windows [0, 2), [1, 4), [3, 5)
    assert_bits(got, [[[[0.5, 2.0, 3.5]]]])
    x = random_values((2, 3, 7, 5), DType.F64, 5)
    got = run("Module.AdaptiveAvgPool2d", x=x, output_size=(3, 4))
    for b, c, i, j in np.ndindex(got.shape):
        h0, h1 = i * 7 // 3, -(-(i + 1) * 7 // 3)
        w0, w1 = j * 5 // 4, -(-(j + 1) * 5 // 4)
        assert got[b, c, i, j] == pytest.approx(x[b, c, h0:h1, w0:w1].mean(), rel=1e-14)


def test_interpolate_nearest_uses_floor_index():
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    got = run("Module.Interpolate", x=x, output_size=(4, 2), mode="nearest")
    # rows floor(i*2/4) = 0,0,1,1; cols floor(j*3/2) = 0,1
    assert_bits(got, [[[[0, 1], [0, 1], [3, 4], [3, 4]]]])


def test_interpolate_bilinear_half_pixel():
    x = np.array([[[[0.0, 1.0]]]], np.float32)
    got = run("Module.Interpolate", x=x, output_size=(1, 4), mode="bilinear")
    assert_bits(got, [[[[0.0, 0.25, 0.75, 1.0]]]])


def _bilinear_reference(x, oh, ow):
    n, c, h, w = x.shape
    out = np.zeros((n, c, oh, ow))

    def source(i, size, out_size):
        s = max((i + 0.5) * size / out_size - 0.5, 0.0)
        i0 = min(int(math.floor(s)), size - 1)
        return i0, min(i0 + 1, size - 1), s - i0
    for b, ch, i, j in np.ndindex(out.shape):
        y0, y1, ly = source(i, h, oh)
        z0, z1, lz = source(j, w, ow)
        top = x[b, ch, y0, z0] * (1 - lz) + x[b, ch, y0, z1] * lz
        bottom = x[b, ch, y1, z0] * (1 - lz) + x[b, ch, y1, z1] * lz
        out[b, ch, i, j] = top * (1 - ly) + bottom * ly
    return out


@pytest.mark.parametrize("out_hw", [(7, 3), (2, 9), (4, 4)])
def test_interpolate_bilinear_matches_reference(out_hw):
    x = random_values((1, 2, 4, 5), DType.F64, 6)
    got = run("Module.Interpolate", x=x, output_size=out_hw, mode="bilinear")
    np.testing.assert_allclose(got, _bilinear_reference(x, *out_hw), rtol=1e-14, atol=1e-15)


# --- the exposed kernel tables --------------------------------------------------------------


def test_kernel_tables_name_known_families():
    for table in (UNARY, BINARY):
        for name, by_class in table.items():
            assert by_class and set(by_class) <= set(DTypeClass), name
