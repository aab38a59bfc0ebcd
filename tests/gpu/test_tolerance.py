"""The tolerance table and ``assert_close_ulp``: ULP distances, per-op allowances, and that a
result outside its allowance fails; the chain bounds' allowance for what a shader compiler may
do to a fused chain of ``+ - *`` (rewrites) and to a NaN made inside one (the non-finite
class)."""

from __future__ import annotations

import numpy as np
import pytest

from refimpl import ir
from refimpl.dtypes import DType, DTypeClass
from refimpl.ops import OPS, OpKind, OutDType
from refimpl.strategies.builder import StreamBuilder
from gpu.check import tolerance
from gpu.check.accuracy import DOMAINS
from gpu.check.chain_bounds import chain_bounds
from gpu.check.tolerance import (GPU_ULP_TOLERANCE, REASSOCIABLE, assert_close_ulp, close_mask,
                                 ulp_distance)
from gpu.codegen.ops import ELEMENTWISE_OPS


def test_ulp_distance_counts_representable_values():
    one = np.float32(1)
    assert ulp_distance(np.float32([1]), np.float32([1])) == 0
    assert ulp_distance(np.nextafter(one, np.float32(2), dtype=np.float32).reshape(1),
                        np.float32([1])) == 1
    assert ulp_distance(np.float32([-0.0]), np.float32([0.0])) == 0
    tiny = np.finfo(np.float32).smallest_subnormal
    assert ulp_distance(np.float32([tiny]), np.float32([-tiny])) == 2
    assert ulp_distance(np.float16([1]), np.float16([1.001])) == 1


def test_every_op_with_a_kernel_has_a_tolerance_with_a_reason():
    for op in OPS:
        if op.kind in (OpKind.INIT, OpKind.DROP, OpKind.MODULE):
            continue
        assert GPU_ULP_TOLERANCE[op.name].reason


def test_variant_keyed_rules_name_ops_with_a_kernel():
    """The float rules and ``REASSOCIABLE`` are keyed by variant (``Scalar`` forms share the
    entry): every key is one of an op ``GPU_ULP_TOLERANCE`` covers, so none is stale."""
    variants = {op.variant.removesuffix("Scalar") for op in OPS if op.name in GPU_ULP_TOLERANCE}
    assert set(tolerance._FLOAT_RULES) <= variants
    assert REASSOCIABLE <= variants


def test_accuracy_domains_cover_exactly_the_float_ops_with_a_rule():
    """``gpu.check.accuracy`` measures every float element-wise op of one or two tensors, result in
    the operands' dtype, whose tolerance is not exact; and nothing else."""
    ruled = {op.name for op in ELEMENTWISE_OPS
             if op.family is DTypeClass.FLOAT and op.out_dtype is OutDType.SAME
             and op.struct in (ir.UnaryOpIr, ir.BinaryOpIr)
             and GPU_ULP_TOLERANCE[op.name] is not tolerance.EXACT}
    assert set(DOMAINS) == ruled


def test_exact_ops_fail_on_one_ulp():
    x = np.float32([1.5])
    with pytest.raises(AssertionError, match="NumericFloat.Add"):
        assert_close_ulp(np.nextafter(x, np.float32(2)), x, "NumericFloat.Add", (x, x))
    with pytest.raises(AssertionError):
        assert_close_ulp(np.int32([3]), np.int32([4]), "NumericInt.Div", ())


def test_exp_allowance_grows_with_the_argument():
    expected = np.float32([np.exp(np.float32(10))])
    off = (expected.view(np.int32) + 20).view(np.float32)  # 20 ULP away
    assert_close_ulp(off, expected, "Float.Exp", (np.float32([10.0]),))  # 3 + 2·10 = 23
    with pytest.raises(AssertionError):
        assert_close_ulp(off, expected, "Float.Exp", (np.float32([1.0]),))  # 3 + 4 + 2 = 9 ULP


def test_sin_is_unchecked_outside_its_domain():
    tol = GPU_ULP_TOLERANCE["Float.Sin"]
    got, want = np.float32([0.5, 0.5]), np.float32([0.0, 0.0])
    mask = close_mask(got, want, tol, (np.float32([1.0, 10.0]),))
    np.testing.assert_array_equal(mask, [False, True])


def test_nan_and_flushed_subnormals_pass():
    nan = np.float32([np.nan])
    assert_close_ulp(nan, nan, "NumericFloat.Add", (nan, nan))
    sub = np.float32([np.finfo(np.float32).smallest_subnormal * 8])
    assert_close_ulp(np.float32([0.0]), sub, "NumericFloat.Mul", (sub, sub))
    with pytest.raises(AssertionError):
        assert_close_ulp(np.float32([1.0]), nan, "NumericFloat.Add", (nan, nan))


def test_rem_accepts_a_quotient_one_step_away():
    x, y = np.float32([6.0]), np.float32([3.0])
    assert_close_ulp(np.float32([3.0]), np.float32([0.0]), "NumericFloat.Rem", (x, y))
    with pytest.raises(AssertionError):
        assert_close_ulp(np.float32([1.0]), np.float32([0.0]), "NumericFloat.Rem", (x, y))


# --- chain bounds of fused + - * chains ------------------------------------------------------


