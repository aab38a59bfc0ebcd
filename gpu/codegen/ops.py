"""The WGSL expression table: what every element-wise op computes, as WGSL text.

burn counterpart: ``burn-cubecl-fusion/src/engine/codegen/kernel.rs`` (``fuse_on_read`` /
``fuse_on_write`` expanding each ``FuseOp`` into cubecl expressions) plus burn-cubecl's unary
/ binary kernels for the ops no fuser takes; in tinygrad terms, ``code_for_op``.

Two views of one table:

* ``FUSE_EXPR`` is keyed by ``FuseOp`` name (``"Add"``, ``"Assign"``, ``"ConditionalAssign"``
  ...): what the fused codegen emits per FuseOp.
* ``WGSL_EXPR`` is keyed by op name (``"NumericFloat.Add"``): every element-wise op of
  ``refimpl.ops`` — the fused ones through their FuseOp, plus the ops whose meaning differs
  from their FuseOp or that no fuser takes (``Neg``, ``NotEqual``, ``ClampMin``, ``IsNan``,
  ``Bool.And``, ``Ones``, ...). Arguments come in the op's field order: input tensors, then
  scalars (``MaskWhere(tensor, mask, value)``, ``Clamp(tensor, min, max)``).

An entry's ``render(ctx, *names)`` returns ``(expression, helpers)``: the expression over the
given value names (SSA names, each may be used twice) and the WGSL helper functions it calls
(``gpu.codegen.helpers``; a kernel defines each once). ``ctx.width`` makes every value a
``vec{width}<T>``: the fused kernel's vectorised locals. Bools are ``u32`` 0/1 everywhere.
Semantics are ``refimpl.semantics``'; where WGSL's own operator differs, the expression
spells the oracle's rule out (integer ``/`` and ``%`` by zero, floor modulo, shift counts,
saturating float → int conversion); see ``docs/wgsl-semantics.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

from refimpl.dtypes import DType
from refimpl.ops import OPS, Op, OpKind, ShapeRule
from gpu.codegen import helpers as h
from gpu.codegen.literals import ExprCtx
from gpu.codegen.types import WGSL_TYPE
from gpu.errors import UnsupportedOpError

__all__ = ["ExprCtx", "ExprRule", "FUSE_EXPR", "OP_EXPR", "WGSL_EXPR", "WGSL_TYPE",
           "ELEMENTWISE_OPS", "expr_ctx", "render"]

Render = Callable[..., str]
Helper = Callable[[ExprCtx], tuple[str, str]]
Rendered = tuple[str, tuple[str, ...]]

ALL_KINDS = ("float", "sint", "uint", "bool")
NUMERIC = ("float", "sint", "uint")
INTS = ("sint", "uint")


@dataclass(frozen=True, slots=True)
class ExprRule:
    """One table entry: a renderer per value kind (``float``/``sint``/``uint``/``bool``),
    optionally calling a helper function."""

    arity: int
    variants: Mapping[str, tuple[Render, Helper | None]]

    def render(self, ctx: ExprCtx, *args: str) -> Rendered:
        """``(expression, helper sources)`` for ``ctx`` over the value names ``args``."""
        variant = self.variants.get(ctx.kind)
        if variant is None:
            raise UnsupportedOpError(f"no WGSL expression for {ctx.dtype.value} operands")
        if len(args) != self.arity:
            raise ValueError(f"expression takes {self.arity} values, got {len(args)}")
        fn, helper = variant
        if helper is None:
            return fn(ctx, *args), ()
        name, source = helper(ctx)
        return fn(ctx, name, *args), (source,)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(k for k in ALL_KINDS if k in self.variants)


def _rule(arity: int, fn: Render, kinds: tuple[str, ...] = NUMERIC,
          helper: Helper | None = None) -> ExprRule:
    return ExprRule(arity, MappingProxyType({k: (fn, helper) for k in kinds}))


def _merge(*rules: ExprRule) -> ExprRule:
    variants: dict = {}
    for rule in rules:
        variants.update(rule.variants)
    return ExprRule(rules[0].arity, MappingProxyType(variants))


def _infix(op: str) -> Render:
    return lambda ctx, a, b: f"({a} {op} {b})"


def _call(fn: str) -> Render:
    return lambda ctx, *args: f"{fn}({', '.join(args)})"


def _compare(op: str) -> Render:
    return lambda ctx, a, b: ctx.to_u32_bool(f"{a} {op} {b}")


def _helper_call(ctx: ExprCtx, name: str, *args: str) -> str:
    return f"{name}({', '.join(args)})"


# --- conversions (Assign) -------------------------------------------------------------------


def _convert(ctx: ExprCtx, a: str) -> Rendered:
    """``ctx.source`` → ``ctx.out``: numeric conversion with the oracle's rules."""
    src, out = ctx.source, ctx.out
    if WGSL_TYPE[src] == WGSL_TYPE[out] and (src is DType.BOOL) == (out is DType.BOOL):
        return a, ()
    if out is DType.BOOL:
        return ctx.to_u32_bool(f"{a} != {ctx.lit(0, src)}"), ()
    if src.is_float and out.is_int:
        name, source = h.float_to_int_helper(ctx)
        return f"{name}({a})", (source,)
    return f"{ctx.ty(out)}({a})", ()  # i32<->u32 keep bits (wrap); bool is already 0/1


