"""Per-op WGSL accuracy bounds carried along a stream: how far each element of each synced
tensor may lie from the oracle.

burn counterpart: none (burn's tests compare with fixed tolerances). The per-op bounds are
``gpu.check.tolerance.GPU_ULP_TOLERANCE`` (the WGSL accuracy table); here they accumulate along the
chain of ops that produced each tensor, so that ``(a*b + c).exp()`` may differ by ``exp``'s
bound at ``a*b + c``, and a later op by its own bound plus what its inputs' errors do to it.
``gpu.check.agreement.compare`` checks GPU results against them.

``chain_bounds(stream)`` re-runs the stream op by op on numpy (the eager oracle's values,
which the interpreter equals exactly) and keeps, per tensor, an absolute error bound per
element (float64):

* element-wise ops: the inputs' errors pushed through the op by evaluating it at the corners
  of the error box (``x ± max(err, 1 ulp)``), plus the op's own bound (``ulp``/``ulp_per_x``
  in result ULPs, ``abs`` in its domain, the ``Rem``/``Powf``/``Tan`` rules, subnormal
  flushing). A bool or int result that a corner changes is *unbounded*;
* chains of ``+ - *`` (``gpu.check.tolerance.REASSOCIABLE``): each op is correctly rounded alone,
  but WGSL lets the shader compiler reassociate, contract and fold across them (lavapipe:
  ``(a - b) + b → a``, ``x*z + y*z → (x + y)*z``), so a rounding the oracle made inside the
  chain may be missing on the GPU or made at another intermediate. Such an op treats each
  operand that is itself a rounded ``+ - *`` result as uncertain by ``REASSOCIATION_ULP`` of
  that operand's ulps (pushed through the corners like any error) and adds one ulp of its
  own result (the whole chain rounded once, or its own rounding moved);
* movement and indexing: the error arrays move like the values;
* reductions and matmul: summed errors plus the reordering bounds of ``gpu.check.tolerance``;
* pooling and interpolation: the largest error of the input's ``(n, c)`` plane, plus a
  summation's rounding over the plane for the averaging ones;
  ``ArgMax``/``ArgMin`` are unbounded where the two best candidates lie within the error.

Encoding: ``inf`` = unbounded (no WGSL guarantee: outside an op's domain, or a rounding-
sensitive decision); ``nan`` = tainted: the oracle met a NaN or an infinity somewhere on the
element's chain, whether from an input or produced from finite values (``0/0``, ``x % 0.0``,
``inf - inf``, an overflow), and whatever the chain did with it afterwards (a comparison, a
cast, ``MaskWhere``, ``ArgMax``, a reduction). WGSL lets implementations assume neither exists,
so the GPU may fold such a value away (lavapipe: ``x/x - x/x → 0``, ``x % (y - y) → x``) or
treat it otherwise than numpy (``NaN != x`` is false; ``max``/``min``, ``Clamp`` and the
``Max``/``Min`` reductions drop it; ``ArgMax`` skips it: docs/wgsl-semantics.md §1.1). This is
the one place that decides it: tainted elements are a documented class of differences,
skipped by default, compared and reported (never failed) with ``nonfinite=True``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

import numpy as np

from refimpl.eager import init_targets, materialise_input
from refimpl.ir import FieldKind, OperationIr, Sync, TensorStatus
from refimpl.ops import OpKind
from refimpl.semantics import NUMPY_IMPL, scalar_value
from refimpl.stream import Stream
from gpu.check.tolerance import (GPU_ULP_TOLERANCE, REASSOCIABLE, REASSOCIATION_ULP, Tolerance,
                                 matmul_bound, product_bound, reduction_bound)

__all__ = ["Bound", "chain_bounds"]

Bound = tuple[np.ndarray, np.ndarray]  # (value, error bound)


# --- own error of one op ------------------------------------------------------------------------


def _spacing(values: np.ndarray) -> np.ndarray:
    return np.spacing(np.abs(values)).astype(np.float64)


def _rem_bound(result: np.ndarray, inputs: list) -> np.ndarray:
    """``x - y*floor(x/y)``: a few ulps, or a whole ``|y|`` when ``x/y`` is near an integer."""
    x, y = (np.asarray(v) for v in inputs[:2])
    slack = 4 * _spacing(x.astype(result.dtype)) + 4 * _spacing(y.astype(result.dtype))
    with np.errstate(all="ignore"):
        q = x.astype(np.float64) / y.astype(np.float64)
    near = np.abs(q - np.round(q)) <= 8 * _spacing(q.astype(result.dtype)) + 1e-12
    return np.where(near, np.abs(y.astype(np.float64)) + slack, slack)


def _powf_bound(result: np.ndarray, inputs: list) -> np.ndarray:
    b, e = (np.asarray(v, dtype=np.float64) for v in inputs[:2])
    with np.errstate(all="ignore"):
        t = np.abs(e * np.log2(np.abs(b)))
    t = np.where(np.isfinite(t), t, 0.0)
    return (4 + 7 * t + 6 * np.abs(e)) * _spacing(result)


def _tan_bound(result: np.ndarray, inputs: list) -> np.ndarray:
    e = result.astype(np.float64)
    return 2.0**-10 * (1 + e * e) + 4 * _spacing(result)


# Rules of ``GPU_ULP_TOLERANCE`` that are masks there (``extra``), as magnitudes here.
_EXTRA_BOUND: Mapping[str, Callable[[np.ndarray, list], np.ndarray]] = MappingProxyType({
    "Rem": _rem_bound, "Powf": _powf_bound, "Tan": _tan_bound,
})


def _own(op: OperationIr, result: np.ndarray, inputs: list) -> np.ndarray:
    """The op's own error bound per element (its WGSL accuracy)."""
    if result.dtype.kind != "f":
        return np.zeros(result.shape)
    tol: Tolerance = GPU_ULP_TOLERANCE[op.name]
    x = np.broadcast_to(np.asarray(inputs[0], dtype=np.float64), result.shape) if inputs \
        else np.zeros(result.shape)
    own = (tol.ulp + tol.ulp_per_x * np.abs(x)) * _spacing(result)
    if tol.abs:
        scale = tol.abs if result.dtype != np.float16 else (tol.abs_f16 or tol.abs * 2.0**13)
        inside = np.ones(result.shape, bool) if tol.abs_domain is None else \
            (x >= tol.abs_domain[0]) & (x <= tol.abs_domain[1])
        own = np.where(inside, np.maximum(own, scale), own)
    extra = _EXTRA_BOUND.get(op.op.variant.removesuffix("Scalar"))
    if extra is not None:
        own = np.maximum(own, np.broadcast_to(extra(result, inputs), result.shape))
    if tol.domain is not None:
        own = np.where((x >= tol.domain[0]) & (x <= tol.domain[1]), own, np.inf)
    tiny = float(np.finfo(result.dtype).tiny)
    return np.where(np.abs(result) < tiny, np.maximum(own, tiny), own)


