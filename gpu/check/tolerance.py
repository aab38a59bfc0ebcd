"""How far a GPU result may be from the numpy oracle: ``GPU_ULP_TOLERANCE`` and
``assert_close_ulp``.

burn counterpart: none (burn's tests use fixed ``assert_approx_eq`` tolerances). The bounds
are transcribed from the WGSL spec's table "Accuracy of concrete floating point operations"
(``+ - *`` correctly rounded; ``x / y`` 2.5 ULP; ``exp`` 3 + 2|x| ULP; ``log`` absolute 2^-21
on [0.5, 2], else 3 ULP; ``inverseSqrt`` 2 ULP and ``sqrt`` inherited from ``1/inverseSqrt``;
``pow`` inherited from ``exp2(y * log2(x))``; ``tanh`` absolute 1e-5; ``sin``/``cos``
absolute 2^-11 on [-π, π]); each entry says where its numbers come from. Integer, bool,
comparison and movement results are always exact. Across the ops of a fused kernel the
compiler may reassociate ``+ - *``: ``REASSOCIABLE`` and ``REASSOCIATION_ULP`` are that
allowance, applied by ``gpu.check.chain_bounds``.

Rules applied to every float comparison: equal values (±0 included) and two NaNs pass; a
result whose expected value is subnormal may be flushed to zero (WGSL allows flushing).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping, Sequence

import numpy as np

from refimpl.compare import ulp_distance
from refimpl.ops import OPS, OpKind

__all__ = ["Tolerance", "GPU_ULP_TOLERANCE", "LOOSEST_SINGLE_OP", "NUMPY_F32_ULP",
           "REASSOCIABLE", "REASSOCIATION_ULP", "ulp_distance", "close_mask", "assert_close_ulp",
           "reduction_bound", "product_bound", "matmul_bound"]

Arrays = Sequence[np.ndarray]
PI = float(np.pi)


@dataclass(frozen=True)
class Tolerance:
    """The allowance of one op: a result passes if any rule admits it.

    * ``ulp`` (+ ``ulp_per_x`` × |first input|) ULPs of the output dtype;
    * ``abs`` (f32; f16 uses ``abs_f16``, default scaled by the epsilon ratio), only where
      the first input lies in ``abs_domain`` when that is set;
    * ``extra(actual, expected, inputs)`` → bool mask, for rules that are not a distance;
    * outside ``domain`` the spec gives no bound and nothing is checked.
    """

    reason: str
    ulp: float = 0.0
    ulp_per_x: float = 0.0
    abs: float = 0.0
    abs_f16: float | None = None
    abs_domain: tuple[float, float] | None = None
    domain: tuple[float, float] | None = None
    extra: Callable[[np.ndarray, np.ndarray, Arrays], np.ndarray] | None = None


# numpy's own float32 exp/log/sin/cos/tan/tanh/log1p are SIMD approximations, not correctly
# rounded (measured against float64 on an AVX-512 host: exp 2.4, log 3.0, sin/cos/tan/tanh
# ≤ 1.5, log1p 1.9 ULP), so the oracle contributes its own error to the comparison.
NUMPY_F32_ULP = 4

EXACT = Tolerance("exact: integer, bool, comparison, selection and movement results, and "
                  "+ - * alone (WGSL: correctly rounded; in a chain see REASSOCIABLE)")

# Fused chains of these (variants, Scalar forms included): each op is correctly rounded alone,
# but WGSL lets the compiler reassociate and contract across them, and lavapipe's does
# ((a - b) + b → a, x*z + y*z → (x + y)*z). gpu.check.chain_bounds lets an op of this set see each
# operand that is a rounded result of one as uncertain by REASSOCIATION_ULP of its ulps, plus
# one ulp of its own result (docs/wgsl-semantics.md §1.2). 3: (x + y)*z rounds x + y, at most
# 2 ulps of the larger product, plus the oracle's own half ulps. Neg is exact and passes its
# operand's rounding on. Exactness is checked on exact data (test_fused_exact_chains.py).
REASSOCIABLE = frozenset({"Add", "Sub", "Mul", "Neg"})
REASSOCIATION_ULP = 3


def _rem_quotient_step(actual: np.ndarray, expected: np.ndarray, inputs: Arrays) -> np.ndarray:
    """``x - y*floor(x/y)``: WGSL's ``/`` (2.5 ULP) may put ``floor`` one step away when
    ``x/y`` is within a few ULP of an integer; the result then differs by ``y``. FMA
    contraction of ``x - y*f`` may change the last bits of a cancellation."""
    x, y = (np.asarray(v, dtype=np.float64) for v in inputs[:2])
    slack = 4 * np.spacing(np.abs(x).astype(actual.dtype)).astype(np.float64) + \
        4 * np.spacing(np.abs(y).astype(actual.dtype)).astype(np.float64)
    diff = actual.astype(np.float64) - expected.astype(np.float64)
    return (np.abs(diff) <= slack) | (np.abs(np.abs(diff) - np.abs(y)) <= slack)


def _powf_ulp(actual: np.ndarray, expected: np.ndarray, inputs: Arrays) -> np.ndarray:
    """pow = exp2(e·log2|b|): exp2 3 + 2|t| ULP with t = e·log2|b|; log2 (abs 2^-21 in
    [0.5, 2], 3 ULP outside) times |e| adds ≤ 6|e| + 5|t| ULP."""
    b, e = (np.asarray(v, dtype=np.float64) for v in inputs[:2])
    with np.errstate(all="ignore"):
        t = np.abs(e * np.log2(np.abs(b)))
    t = np.where(np.isfinite(t), t, 0.0)
    allowed = 4 + 7 * t + 6 * np.abs(e)
    return ulp_distance(actual, expected) <= allowed


def _tan_abs(actual: np.ndarray, expected: np.ndarray, inputs: Arrays) -> np.ndarray:
    """tan inherits sin/cos's absolute 2^-11: the quotient's error grows as 1 + tan²."""
    e = expected.astype(np.float64)
    return np.abs(actual.astype(np.float64) - e) <= 2.0**-10 * (1 + e * e)


_FLOAT_RULES: dict[str, Tolerance] = {
    "Div": Tolerance("x / y: 2.5 ULP for |y| in [2^-126, 2^126] (WGSL)", ulp=3),
    "Recip": Tolerance("1 / x: 2.5 ULP (WGSL, as x / y)", ulp=3),
    "Rem": Tolerance("x - y*floor(x/y): inherits / (2.5 ULP) through floor", ulp=0,
                     extra=_rem_quotient_step),
    "Exp": Tolerance("exp: 3 + 2|x| ULP (WGSL), + NUMPY_F32_ULP for the oracle",
                     ulp=3 + NUMPY_F32_ULP, ulp_per_x=2),
    "Log": Tolerance("log: absolute 2^-21 on [0.5, 2], 3 ULP elsewhere (WGSL), + the "
                     "oracle's NUMPY_F32_ULP (2^-22 absolute inside)", ulp=3 + NUMPY_F32_ULP,
                     abs=2.0**-21 + 2.0**-22, abs_f16=2.0**-7, abs_domain=(0.5, 2.0)),
    "Log1p": Tolerance("log(1 + x): log's bound at 1 + x (absolute 2^-21 for x in "
                       "[-0.5, 1], else 3 ULP), + the oracle's NUMPY_F32_ULP",
                       ulp=3 + NUMPY_F32_ULP, abs=2.0**-21 + 2.0**-22, abs_f16=2.0**-7,
                       abs_domain=(-0.5, 1.0)),
    "Sqrt": Tolerance("sqrt: inherited from 1 / inverseSqrt (2 + 2.5 ULP)", ulp=5),
    "Tanh": Tolerance("tanh: absolute 1e-5 (WGSL)", ulp=NUMPY_F32_ULP, abs=1e-5,
                      abs_f16=2.0**-8),
    "Sin": Tolerance("sin: absolute 2^-11 on [-π, π], no bound outside (WGSL)",
                     abs=2.0**-11, abs_f16=2.0**-7, domain=(-PI, PI)),
    "Cos": Tolerance("cos: absolute 2^-11 on [-π, π], no bound outside (WGSL)",
                     abs=2.0**-11, abs_f16=2.0**-7, domain=(-PI, PI)),
    "Tan": Tolerance("tan: inherited from sin / cos (absolute 2^-11 each) on [-π, π]",
                     ulp=NUMPY_F32_ULP, extra=_tan_abs, domain=(-PI, PI)),
    "Erf": Tolerance("A&S 7.1.26 in the dtype: inherits exp's 3 + 2x² ULP at exp(-x²) "
                     "(≤ 3·2^-23 absolute) plus FMA contraction of the polynomial",
                     ulp=NUMPY_F32_ULP,
                     abs=2.0**-19, abs_f16=2.0**-7),
    "Powf": Tolerance("pow: inherited from exp2(e·log2|b|) (see _powf_ulp)", extra=_powf_ulp),
    "Cast": Tolerance("float conversion: rounding mode unspecified (either neighbour)", ulp=1),
    "IntoFloat": Tolerance("int → float conversion: rounding mode unspecified", ulp=1),
    "Matmul": Tolerance("K products summed in another order than numpy's (sequential fma, "
                        "or per-invocation partials then a tree): matmul_bound"),
    "Sum": Tolerance("summation order differs: |err| ≤ n·ε·Σ|x|"),
    "Mean": Tolerance("summation order differs: |err| ≤ n·ε·Σ|x| / n, then / n (≤ 3 ULP)"),
    "Prod": Tolerance("product order differs: 2n·ε relative (product_bound)"),
}
for _v in ("SumDim", "MeanDim", "ProdDim"):
    _FLOAT_RULES[_v] = _FLOAT_RULES[_v.removesuffix("Dim")]

# Every op with a GPU kernel: float rules by variant, everything else exact.
GPU_ULP_TOLERANCE: Mapping[str, Tolerance] = MappingProxyType({
    op.name: _FLOAT_RULES.get(op.variant.removesuffix("Scalar"), EXACT)
    for op in OPS if op.kind not in (OpKind.INIT, OpKind.DROP, OpKind.MODULE)
})

# Without the stream the op behind a result is unknown: every element gets the table's largest
# constant allowances (ULP, and absolute where the table has one), with no growth in |x|, no
# domains and no reordering bounds. A floor of what one WGSL op may do, not a bound on a chain.
LOOSEST_SINGLE_OP = Tolerance(
    "the loosest single-op allowance of GPU_ULP_TOLERANCE",
    ulp=max(t.ulp for t in _FLOAT_RULES.values()),
    abs=max(t.abs for t in _FLOAT_RULES.values()),
    abs_f16=max(t.abs_f16 or 0.0 for t in _FLOAT_RULES.values()))


def _first(inputs: Arrays, shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(np.asarray(inputs[0], dtype=np.float64), shape)


def _inside(x: np.ndarray, bounds: tuple[float, float] | None) -> np.ndarray:
    if bounds is None:
        return np.ones(x.shape, dtype=bool)
    return (x >= bounds[0]) & (x <= bounds[1])


def close_mask(actual: np.ndarray, expected: np.ndarray, tol: Tolerance, inputs: Arrays,
               bound: np.ndarray | float = 0.0) -> np.ndarray:
    """Per element: does ``actual`` pass ``tol`` (plus an absolute ``bound``)?"""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.dtype.kind != "f":
        return actual == expected
    with np.errstate(all="ignore"):
        return _float_close(actual, expected, tol, inputs, bound)


def _float_close(actual: np.ndarray, expected: np.ndarray, tol: Tolerance, inputs: Arrays,
                 bound: np.ndarray | float) -> np.ndarray:
    expected = expected.astype(actual.dtype)
    tiny = np.finfo(actual.dtype).tiny
    ok = (actual == expected) | (np.isnan(actual) & np.isnan(expected))
    ok |= (np.abs(expected) < tiny) & (np.abs(actual) < tiny)
    x = _first(inputs, actual.shape) if inputs else np.zeros(actual.shape)
    finite = np.isfinite(actual) & np.isfinite(expected)
    allowed = tol.ulp + tol.ulp_per_x * np.abs(x)
    ok |= finite & (ulp_distance(actual, expected) <= allowed)
    diff = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    ok |= finite & (diff <= bound)
    if tol.abs:
        scale = tol.abs if actual.dtype != np.float16 else (tol.abs_f16 or tol.abs * 2.0**13)
        ok |= finite & (diff <= scale) & _inside(x, tol.abs_domain)
    if tol.extra is not None:
        ok |= tol.extra(actual, expected, inputs)
    if tol.domain is not None:
        ok |= ~_inside(x, tol.domain)
    return ok


def assert_close_ulp(actual: np.ndarray, expected: np.ndarray, op: str,
                     inputs: Arrays = (), bound: np.ndarray | float = 0.0) -> None:
    """Fail with the worst offenders unless every element passes ``GPU_ULP_TOLERANCE[op]``.

    ``inputs`` are the op's operands (tensors then scalars) broadcastable to the output;
    ``bound`` an extra absolute allowance (reductions and matmul: see ``reduction_bound``).
    """
    __tracebackhide__ = True
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        raise AssertionError(f"{op}: got {actual.dtype}{list(actual.shape)}, expected "
                             f"{expected.dtype}{list(expected.shape)}")
    ok = close_mask(actual, expected, GPU_ULP_TOLERANCE[op], inputs, bound)
    if ok.all():
        return
    bad = np.argwhere(~ok)[:5]
    rows = [f"  at {tuple(int(i) for i in idx)}: got {actual[tuple(idx)]!r}, expected "
            f"{expected[tuple(idx)]!r}" for idx in bad]
    raise AssertionError(f"{op}: {int((~ok).sum())} of {ok.size} elements outside the "
                         f"tolerance ({GPU_ULP_TOLERANCE[op].reason})\n" + "\n".join(rows))


def reduction_bound(values: np.ndarray, axis: int | None, dtype: np.dtype,
                    mean: bool = False) -> np.ndarray:
    """Absolute allowance of a sum taken in another order: ``2n·ε·Σ|x|`` (÷ n for a mean)
    with ε of the accumulator (f32 for f16 inputs), plus one rounding to the output dtype.
    Any order of n additions errs by at most ``(n-1)·ε·Σ|x|`` to first order, so the bound
    holds for every kernel: sequential, vector lanes folded, workgroup trees (the fused
    reduce's unit and cube routines). The shape is the reduction's output shape (``[1]``
    for a full reduction)."""
    acc_eps = float(np.finfo(np.float32 if dtype == np.float16 else dtype).eps)
    mags = np.abs(values.astype(np.float64))
    n = max(values.size if axis is None else values.shape[axis], 1)
    total = mags.sum().reshape(1) if axis is None else mags.sum(axis=axis, keepdims=True)
    scale = n if mean else 1
    return 2 * n * acc_eps * total / scale + float(np.finfo(dtype).eps) * total / scale


def matmul_bound(lhs_abs: np.ndarray, rhs_abs: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Absolute allowance of a matmul's sum of ``K`` products taken in another order:
    ``2K·ε_acc·(|A|·|B|)`` with ε of the accumulator (f32 for f16), plus one rounding to the
    output dtype. ``lhs_abs``, ``rhs_abs``: the operands' magnitudes (float64); every GPU form
    accumulates in f32, each product and partial sum rounding at most once per term."""
    acc_eps = float(np.finfo(np.float32 if dtype == np.float16 else dtype).eps)
    mags = np.matmul(lhs_abs, rhs_abs)
    k = lhs_abs.shape[-1]
    return (2 * k * acc_eps + float(np.finfo(dtype).eps)) * mags


def product_bound(expected: np.ndarray, count: int) -> np.ndarray:
    """Absolute allowance of a product of ``count`` factors in another order:
    ``2·count·ε·|result|``."""
    eps = float(np.finfo(np.float32 if expected.dtype == np.float16 else expected.dtype).eps)
    out_eps = float(np.finfo(expected.dtype).eps)
    return (2 * count * eps + out_eps) * np.abs(expected.astype(np.float64))
