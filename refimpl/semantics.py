"""What every op computes, in numpy: ``NUMPY_IMPL``, keyed by op name.

burn counterpart: the element-wise semantics of ``burn-cubecl-fusion``'s ``FuseOp`` kernels
(``engine/codegen/ir.rs`` and ``engine/codegen/kernel.rs``, notes §7.3/§7.6) and, for ops no
fuser takes, burn-cubecl's own kernels. WGSL numeric rules are in
``reference/peers-and-wgsl.md``.

Calling convention: ``NUMPY_IMPL[name](desc, env)`` where ``desc`` is the op's operand struct
(``refimpl.ir``) and ``env`` maps tensor id → logical values (numpy array of the snapshot's
shape and dtype). The result has exactly ``desc.out``'s shape and dtype. ``Init`` (values come
from the stream's inputs) and ``Drop`` (no output) have no entry. Element-wise kernels are
also exposed by name (``UNARY``, ``BINARY``: name → dtype class → function) for the fused-block
interpreter; ``scalar_value`` and ``convert`` are the conversions every table uses.

Where burn/WGSL and numpy differ, fuselab follows burn:

==================  ==========================================================================
topic               rule
==================  ==========================================================================
scalar operands     converted to the lhs dtype first (``Clamp``/``MaskFill``/``Full``: the
                    output dtype). To an int: Python ints wrap (two's complement), floats
                    truncate and saturate (NaN → 0); to bool: ``!= 0``.
int arithmetic      wraps (two's complement). ``Div`` truncates toward zero, ``x / 0 = x``,
                    ``MIN / -1 = MIN`` (WGSL).
``Rem``             floor modulo, sign of the divisor. Floats: ``x - y*floor(x/y)`` evaluated
                    in the dtype. Ints: exact floor modulo, ``x % 0 = 0`` (WGSL's rule;
                    burn's wgpu path divides through f32 and loses precision past 2^24, we do
                    not).
``Powf``            even-integer exponent → ``|b|^e``; odd integer → ``|b|^e`` negated when
                    ``b < 0``; otherwise ``pow(b, e)`` (NaN for ``b < 0``).
``Erf``             Abramowitz–Stegun 7.1.26 in the dtype, burn's operation order
                    (``_erf``); odd extension for ``x < 0``. The coefficients sum to
                    0.99999996, so ``erf(±0)`` is not 0 but ``+2^-24 = 5.96e-8`` in f32, exactly
                    as in burn.
``Log1p``/``Recip`` ``log(1 + x)`` (not compensated), ``1 / x``.
``Round``           ties to even (burn's ``round``); ``Sign`` of NaN is NaN.
shifts              the count is taken modulo the bit width (``x << 33 == x << 1`` for i32).
float ``/ 0``       IEEE ±inf / NaN; numpy warnings are silenced everywhere.
comparisons         bool results; NaN compares false.
``Sum``/``Prod``    over the axis moved last and made contiguous (numpy's pairwise order);
                    f16 accumulates in f32 and rounds back once; ints wrap in their dtype.
``Mean``            the accumulated sum divided by the count in the accumulator (f16 → f32,
                    rounded once); ints: wrapped sum divided by the count, truncating.
``Max``/``Min``     NaN propagates (numpy). ``MaxAbs`` = ``max(|x|)``. Empty axis: the
                    identity (−inf / +inf, int min / max).
``ArgMax``/``Min``  first index of the extreme (a NaN counts as the extreme), cast to the
                    output int dtype; an empty axis gives 0.
reductions          keep the reduced axis with size 1; full reductions give shape ``[1]``.
conversions         float → int truncates toward zero after saturating to the int range,
                    NaN → 0 (Rust ``as``); int → int wraps; bool → 0 / 1.
``Gather``          ``torch.gather``; ``Select`` = ``np.take`` along ``dim``. An index outside
                    ``[0, size)`` raises ``InputDataError``.
``MaskWhere``       ``where(mask, value, tensor)``; ``MaskFill``: ``where(mask, scalar,
                    tensor)``; ``Clamp`` = ``min(max(x, lo), hi)`` (WGSL ``clamp``).
``Matmul``          float: ``np.matmul`` in the dtype; int: exact modulo 2^64, then wrapped.
pooling             NCHW. ``MaxPool2d`` pads with −inf; ``AvgPool2d`` with
                    ``count_include_pad`` divides by the kernel area, otherwise by the
                    in-bounds count; ``AdaptiveAvgPool2d`` uses PyTorch's
                    ``[floor(i*in/out), ceil((i+1)*in/out))`` windows. f16 accumulates in f32.
``Interpolate``     ``nearest``: source ``floor(i*in/out)`` (exact integer math);
                    ``bilinear``: ``align_corners=False`` (half-pixel centres, source clamped
                    at 0), along W then H.
==================  ==========================================================================
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np

from refimpl import ir
from refimpl.dtypes import DType, DTypeClass
from refimpl.errors import InputDataError
from refimpl.ops import OPS, Op, OpKind, OutDType
from refimpl.semantics_module import MODULE_IMPL

__all__ = ["NUMPY_IMPL", "UNARY", "BINARY", "Env", "Impl", "scalar_value", "convert"]

Env = Mapping[int, np.ndarray]
Impl = Callable[[Any, Env], np.ndarray]

F, I, B = DTypeClass.FLOAT, DTypeClass.INT, DTypeClass.BOOL

# --- conversions ----------------------------------------------------------------------------


def _float_to_int(values: np.ndarray, target: np.dtype) -> np.ndarray:
    """Truncate toward zero, saturate to the int range, NaN → 0 (Rust ``as``)."""
    bits, signed = target.itemsize * 8, target.kind == "i"
    info = np.iinfo(target)
    t = np.trunc(values.astype(np.float64))
    over = t >= 2.0 ** (bits - 1 if signed else bits)
    under = t < (-(2.0 ** (bits - 1)) if signed else 0.0)
    out = np.where(over | under | np.isnan(t), 0.0, t).astype(target)
    return np.where(over, info.max, np.where(under, info.min, out)).astype(target)


def convert(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Numeric conversion of a tensor to ``dtype`` (burn ``cast`` / ``into_*``)."""
    values = np.asarray(values)
    target = dtype.numpy
    if values.dtype == target:
        return values
    if values.dtype.kind == "f" and dtype.is_int:
        return _float_to_int(values, target)
    if dtype is DType.BOOL:
        return values != 0
    with np.errstate(over="ignore"):  # beyond the target's range: ±inf (IEEE), no warning
        return values.astype(target)


