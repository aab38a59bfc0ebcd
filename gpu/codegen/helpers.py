"""WGSL helper functions the expression table calls: the ops that need several statements.

burn counterpart: the multi-step lowerings in cubecl's WGSL backend and burn-cubecl-fusion's
``engine/codegen/kernel.rs`` (``erf`` polynomial, ``powf`` integer-exponent rule, floor
modulo) — each written here once as a WGSL function, named by op and type
(``fl_erf_v4f32``), so that a kernel defines it once however often it is used.

Every helper takes the ``ExprCtx`` it is rendered for and returns ``(name, source)``.
Operation order follows the numpy oracle (``refimpl.semantics``) step for step; only the
WGSL accuracy of ``exp``/``pow``/``/`` and a possible FMA contraction separate the two.
"""

from __future__ import annotations

from refimpl.dtypes import DType
from gpu.codegen.literals import ExprCtx

__all__ = ["erf_helper", "powf_helper", "int_rem_helper", "float_to_int_helper",
           "is_nan_bits", "is_inf_bits", "safe_divisor"]

# Abramowitz–Stegun 7.1.26, the constants burn (and refimpl.semantics._erf) use.
_ERF_P = 0.3275911
_ERF_A = (0.2548296, -0.28449674, 1.4214137, -1.453152, 1.0614054)

# Saturating float → int conversion bounds (f32-exact): clamp range, and the threshold at
# which the result is the int maximum (Rust ``as``, the oracle's ``_float_to_int``).
_INT_BOUNDS = {
    DType.I32: (-2147483648.0, 2147483520.0, 2147483648.0, 2147483647),
    DType.U32: (0.0, 4294967040.0, 4294967296.0, 4294967295),
}


def _fn(name: str, params: str, ret: str, body: list[str]) -> str:
    lines = [f"fn {name}({params}) -> {ret} {{"] + [f"    {line}" for line in body] + ["}"]
    return "\n".join(lines)


def erf_helper(ctx: ExprCtx) -> tuple[str, str]:
    """``1 - poly(t)*t*exp(-x*x)`` with ``t = 1/(1 + p|x|)``, odd extension."""
    name, ty, c = f"fl_erf_{ctx.tag()}", ctx.ty(), ctx.lit
    a1, a2, a3, a4, a5 = (c(a) for a in _ERF_A)
    body = [
        "let ax = abs(x);",
        f"let t = {c(1)} / ({c(1)} + {c(_ERF_P)} * ax);",
        f"let poly = (((({a5} * t + {a4}) * t) + {a3}) * t + {a2}) * t + {a1};",
        f"let positive = {c(1)} - poly * t * exp(-ax * ax);",
        f"return select(positive, -positive, x < {c(0)});",
    ]
    return name, _fn(name, f"x: {ty}", ty, body)


def powf_helper(ctx: ExprCtx) -> tuple[str, str]:
    """burn's ``powf``: integer exponents use ``|b|^e`` (negated for odd ``e`` and ``b < 0``);
    others ``pow(b, e)``. ``x^0 = 1`` and ``0^e = 0`` (``e > 0``) are made explicit because
    WGSL's ``pow`` is ``exp2(e * log2(b))``, undefined at ``b = 0``."""
    name, ty, c = f"fl_powf_{ctx.tag()}", ctx.ty(), ctx.lit
    body = [
        "let integral = floor(e) == e;",
        f"let odd = integral & ((e - {c(2)} * floor(e * {c(0.5)})) == {c(1)});",
        "let ab = abs(b);",
        f"let zero_base = select(pow(ab, e), {c(0)}, (ab == {c(0)}) & (e > {c(0)}));",
        f"let mag = select(zero_base, {c(1)}, e == {c(0)});",
        f"let signed = select(mag, -mag, odd & (b < {c(0)}));",
        f"return select(pow(b, e), signed, integral | (b >= {c(0)}));",
    ]
    return name, _fn(name, f"b: {ty}, e: {ty}", ty, body)


