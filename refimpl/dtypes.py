"""Element types of the stream: burn's ``DType`` (burn-tensor ``tensor/dtype.rs``).

Only the types numpy can hold exactly are modelled. ``bool`` is stored as ``u32`` by the
wgpu runtime (burn's ``BoolStore::Native`` on cubecl-wgpu), which is why its
``storage_bytes`` is 4: vector-width selection (notes §6.1) uses the storage size.

numpy is imported when a numpy dtype is first asked for (``DType.numpy``), not with this
module: the widths come from the type names, and the planner needs nothing else.
"""

from __future__ import annotations

import enum
import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DType", "DTypeClass"]


class DTypeClass(enum.Enum):
    """The three families that burn's op categories are split by (Float / Int / Bool)."""

    FLOAT = "float"
    INT = "int"
    BOOL = "bool"


class DType(enum.Enum):
    """A stream element type, spelt lowercase as in the stream format (``"f32"``)."""

    F64 = "f64"
    F32 = "f32"
    F16 = "f16"
    I64 = "i64"
    I32 = "i32"
    I16 = "i16"
    I8 = "i8"
    U64 = "u64"
    U32 = "u32"
    U16 = "u16"
    U8 = "u8"
    BOOL = "bool"

    @property
    def numpy(self) -> np.dtype:
        """The numpy dtype that holds this type's logical values."""
        return _numpy_dtype(self)

    @property
    def cls(self) -> DTypeClass:
        """Float, Int or Bool: which burn category family the type belongs to."""
        if self is DType.BOOL:
            return DTypeClass.BOOL
        if self.value.startswith("f"):
            return DTypeClass.FLOAT
        return DTypeClass.INT

    @property
    def is_float(self) -> bool:
        return self.cls is DTypeClass.FLOAT

    @property
    def is_int(self) -> bool:
        return self.cls is DTypeClass.INT

    @property
    def is_signed(self) -> bool:
        return self.value[0] in "fi"

    @property
    def bits(self) -> int:
        """Width of the logical value (bool counts as 8, numpy's size)."""
        return 8 if self is DType.BOOL else int(self.value[1:])

    @property
    def storage_bytes(self) -> int:
        """Bytes one element occupies in a GPU buffer (bool is stored as u32)."""
        return 4 if self is DType.BOOL else self.bits // 8

    @classmethod
    def parse(cls, text: str) -> DType:
        """``DType.parse("f32") is DType.F32``; raises ``ValueError`` on anything else."""
        return cls(text)


@functools.cache
def _numpy_dtype(dtype: DType) -> np.dtype:
    """numpy's dtype of the same kind and width (``f32``: ``float32``), numpy imported on first
    use."""
    import numpy as np

    if dtype is DType.BOOL:
        return np.dtype(np.bool_)
    kind = {"f": "float", "i": "int", "u": "uint"}[dtype.value[0]]
    return np.dtype(f"{kind}{dtype.bits}")