# --- propagation --------------------------------------------------------------------------------


@dataclass
class _Tensor:
    value: np.ndarray
    err: np.ndarray
    rounded: bool = False  # a rounded + - * result (see REASSOCIABLE)


def _initial(value: np.ndarray) -> _Tensor:
    err = np.zeros(value.shape)
    if value.dtype.kind == "f":
        err = np.where(np.isfinite(value), 0.0, np.nan)
    return _Tensor(value, err)


def _spread(mask: np.ndarray, shape: tuple) -> np.ndarray:
    try:
        return np.broadcast_to(mask, shape)
    except ValueError:
        return np.broadcast_to(mask.any(), shape)


def _finish(result: np.ndarray, err: np.ndarray, tainted: np.ndarray) -> np.ndarray:
    """NaN (tainted) where an input was tainted or the result is not finite."""
    bad = tainted
    if result.dtype.kind == "f":
        bad = bad | ~np.isfinite(result)
    return np.where(bad, np.nan, err)


def _pointwise(op: OperationIr, env: dict[int, _Tensor], result: np.ndarray) -> _Tensor:
    tensors = op.inputs()
    values = {t.id: env[t.id].value for t in tensors}
    cluster = op.op.variant.removesuffix("Scalar") in REASSOCIABLE and result.dtype.kind == "f"
    tainted = np.zeros(result.shape, bool)
    unbounded = np.zeros(result.shape, bool)
    steps: dict[int, np.ndarray] = {}  # corner half-widths of the operands that move
    for t in tensors:
        err = env[t.id].err
        tainted |= _spread(np.isnan(err), result.shape)
        unbounded |= _spread(np.isinf(err), result.shape)
        if values[t.id].dtype.kind != "f":
            unbounded |= _spread(err > 0, result.shape)
            continue
        v, known = values[t.id], np.nan_to_num(err, nan=0.0, posinf=0.0)
        step = np.where(known > 0, np.maximum(known, _spacing(v)), 0.0)
        if cluster and env[t.id].rounded:
            step = np.maximum(step, REASSOCIATION_ULP * _spacing(v))
        if step.any():
            steps[t.id] = step
    propagated = np.zeros(result.shape)
    for signs in itertools.product((-1.0, 1.0), repeat=len(steps)):
        corner = dict(values)
        for sign, (tid, step) in zip(signs, steps.items()):
            corner[tid] = (values[tid].astype(np.float64) + sign * step).astype(values[tid].dtype)
        with np.errstate(all="ignore"):
            moved = np.asarray(NUMPY_IMPL[op.name](op.desc, corner))
            diff = np.abs(moved.astype(np.float64) - result.astype(np.float64))
        propagated = np.maximum(propagated, np.where(np.isnan(diff), np.inf, diff))
    rounded = any(env[t.id].rounded for t in tensors)
    if result.dtype.kind != "f":
        err = np.where(propagated > 0, np.inf, 0.0)
    else:
        scalars = [scalar_value(v, tensors[0].dtype) for v in op.scalars()] if tensors else []
        err = propagated + _own(op, result, [values[t.id] for t in tensors] + scalars)
        if cluster and rounded:
            err = err + _spacing(result)
    err = np.where(unbounded, np.inf, err)
    # Neg is exact: its result is as rounded as its operand.
    rounded = cluster and (op.op.variant != "Neg" or rounded)
    return _Tensor(result, _finish(result, err, tainted), rounded)