@dataclass(frozen=True, slots=True)
class _AssignRule:
    """``Assign``: a copy, or a conversion when source and output dtypes differ."""

    arity: int = 1

    def render(self, ctx: ExprCtx, *args: str) -> Rendered:
        return _convert(ctx, *args)

    @property
    def kinds(self) -> tuple[str, ...]:
        return ALL_KINDS


ASSIGN = _AssignRule()

# --- FuseOp entries -------------------------------------------------------------------------


def _div_int(ctx: ExprCtx, a: str, b: str) -> str:
    return f"({a} / {h.safe_divisor(ctx, a, b)})"


def _shift(op: str) -> Render:
    def render(ctx: ExprCtx, a: str, b: str) -> str:
        bits = ctx.dtype.bits - 1
        return f"({a} {op} ({ctx.ty(DType.U32)}({b}) & {ctx.u32(bits)}))"
    return render


def _unary_math(fn: str) -> ExprRule:
    return _rule(1, _call(fn), ("float",))


def _cond_assign(ctx: ExprCtx, cond: str, lhs: str, rhs: str) -> str:
    return f"select({rhs}, {lhs}, {ctx.truth(cond)})"


FUSE_EXPR: Mapping[str, ExprRule | _AssignRule] = MappingProxyType({
    # arithmetic: + - * are exact in WGSL (correctly rounded / wrapping)
    "Add": _rule(2, _infix("+")),
    "Sub": _rule(2, _infix("-")),
    "Mul": _rule(2, _infix("*")),
    "Div": _merge(_rule(2, _infix("/"), ("float",)), _rule(2, _div_int, INTS)),
    "Rem": _merge(
        _rule(2, lambda ctx, a, b: f"({a} - {b} * floor({a} / {b}))", ("float",)),
        _rule(2, _helper_call, INTS, h.int_rem_helper)),
    "Powf": _rule(2, _helper_call, ("float",), h.powf_helper),
    "Abs": _merge(_rule(1, _call("abs"), ("float", "sint")),
                  _rule(1, lambda ctx, a: a, ("uint",))),
    # float math (accuracy: docs/wgsl-semantics.md, gpu/check/tolerance.py)
    "Exp": _unary_math("exp"),
    "Log": _unary_math("log"),
    "Log1p": _rule(1, lambda ctx, a: f"log({a} + {ctx.lit(1)})", ("float",)),
    "Cos": _unary_math("cos"),
    "Sin": _unary_math("sin"),
    "Tanh": _unary_math("tanh"),
    "Erf": _rule(1, _helper_call, ("float",), h.erf_helper),
    "Sqrt": _unary_math("sqrt"),
    "Recip": _rule(1, lambda ctx, a: f"({ctx.lit(1)} / {a})", ("float",)),
    "Assign": ASSIGN,
    # comparisons: u32 0/1 results
    "Equal": _rule(2, _compare("=="), ALL_KINDS),
    "Lower": _rule(2, _compare("<")),
    "Greater": _rule(2, _compare(">")),
    "LowerEqual": _rule(2, _compare("<=")),
    "GreaterEqual": _rule(2, _compare(">=")),
    # bitwise: shift counts modulo the bit width (a u32 count, as WGSL requires)
    "BitwiseAnd": _rule(2, _infix("&"), INTS),
    "BitwiseOr": _rule(2, _infix("|"), INTS),
    "BitwiseXor": _rule(2, _infix("^"), INTS),
    "BitwiseLeftShift": _rule(2, _shift("<<"), INTS),
    "BitwiseRightShift": _rule(2, _shift(">>"), INTS),
    "BitwiseNot": _rule(1, lambda ctx, a: f"(~{a})", INTS),
    # Clamp(input, min, max) = min(max(x, lo), hi), the oracle's order
    "Clamp": _rule(3, lambda ctx, a, lo, hi: f"min(max({a}, {lo}), {hi})"),
    # ConditionalAssign(cond, lhs, rhs) = cond ? lhs : rhs
    "ConditionalAssign": _rule(3, _cond_assign, ALL_KINDS),
})