def _chain(build, *columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The oracle's value and error bound of ``build(builder, *input ids)`` (binary f32 ops
    given as ``(name, lhs, rhs)`` through ``op``)."""
    builder = StreamBuilder()
    ids = [builder.add_input(c.shape, DType.F32, data=c.astype(np.float64).tolist())
           for c in columns]

    def op(name: str, lhs: int, rhs: int) -> int:
        return builder.op(f"NumericFloat.{name}", columns[0].shape, DType.F32, lhs=lhs, rhs=rhs)

    out = build(op, *ids)
    builder.sync((out,))
    return chain_bounds(builder.build())[out]


def _mixed(rng: np.random.Generator, n: int = 4096) -> np.ndarray:
    """Magnitudes from 1e-3 to 1e3, so that sums cancel and lose bits."""
    return (rng.uniform(-2, 2, n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)


def test_a_lone_plus_minus_times_is_exact_in_the_chain_bounds():
    rng = np.random.default_rng(0)
    a, b = _mixed(rng), _mixed(rng)
    for name in ("Add", "Sub", "Mul"):
        _, err = _chain(lambda op, x, y: op(name, x, y), a, b)
        assert not err.any(), name


def test_chain_bounds_admit_what_a_compiler_may_do_to_a_fused_chain():
    """lavapipe's rewrites ((a - b) + b → a, (a - b) - a → -b, x*z + y*z → (x + y)*z) and an
    FMA contraction (x*y + z rounded once) all stay within the bound."""
    rng = np.random.default_rng(1)
    a, b, c = _mixed(rng), _mixed(rng), _mixed(rng)
    cases = {
        "(a - b) + b": (lambda op, x, y, z: op("Add", op("Sub", x, y), y), a),
        "(a - b) - a": (lambda op, x, y, z: op("Sub", op("Sub", x, y), x), -b),
        "a*c + b*c": (lambda op, x, y, z: op("Add", op("Mul", x, z), op("Mul", y, z)),
                      (a + b) * c),
        "a*b + c": (lambda op, x, y, z: op("Add", op("Mul", x, y), z),
                    (a.astype(np.float64) * b + c).astype(np.float32)),
    }
    for name, (build, rewritten) in cases.items():
        value, err = _chain(build, a, b, c)
        moved = np.abs(rewritten.astype(np.float64) - value)
        assert (moved > 0).any(), f"{name}: the rewrite changes nothing on this data"
        assert (moved <= err).all(), f"{name}: {int((moved > err).sum())} outside the bound"


def test_a_nan_made_from_finite_values_is_in_the_non_finite_class():
    """``a % (b - b)`` and ``a/a`` at 0 are NaN in the oracle; a compiler may fold them
    (``a``, ``1``): the whole rest of the chain is tainted (NaN bound), so not checked."""
    a = np.float32([1.5, -2.0, 0.0])
    _, err = _chain(lambda op, x, y: op("Rem", x, op("Sub", y, y)), a, a[::-1].copy())
    assert np.isnan(err).all()
    _, err = _chain(lambda op, x, y: op("Add", op("Sub", op("Div", x, x), op("Div", x, x)), y),
                    a, a)
    np.testing.assert_array_equal(np.isnan(err), [False, False, True])


def test_chain_bounds_of_reductions_over_an_empty_axis():
    """``MaxDim``/``ArgMax`` over a zero-size axis: the identity (non-finite, so tainted) and 0
    (exact), no error from an empty ``max``."""
    builder = StreamBuilder()
    x = builder.add_input((0, 3), DType.F32, seed=1)
    names = ("MaxDim", "MinDim", "ArgMax", "ArgMin")
    outs = [builder.op(f"NumericFloat.{n}", (1, 3), DType.I32 if n.startswith("Arg") else
                       DType.F32, input=x, axis=0) for n in names]
    builder.sync(tuple(outs))
    bounds = chain_bounds(builder.build())
    for name, out in zip(names, outs):
        value, err = bounds[out]
        assert np.isnan(err).all() if name.endswith("Dim") else not err.any(), name


def test_pooling_outputs_are_bounded_by_their_plane_not_left_unchecked():
    """A max pool adds no rounding of its own; an average pool its summation's; both carry the
    largest input error of their (n, c) plane (here the exp's before them)."""
    shape, out = (1, 2, 4, 4), (1, 2, 2, 2)
    for name, extra in (("Module.MaxPool2d", {"dilation": (1, 1)}),
                        ("Module.AvgPool2d", {"count_include_pad": True})):
        builder = StreamBuilder()
        x = builder.add_input(shape, DType.F32, seed=3)
        fields = dict(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), **extra)
        pooled = builder.op(name, out, DType.F32, x=x, **fields)
        exp = builder.op("Float.Exp", shape, DType.F32, input=x)
        pooled_exp = builder.op(name, out, DType.F32, x=exp, **fields)
        builder.sync((pooled, exp, pooled_exp))
        bounds = chain_bounds(builder.build())
        exp_err = bounds[exp][1].reshape(2, -1).max(axis=1)
        for tid in (pooled, pooled_exp):
            value, err = bounds[tid]
            assert np.isfinite(err).all() and value.shape == out
        if name == "Module.MaxPool2d":
            assert not bounds[pooled][1].any()
            assert np.allclose(bounds[pooled_exp][1], exp_err[None, :, None, None])
        else:
            assert (bounds[pooled][1] > 0).all()
            assert (bounds[pooled_exp][1] > exp_err[None, :, None, None]).all()