_INDEX_FIELDS = ("indices",)


def _movement(op: OperationIr, env: dict[int, _Tensor], result: np.ndarray) -> _Tensor:
    """Errors move with the values; an uncertain index makes the whole output unbounded."""
    errs = {}
    for name, kind in op.desc.SCHEMA:
        value = getattr(op.desc, name)
        for t in (value if kind is FieldKind.TENSORS else (value,)) \
                if kind in (FieldKind.TENSOR, FieldKind.TENSORS) else ():
            if name == "out":
                continue
            if name in _INDEX_FIELDS:
                errs[t.id] = env[t.id].value
                if np.asarray(env[t.id].err).any():
                    return _Tensor(result, np.full(result.shape, np.inf))
            else:
                errs[t.id] = env[t.id].err
    moved = np.asarray(NUMPY_IMPL[op.name](op.desc, errs), dtype=np.float64)
    return _Tensor(result, moved.reshape(result.shape))


def _axis_of(op: OperationIr) -> int | None:
    return op.desc.axis if op.op.kind is OpKind.REDUCE_DIM else None


def _along(values: np.ndarray, axis: int | None, fn: Callable) -> np.ndarray:
    if axis is None:
        return np.asarray(fn(values.reshape(-1), axis=0)).reshape(1)
    return fn(values, axis=axis, keepdims=True)


def _arg_uncertain(values: np.ndarray, err: np.ndarray, axis: int, maximum: bool) -> np.ndarray:
    """Where the best and second-best candidates lie within twice the largest error (never
    over an empty axis: the result is 0 on both sides)."""
    if values.shape[axis] == 0:
        return np.zeros(values.shape[:axis] + (1,) + values.shape[axis + 1:], bool)
    v = values.astype(np.float64) if maximum else -values.astype(np.float64)
    ordered = -np.sort(-v, axis=axis)
    top = np.take(ordered, [0], axis=axis)
    second = np.take(ordered, [1], axis=axis) if v.shape[axis] > 1 else np.full(top.shape, -np.inf)
    width = np.max(np.nan_to_num(err, nan=0.0), axis=axis, keepdims=True)
    return (width > 0) & (top - second <= 2 * width)


def _reduce(op: OperationIr, env: dict[int, _Tensor], result: np.ndarray) -> _Tensor:
    source = env[op.desc.input.id]
    values, err, axis = source.value, source.err, _axis_of(op)
    variant = op.op.variant.removesuffix("Dim")
    tainted = _along(np.isnan(err), axis, np.any)
    unbounded = _along(np.isinf(err), axis, np.any)
    finite_err = np.nan_to_num(err, nan=0.0, posinf=0.0)
    if variant in ("ArgMax", "ArgMin"):
        out = np.where(_arg_uncertain(values, err, axis, variant == "ArgMax"), np.inf, 0.0)
    elif values.dtype.kind != "f" or variant in ("Any", "All"):
        out = np.where(_along(finite_err > 0, axis, np.any), np.inf, 0.0)
    elif variant in ("Sum", "Mean"):
        n = max(values.size if axis is None else values.shape[axis], 1)
        total = _along(finite_err, axis, np.sum) / (n if variant == "Mean" else 1)
        out = total + reduction_bound(values, axis, values.dtype, mean=variant == "Mean")
    elif variant == "Prod":
        mags = np.abs(values.astype(np.float64))
        grown = _along(mags + finite_err, axis, np.prod) - _along(mags, axis, np.prod)
        n = values.size if axis is None else values.shape[axis]
        out = grown + product_bound(result, n)
    else:  # Max, Min, MaxAbs: 1-Lipschitz in the largest error (an empty axis: the identity)
        out = _along(finite_err, axis, lambda v, **kw: np.max(v, initial=0.0, **kw))
    out = np.where(unbounded, np.inf, np.broadcast_to(out, result.shape))
    return _Tensor(result, _finish(result, out, np.broadcast_to(tainted, result.shape)))


