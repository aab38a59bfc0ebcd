"""Typed WGSL literals and the rendering context of an expression (``ExprCtx``).

burn counterpart: cubecl's WGSL compiler printing constants (``ConstantScalarValue``) and
cube types (``Item``: element type + vectorization). Literals are always finite and exactly
representable in their type: WGSL makes a non-finite constant expression a shader-creation
error, so inf/NaN only ever enter a kernel as runtime data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from refimpl.dtypes import DType
from gpu.codegen.types import WGSL_TYPE, value_type, vector_type

__all__ = ["ExprCtx", "literal", "kind_of", "type_tag"]

# WGSL literal suffix per scalar type.
_SUFFIX = {"f32": "f", "f16": "h", "i32": "i", "u32": "u"}


def kind_of(dtype: DType) -> str:
    """``"float"``, ``"sint"``, ``"uint"`` or ``"bool"``: how WGSL treats the values."""
    if dtype is DType.BOOL:
        return "bool"
    if dtype.is_float:
        return "float"
    return "sint" if dtype.is_signed else "uint"


def _float_text(value: float, dtype: DType) -> str:
    typed = dtype.numpy.type(value)
    if not np.isfinite(typed):
        raise ValueError(f"{value!r} is not a finite {dtype.value}: pass it as runtime data")
    if float(typed) == int(typed):
        return f"{int(typed)}.0"
    return np.format_float_positional(typed, unique=True, trim="0")


def _scalar_literal(value: float | int, dtype: DType) -> str:
    scalar = WGSL_TYPE[dtype]
    if scalar in ("f32", "f16"):
        return _float_text(float(value), dtype) + _SUFFIX[scalar]
    value = int(value)
    if scalar == "i32" and value == -(2**31):
        return "bitcast<i32>(0x80000000u)"  # 2147483648i is out of range
    if dtype is DType.BOOL:
        value = 1 if value else 0
    return f"{value}{_SUFFIX[scalar]}"


def literal(value: float | int, dtype: DType, width: int = 1) -> str:
    """``0.5f``, ``-3i``, ``1u``, or ``vec4<f32>(0.5f)`` for width 4."""
    text = _scalar_literal(value, dtype)
    return text if width == 1 else f"{vector_type(WGSL_TYPE[dtype], width)}({text})"


def type_tag(dtype: DType, width: int) -> str:
    """A name fragment for helper functions: ``f32``, ``v4f32``, ``v2u32`` (bool → ``u32``)."""
    scalar = WGSL_TYPE[dtype]
    return scalar if width == 1 else f"v{width}{scalar}"


@dataclass(frozen=True, slots=True)
class ExprCtx:
    """What an expression is rendered for.

    ``dtype`` is the operand precision (burn's ``cmp_elem``: the lhs for binary arithmetic,
    comparisons and bitwise ops; the output for unary math, ``Assign``, ``Rem``, ``Clamp`` and
    ``ConditionalAssign``), ``src`` the dtype of the value being converted (``Assign`` only;
    defaults to ``dtype``), ``out`` the result dtype, ``width`` the vector width: every
    operand and the result are ``vec{width}<T>`` values when it is above 1.
    """

    dtype: DType
    out: DType
    width: int = 1
    src: DType | None = None

    @property
    def kind(self) -> str:
        return kind_of(self.dtype)

    @property
    def source(self) -> DType:
        return self.src if self.src is not None else self.dtype

    def ty(self, dtype: DType | None = None) -> str:
        """The value type (``f32`` / ``vec4<f32>``) of ``dtype`` (default: the operands')."""
        return value_type(dtype or self.dtype, self.width)

    def lit(self, value: float | int, dtype: DType | None = None) -> str:
        """A literal of ``dtype`` (default: the operands'), splatted to the width."""
        return literal(value, dtype or self.dtype, self.width)

    def u32(self, value: int) -> str:
        return literal(value, DType.U32, self.width)

    def to_u32_bool(self, condition: str) -> str:
        """A WGSL bool (vector) as the 0/1 ``u32`` fuselab keeps bools in."""
        return f"select({self.u32(0)}, {self.u32(1)}, {condition})"

    def truth(self, value: str) -> str:
        """A stored bool (``u32`` 0/1) as a WGSL bool (vector)."""
        return f"({value} != {self.u32(0)})"

    def tag(self, dtype: DType | None = None) -> str:
        return type_tag(dtype or self.dtype, self.width)