def _wrap_int(value: int, target: np.dtype) -> np.ndarray:
    bits = target.itemsize * 8
    wrapped = int(value) % (1 << bits)
    if target.kind == "i" and wrapped >= 1 << (bits - 1):
        wrapped -= 1 << bits
    return np.array(wrapped, dtype=target)


def scalar_value(value: ir.Scalar, dtype: DType) -> np.ndarray:
    """A scalar operand as a 0-d array of ``dtype`` (the precision the kernel uses)."""
    if dtype.is_int and not isinstance(value, float):
        return _wrap_int(value, dtype.numpy)
    return convert(np.array(float(value)), dtype)


# --- element-wise kernels -------------------------------------------------------------------


def _signed_min_by_minus_one(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind != "i":
        return np.zeros((), dtype=bool)
    return (x == np.iinfo(x.dtype).min) & (y == -1)


def _int_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Truncating division; ``x / 0 = x`` and ``MIN / -1 = MIN`` (divide by 1 instead)."""
    safe = np.where((y == 0) | _signed_min_by_minus_one(x, y), 1, y).astype(y.dtype)
    return (x - np.fmod(x, safe)) // safe


def _int_rem(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Floor modulo; ``x % 0 = 0`` (computed as ``x % 1``), ``MIN % -1 = 0``."""
    safe = np.where((y == 0) | _signed_min_by_minus_one(x, y), 1, y).astype(y.dtype)
    return np.remainder(x, safe)


def _float_rem(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x - y * np.floor(x / y)


def _powf(base: np.ndarray, exp: np.ndarray) -> np.ndarray:
    # Materialised, contiguous operands: numpy picks a different pow loop (and can round
    # differently) for a scalar or stride-0 exponent, so the result must not depend on how
    # the operands are laid out (the fused interpreter sees other layouts than eager).
    base, exp = (np.array(a, order="C", copy=True) for a in np.broadcast_arrays(base, exp))
    integral = np.isfinite(exp) & (np.floor(exp) == exp)
    odd = integral & (np.remainder(exp, exp.dtype.type(2)) == 1)
    magnitude = np.power(np.abs(base), exp)
    signed = np.where(odd & (base < 0), -magnitude, magnitude)
    return np.where(integral, signed, np.power(base, exp))


# Abramowitz–Stegun 7.1.26 coefficients as burn writes them (notes §7.6).
_ERF_P = 0.3275911
_ERF_A = (0.2548296, -0.28449674, 1.4214137, -1.453152, 1.0614054)


def _erf(x: np.ndarray) -> np.ndarray:
    """``1 - (poly(t) * t * exp(-x*x))``, ``t = 1 / (1 + p|x|)``, every step in the dtype."""
    c = x.dtype.type
    a1, a2, a3, a4, a5 = (c(a) for a in _ERF_A)
    ax = np.abs(x)
    t = c(1) / (c(1) + c(_ERF_P) * ax)
    poly = ((((a5 * t + a4) * t) + a3) * t + a2) * t + a1
    positive = c(1) - poly * t * np.exp(-ax * ax)
    return np.where(x < 0, -positive, positive)


def _log1p(x: np.ndarray) -> np.ndarray:
    return np.log(x + x.dtype.type(1))


def _recip(x: np.ndarray) -> np.ndarray:
    return x.dtype.type(1) / x


def _shift_count(x: np.ndarray, count: np.ndarray) -> np.ndarray:
    return np.bitwise_and(count, x.dtype.itemsize * 8 - 1).astype(np.uint8)


def _shift_left(x: np.ndarray, count: np.ndarray) -> np.ndarray:
    unsigned = x.astype(np.dtype(f"u{x.dtype.itemsize}"))
    return np.left_shift(unsigned, _shift_count(x, count)).astype(x.dtype)


def _shift_right(x: np.ndarray, count: np.ndarray) -> np.ndarray:
    return np.right_shift(x, _shift_count(x, count).astype(x.dtype))


def _every(fn: Callable) -> dict[DTypeClass, Callable]:
    return {F: fn, I: fn, B: fn}


def _numeric(fn: Callable) -> dict[DTypeClass, Callable]:
    return {F: fn, I: fn}


def _quiet(fn: Callable) -> Callable:
    """``fn`` with numpy's floating-point warnings silenced (IEEE results are the answer),
    always returning an ndarray (numpy gives scalars for 0-d operands)."""
    def quiet(*args):
        with np.errstate(all="ignore"):
            return np.asarray(fn(*args))
    quiet.__name__ = getattr(fn, "__name__", "kernel")
    return quiet


def _quiet_table(table: dict[str, dict[DTypeClass, Callable]]) -> Mapping:
    return MappingProxyType({name: MappingProxyType({cls: _quiet(fn) for cls, fn in by.items()})
                             for name, by in table.items()})


UNARY: Mapping[str, Mapping[DTypeClass, Callable[[np.ndarray], np.ndarray]]] = _quiet_table({
    "Abs": _numeric(np.abs),
    "Neg": _numeric(np.negative),
    "Sign": _numeric(np.sign),
    "Exp": {F: np.exp},
    "Log": {F: np.log},
    "Log1p": {F: _log1p},
    "Cos": {F: np.cos},
    "Sin": {F: np.sin},
    "Tan": {F: np.tan},
    "Tanh": {F: np.tanh},
    "Erf": {F: _erf},
    "Sqrt": {F: np.sqrt},
    "Recip": {F: _recip},
    "Round": {F: np.round},  # ties to even, as burn
    "Floor": {F: np.floor},
    "Ceil": {F: np.ceil},
    "IsNan": {F: np.isnan},
    "IsInf": {F: np.isinf},
    "BitwiseNot": {I: np.invert},
    "Not": {B: np.logical_not},
})

BINARY: Mapping[str, Mapping[DTypeClass, Callable[[np.ndarray, np.ndarray], np.ndarray]]] = \
    _quiet_table({
        "Add": _numeric(np.add),
        "Sub": _numeric(np.subtract),
        "Mul": _numeric(np.multiply),
        "Div": {F: np.divide, I: _int_div},
        "Rem": {F: _float_rem, I: _int_rem},
        "Powf": {F: _powf},
        "Max": _numeric(np.maximum),
        "Min": _numeric(np.minimum),
        "Equal": _every(np.equal),
        "NotEqual": _every(np.not_equal),
        "Lower": _numeric(np.less),
        "Greater": _numeric(np.greater),
        "LowerEqual": _numeric(np.less_equal),
        "GreaterEqual": _numeric(np.greater_equal),
        "BitwiseAnd": {I: np.bitwise_and},
        "BitwiseOr": {I: np.bitwise_or},
        "BitwiseXor": {I: np.bitwise_xor},
        "BitwiseLeftShift": {I: _shift_left},
        "BitwiseRightShift": {I: _shift_right},
        "And": {B: np.logical_and},
        "Or": {B: np.logical_or},
    })

# ``*Scalar`` / ``*Elem`` variants use the binary kernel of their stem; these two are named
# differently (``ClampMin(x, m) = max(x, m)``).
_SCALAR_STEM = {"ClampMin": "Max", "ClampMax": "Min"}


def _scalar_stem(variant: str) -> str:
    for suffix in ("Scalar", "Elem"):
        if variant.endswith(suffix):
            return variant[: -len(suffix)]
    return _SCALAR_STEM[variant]


def _unary(fn: Callable) -> Impl:
    def impl(desc, env):
        return fn(env[desc.input.id])
    return impl


def _binary(fn: Callable) -> Impl:
    def impl(desc, env):
        return fn(env[desc.lhs.id], env[desc.rhs.id])
    return impl


def _with_scalar(fn: Callable) -> Impl:
    def impl(desc, env):
        return fn(env[desc.lhs.id], scalar_value(desc.rhs, desc.lhs.dtype))
    return impl


_ELEMENTWISE = {
    ir.UnaryOpIr: lambda op: _unary(UNARY[op.variant][op.family]),
    ir.BinaryOpIr: lambda op: _binary(BINARY[op.variant][op.family]),
    ir.ScalarOpIr: lambda op: _with_scalar(BINARY[_scalar_stem(op.variant)][op.family]),
}

# --- reductions (over the last axis of a contiguous array) ----------------------------------


def _accumulator(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _sum(v: np.ndarray) -> np.ndarray:
    acc = _accumulator(v.dtype)
    return np.sum(v.astype(acc), axis=-1, dtype=acc).astype(v.dtype)


def _prod(v: np.ndarray) -> np.ndarray:
    acc = _accumulator(v.dtype)
    return np.prod(v.astype(acc), axis=-1, dtype=acc).astype(v.dtype)


def _mean(v: np.ndarray) -> np.ndarray:
    count = v.shape[-1]
    if v.dtype.kind in "iu":
        wide = np.dtype(np.int64 if v.dtype.kind == "i" else np.uint64)
        total = _sum(v).astype(wide)
        return _int_div(total, np.array(count, dtype=wide)).astype(v.dtype)
    acc = _accumulator(v.dtype)
    total = np.sum(v.astype(acc), axis=-1, dtype=acc)
    return (total / acc.type(count)).astype(v.dtype)


def _lowest(dtype: np.dtype) -> Any:
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _highest(dtype: np.dtype) -> Any:
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max


def _max(v: np.ndarray) -> np.ndarray:
    return np.max(v, axis=-1, initial=_lowest(v.dtype))


def _min(v: np.ndarray) -> np.ndarray:
    return np.min(v, axis=-1, initial=_highest(v.dtype))


def _max_abs(v: np.ndarray) -> np.ndarray:
    return _max(np.abs(v))


def _arg(pick: Callable) -> Callable[[np.ndarray], np.ndarray]:
    def reducer(v):
        if v.shape[-1] == 0:
            return np.zeros(v.shape[:-1], dtype=np.int64)
        return pick(v, axis=-1)
    return reducer


def _any(v: np.ndarray) -> np.ndarray:
    return np.any(v != 0, axis=-1)


def _all(v: np.ndarray) -> np.ndarray:
    return np.all(v != 0, axis=-1)


_REDUCERS = {
    "Sum": _sum, "Mean": _mean, "Prod": _prod, "Max": _max, "Min": _min,
    "MaxAbs": _max_abs, "ArgMax": _arg(np.argmax), "ArgMin": _arg(np.argmin),
    "Any": _any, "All": _all,
}


def _finisher(op: Op) -> Callable[[np.ndarray, ir.TensorIr], np.ndarray]:
    if op.out_dtype is OutDType.INT:
        return lambda result, out: convert(result, out.dtype)
    return lambda result, out: result


def _reduce_dim(op: Op) -> Impl:
    reducer = _REDUCERS[op.variant.removesuffix("Dim")]
    finish = _finisher(op)

    def impl(desc, env):
        x = env[desc.input.id]
        last = np.array(np.moveaxis(x, desc.axis, -1), order="C")
        return finish(np.expand_dims(reducer(last), desc.axis), desc.out)
    return impl


def _reduce_full(op: Op) -> Impl:
    reducer = _REDUCERS[op.variant]
    finish = _finisher(op)

    def impl(desc, env):
        flat = np.array(env[desc.input.id].reshape(1, -1), order="C")
        return finish(reducer(flat), desc.out)
    return impl


_REDUCTIONS = {OpKind.REDUCE_DIM: _reduce_dim, OpKind.REDUCE_FULL: _reduce_full}

# --- movement, indexing, masks, creation, matmul --------------------------------------------


def _checked_indices(indices: np.ndarray, size: int) -> np.ndarray:
    if indices.size and (indices.min() < 0 or indices.max() >= size):
        raise InputDataError(f"index values [{indices.min()}, {indices.max()}] out of range "
                             f"for a dim of size {size}", field="indices")
    return indices.astype(np.intp)


def _gather(desc, env):
    x, indices = env[desc.tensor.id], env[desc.indices.id]
    coords = list(np.indices(indices.shape, sparse=True))
    coords[desc.dim] = _checked_indices(indices, x.shape[desc.dim])
    return x[tuple(coords)]


def _select(desc, env):
    x, indices = env[desc.tensor.id], env[desc.indices.id]
    return np.take(x, _checked_indices(indices, x.shape[desc.dim]), axis=desc.dim)


def _slice(desc, env):
    return env[desc.tensor.id][tuple(slice(start, end) for start, end in desc.ranges)]


def _float_matmul(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return np.matmul(lhs, rhs)


def _int_matmul(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    wide = np.dtype(np.uint64)  # arithmetic modulo 2^64 is exact for every narrower wrap
    return np.matmul(lhs.astype(wide), rhs.astype(wide)).astype(lhs.dtype)


_MATMUL = {F: _float_matmul, I: _int_matmul}


def _fill(value: Callable[[Any], ir.Scalar]) -> Impl:
    def impl(desc, env):
        return np.full(desc.out.shape, scalar_value(value(desc), desc.out.dtype))
    return impl


_SPECIAL: dict[str, Impl] = {
    "Reshape": lambda d, env: env[d.input.id].reshape(d.out.shape),
    "SwapDims": lambda d, env: np.swapaxes(env[d.input.id], d.dim1, d.dim2),
    "Permute": lambda d, env: np.transpose(env[d.input.id], d.axes),
    "Flip": lambda d, env: np.flip(env[d.input.id], d.axes),
    "Expand": lambda d, env: np.broadcast_to(env[d.input.id], d.out.shape).copy(),
    "Slice": _slice,
    "Gather": _gather,
    "Select": _select,
    "Cat": lambda d, env: np.concatenate([env[t.id] for t in d.tensors], axis=d.dim),
    "MaskWhere": lambda d, env: np.where(env[d.mask.id], env[d.value.id], env[d.tensor.id]),
    "MaskFill": lambda d, env: np.where(env[d.mask.id], scalar_value(d.value, d.out.dtype),
                                        env[d.tensor.id]),
    "Clamp": lambda d, env: np.minimum(
        np.maximum(env[d.tensor.id], scalar_value(d.min, d.out.dtype)),
        scalar_value(d.max, d.out.dtype)),
    "Ones": _fill(lambda d: 1),
    "Zeros": _fill(lambda d: 0),
    "Full": _fill(lambda d: d.value),
    "Cast": lambda d, env: convert(env[d.input.id], d.out.dtype),
    "IntoInt": lambda d, env: convert(env[d.input.id], d.out.dtype),
    "IntoFloat": lambda d, env: convert(env[d.input.id], d.out.dtype),
    "Matmul": lambda d, env: _MATMUL[d.out.dtype.cls](env[d.lhs.id], env[d.rhs.id]),
    **MODULE_IMPL,
}

# --- the table ------------------------------------------------------------------------------


def _impl_for(op: Op) -> Impl:
    """Special variants by name, reductions by kind, element-wise ops by operand struct."""
    if op.variant in _SPECIAL:
        return _SPECIAL[op.variant]
    if op.kind in _REDUCTIONS:
        return _REDUCTIONS[op.kind](op)
    return _ELEMENTWISE[op.struct](op)


_NO_IMPL = (OpKind.INIT, OpKind.DROP)

NUMPY_IMPL: Mapping[str, Impl] = MappingProxyType(
    {op.name: _quiet(_impl_for(op)) for op in OPS if op.kind not in _NO_IMPL}
)