def _matmul(op: OperationIr, env: dict[int, _Tensor], result: np.ndarray) -> _Tensor:
    lhs, rhs = env[op.desc.lhs.id], env[op.desc.rhs.id]
    a, b = np.abs(lhs.value.astype(np.float64)), np.abs(rhs.value.astype(np.float64))
    ea, eb = (np.nan_to_num(t.err, nan=0.0, posinf=0.0) for t in (lhs, rhs))
    flags = [(~np.isfinite(t.err)).astype(np.float64) for t in (lhs, rhs)]
    ones = [np.ones_like(a), np.ones_like(b)]
    touched = (np.matmul(flags[0], ones[1]) + np.matmul(ones[0], flags[1])) > 0
    if result.dtype.kind != "f":
        err = np.where((np.matmul(ea, ones[1]) + np.matmul(ones[0], eb)) > 0, np.inf, 0.0)
    else:
        err = np.matmul(a, eb) + np.matmul(ea, b) + np.matmul(ea, eb) + \
            matmul_bound(a, b, result.dtype) + _spacing(result)
    tainted = (np.matmul(np.isnan(lhs.err).astype(float), ones[1]) +
               np.matmul(ones[0], np.isnan(rhs.err).astype(float))) > 0
    err = np.where(touched, np.inf, err)
    return _Tensor(result, _finish(result, err, tainted))


def _module(op: OperationIr, env: dict[int, _Tensor], result: np.ndarray) -> _Tensor:
    """Pooling and interpolation: each output element is a maximum, a selection or a mean
    weighted at most 1 in all of its ``(n, c)`` plane, so it is off by the plane's largest
    input error at most, plus (but for a maximum) a summation's rounding over the plane."""
    source = env[op.desc.x.id]
    values, err, plane = source.value, source.err, (2, 3)
    tainted = np.any(np.isnan(err), axis=plane, keepdims=True)
    unbounded = np.any(np.isinf(err), axis=plane, keepdims=True)
    out = np.max(np.nan_to_num(err, nan=0.0, posinf=0.0), axis=plane, keepdims=True,
                 initial=0.0)
    if op.op.variant != "MaxPool2d":
        terms = values.shape[2] * values.shape[3]
        mags = np.max(np.abs(values.astype(np.float64)), axis=plane, keepdims=True, initial=0.0)
        out = out + (terms + 2) * float(np.finfo(values.dtype).eps) * mags
    out = np.where(unbounded, np.inf, out)
    return _Tensor(result, _finish(result, np.broadcast_to(out, result.shape),
                                   np.broadcast_to(tainted, result.shape)))


_BY_KIND: Mapping[OpKind, Callable] = MappingProxyType({
    OpKind.ELEMENTWISE: _pointwise,
    OpKind.OTHER: _pointwise,
    OpKind.VIEW: _movement,
    OpKind.MOVEMENT: _movement,
    OpKind.INDEXED: _movement,
    OpKind.REDUCE_DIM: _reduce,
    OpKind.REDUCE_FULL: _reduce,
    OpKind.MATMUL: _matmul,
    OpKind.MODULE: _module,
})


def _propagate(op: OperationIr, env: dict[int, _Tensor]) -> _Tensor:
    with np.errstate(all="ignore"):
        result = np.asarray(NUMPY_IMPL[op.name](op.desc, {t.id: env[t.id].value
                                                          for t in op.inputs()}))
        if op.op.variant == "Matmul":
            return _matmul(op, env, result)
        return _BY_KIND[op.op.kind](op, env, result)


def chain_bounds(stream: Stream) -> dict[int, Bound]:
    """Every synced tensor's value (the eager oracle's) and its accumulated error bound."""
    env: dict[int, _Tensor] = {}
    deferred = set(init_targets(stream))
    for tid in sorted(stream.inputs):
        if tid not in deferred:
            env[tid] = _initial(materialise_input(stream.inputs[tid], tid))
    synced: dict[int, Bound] = {}
    for item in stream.items:
        if isinstance(item, Sync):
            synced.update({tid: (env[tid].value, env[tid].err) for tid in item.tensors})
            continue
        kind = item.op.kind
        if kind is OpKind.DROP:
            env.pop(item.desc.tensor.id, None)
            continue
        if kind is OpKind.INIT:
            out = item.desc.out.id
            env[out] = _initial(materialise_input(stream.inputs[out], out))
            continue
        produced = _propagate(item, env)
        for t in item.inputs():
            if t.status is TensorStatus.ReadWrite:
                env.pop(t.id, None)
        env[item.desc.out.id] = produced
    return synced