# --- per-op entries where the op differs from its FuseOp, or has none -----------------------


def _sign(ctx: ExprCtx, a: str) -> str:
    zero = ctx.lit(0)
    if ctx.kind == "uint":
        return f"select({zero}, {ctx.lit(1)}, {a} > {zero})"
    return f"select(select({zero}, {ctx.lit(-1)}, {a} < {zero}), {ctx.lit(1)}, {a} > {zero})"


def _neg(ctx: ExprCtx, a: str) -> str:
    return f"({ctx.lit(0)} - {a})" if ctx.kind == "uint" else f"(-{a})"


def _bits_test(test: Callable[[ExprCtx, str], str]) -> Render:
    return lambda ctx, a: ctx.to_u32_bool(test(ctx, a))


def _fill(value: int) -> ExprRule:
    return ExprRule(0, MappingProxyType(
        {k: (lambda ctx: ctx.lit(value, ctx.out), None) for k in ALL_KINDS}))


def _mask_where(ctx: ExprCtx, tensor: str, mask: str, value: str) -> str:
    return _cond_assign(ctx, mask, value, tensor)


# Keyed by variant: the entry serves every category carrying it (NumericFloat/NumericInt.Neg).
OP_EXPR: Mapping[str, ExprRule | _AssignRule] = MappingProxyType({
    "NotEqual": _rule(2, _compare("!="), ALL_KINDS),
    "NotEqualElem": _rule(2, _compare("!="), ALL_KINDS),
    "Neg": _rule(1, _neg),
    "Sign": _rule(1, _sign),
    "ClampMin": _rule(2, _call("max")),
    "ClampMax": _rule(2, _call("min")),
    "Tan": _unary_math("tan"),
    "Round": _unary_math("round"),  # ties to even, as numpy and burn
    "Floor": _unary_math("floor"),
    "Ceil": _unary_math("ceil"),
    "IsNan": _rule(1, _bits_test(h.is_nan_bits), ("float",)),
    "IsInf": _rule(1, _bits_test(h.is_inf_bits), ("float",)),
    "IntoInt": ASSIGN,
    "IntoFloat": ASSIGN,
    "Not": _rule(1, lambda ctx, a: f"({a} ^ {ctx.u32(1)})", ("bool",)),
    "And": _rule(2, _infix("&"), ("bool",)),
    "Or": _rule(2, _infix("|"), ("bool",)),
    "Ones": _fill(1),
    "Zeros": _fill(0),
    "Full": ASSIGN,  # Assign{input: Scalar(value)}: the scalar is loaded in the output dtype
    "MaskWhere": _rule(3, _mask_where, ALL_KINDS),
    "MaskFill": _rule(3, _mask_where, ALL_KINDS),
})

# Element-wise ops with a standalone kernel: the planner's ELEMENTWISE kind plus the OTHER
# ops that compute one output element per (broadcast) input element, by their shape rule
# (every OTHER op but Int.Matmul).
ELEMENTWISE_OPS: tuple[Op, ...] = tuple(
    op for op in OPS if op.kind is OpKind.ELEMENTWISE
    or (op.kind is OpKind.OTHER and op.shape in (ShapeRule.SAME, ShapeRule.BROADCAST)))


def _entry(op: Op) -> ExprRule | _AssignRule:
    if op.variant in OP_EXPR:
        return OP_EXPR[op.variant]
    return FUSE_EXPR[op.fuse]


WGSL_EXPR: Mapping[str, ExprRule | _AssignRule] = MappingProxyType(
    {op.name: _entry(op) for op in ELEMENTWISE_OPS})


def expr_ctx(op: Op, in_dtype: DType, out_dtype: DType, width: int = 1) -> ExprCtx:
    """The rendering context of ``op``: operand precision by burn's ``cmp_elem`` rule
    (comparisons and binary arithmetic: the lhs; conversions: ``src`` = input, ``dtype`` =
    output; everything else: the output)."""
    if WGSL_EXPR[op.name] is ASSIGN:
        return ExprCtx(out_dtype, out_dtype, width, src=in_dtype)
    if out_dtype is DType.BOOL:
        return ExprCtx(in_dtype, out_dtype, width)  # comparisons, IsNan, bool ops
    return ExprCtx(out_dtype, out_dtype, width)


def render(op_name: str, ctx: ExprCtx, *args: str) -> Rendered:
    """``WGSL_EXPR[op_name].render(ctx, *args)``."""
    return WGSL_EXPR[op_name].render(ctx, *args)