def safe_divisor(ctx: ExprCtx, a: str, b: str) -> str:
    """The divisor with 0 (and ``MIN / -1`` for signed ints) replaced by 1, so that
    ``a / s`` gives ``x / 0 = x`` and ``MIN / -1 = MIN`` on every driver (WGSL's rule,
    written out instead of trusting the backend's polyfill)."""
    zero, one = ctx.lit(0), ctx.lit(1)
    bad = f"({b} == {zero})"
    if ctx.kind == "sint":
        bad = f"({bad} | (({a} == {ctx.lit(-(2**31))}) & ({b} == {ctx.lit(-1)})))"
    return f"select({b}, {one}, {bad})"


def int_rem_helper(ctx: ExprCtx) -> tuple[str, str]:
    """Floor modulo without WGSL's ``%`` (NVIDIA's driver gets signed ``%`` wrong):
    ``r = a - s*(a/s)``, then ``r + s`` when the signs of ``r`` and ``s`` differ; ``x % 0 = 0``
    (the oracle's rule) through ``s = 1``."""
    name, ty, c = f"fl_rem_{ctx.tag()}", ctx.ty(), ctx.lit
    body = [f"let s = {safe_divisor(ctx, 'a', 'b')};", "let r = a - s * (a / s);"]
    if ctx.kind == "sint":
        body.append(f"return select(r, r + s, (r != {c(0)}) & ((r < {c(0)}) != (s < {c(0)})));")
    else:
        body.append("return r;")
    return name, _fn(name, f"a: {ty}, b: {ty}", ty, body)


def is_nan_bits(ctx: ExprCtx, x: str) -> str:
    """NaN test on the bit pattern (``x != x`` is optimised away under WGSL's finite-math
    assumption). f16 values are widened to f32 first, which keeps NaN a NaN."""
    bits = f"bitcast<{ctx.ty(DType.U32)}>({_as_f32(ctx, x)})"
    return f"(({bits} & {ctx.u32(0x7FFFFFFF)}) > {ctx.u32(0x7F800000)})"


def is_inf_bits(ctx: ExprCtx, x: str) -> str:
    """Infinity test on the bit pattern."""
    bits = f"bitcast<{ctx.ty(DType.U32)}>({_as_f32(ctx, x)})"
    return f"(({bits} & {ctx.u32(0x7FFFFFFF)}) == {ctx.u32(0x7F800000)})"


def _as_f32(ctx: ExprCtx, x: str) -> str:
    return x if ctx.source is DType.F32 else f"{ctx.ty(DType.F32)}({x})"


def float_to_int_helper(ctx: ExprCtx) -> tuple[str, str]:
    """float → i32/u32 as Rust ``as`` (the oracle): truncate, saturate, NaN → 0. The value is
    widened to f32 first; the clamp keeps WGSL's conversion inside its defined range."""
    out = ctx.out
    lo, hi, over, top = _INT_BOUNDS[out]
    name = f"fl_{ctx.tag(ctx.source)}_to_{ctx.tag(out)}"
    f32, c = ctx.ty(DType.F32), (lambda v: ctx.lit(v, DType.F32))
    out_ty = ctx.ty(out)
    x32 = "x" if ctx.source is DType.F32 else f"{f32}(x)"
    nan_ctx = ExprCtx(DType.F32, out, ctx.width)
    body = [
        f"let v = {x32};",
        f"let t = {out_ty}(clamp(v, {c(lo)}, {c(hi)}));",
        f"let saturated = select(t, {ctx.lit(top, out)}, v >= {c(over)});",
        f"return select(saturated, {ctx.lit(0, out)}, {is_nan_bits(nan_ctx, 'v')});",
    ]
    return name, _fn(name, f"x: {ctx.ty(ctx.source)}", out_ty, body)
