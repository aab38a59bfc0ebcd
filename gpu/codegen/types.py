"""WGSL element types for fuselab dtypes: ``WGSL_TYPE`` and the value/vector spellings.

burn counterpart: cubecl-wgpu's WGSL compiler type mapping (``Elem`` → ``f32``/``i32``/``u32``,
bool stored as ``u32``, ``BoolStore::Native``) and tinygrad's ``WGSLRenderer.type_map``.

WGSL has no 64-bit, 8-bit or 16-bit integer types in its core language, and ``f16`` needs the
``shader-f16`` feature plus ``enable f16;``. A bool is a ``u32`` holding 0 or 1 both in memory
and inside kernels (comparisons produce 0/1, conditions test ``!= 0u``), so a bool local can be
stored without conversion.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from refimpl.dtypes import DType

__all__ = ["WGSL_TYPE", "UNSUPPORTED_REASON", "value_type", "vector_type", "is_wgsl_dtype"]

# dtype → the WGSL scalar type of its values (in memory and in registers).
WGSL_TYPE: Mapping[DType, str] = MappingProxyType({
    DType.F32: "f32",
    DType.F16: "f16",
    DType.I32: "i32",
    DType.U32: "u32",
    DType.BOOL: "u32",
})

# Why every other dtype has no WGSL type (the message of UnsupportedDTypeError).
UNSUPPORTED_REASON: Mapping[DType, str] = MappingProxyType({
    DType.F64: "WGSL has no f64 (wgpu's shader-f64 is a native-only extension)",
    DType.I64: "WGSL has no i64 (wgpu's shader-int64 is a native-only extension)",
    DType.U64: "WGSL has no u64 (wgpu's shader-int64 is a native-only extension)",
    DType.I16: "WGSL has no 16-bit integers",
    DType.U16: "WGSL has no 16-bit integers",
    DType.I8: "WGSL has no 8-bit integers",
    DType.U8: "WGSL has no 8-bit integers",
})


def is_wgsl_dtype(dtype: DType) -> bool:
    """True when WGSL has a type for ``dtype`` (f16 still needs the device feature)."""
    return dtype in WGSL_TYPE


def vector_type(scalar: str, width: int) -> str:
    """``"f32"`` for width 1, ``"vec4<f32>"`` for width 4."""
    return scalar if width == 1 else f"vec{width}<{scalar}>"


def value_type(dtype: DType, width: int = 1) -> str:
    """The WGSL type of a ``width``-wide value of ``dtype``."""
    return vector_type(WGSL_TYPE[dtype], width)
