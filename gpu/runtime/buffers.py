"""Tensors in GPU buffers: ``DeviceTensor`` (a buffer and the layout it is read through) and the
storage form of every dtype.

burn counterpart: cubecl's ``TensorHandle`` (a buffer handle plus shape, strides and offset in
elements) and cubecl-wgpu's storage of each element type (bool as ``u32``,
``BoolStore::Native``).

Bool is stored as a ``u32`` 0/1. Buffers are padded to a multiple of 16 bytes, so that vec4
loads never read past the end and copies meet ``COPY_BUFFER_ALIGNMENT`` (4). Nothing here
touches a device: ``gpu.runtime.server`` allocates, fills and reads the buffers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from refimpl.data import contiguous_strides
from refimpl.dtypes import DType

__all__ = ["BUFFER_ALIGN", "DeviceTensor", "STORAGE_NUMPY", "dtype_of", "padded_size"]

# The numpy dtype of a buffer's words for each dtype (bool is a u32 0/1).
STORAGE_NUMPY: Mapping[DType, np.dtype] = {
    DType.F32: np.dtype(np.float32),
    DType.F16: np.dtype(np.float16),
    DType.I32: np.dtype(np.int32),
    DType.U32: np.dtype(np.uint32),
    DType.BOOL: np.dtype(np.uint32),
}

BUFFER_ALIGN = 16  # bytes: vec4 loads, and COPY_BUFFER_ALIGNMENT (4)


@dataclass(frozen=True, eq=False)
class DeviceTensor:
    """A GPU buffer and the strided layout (in elements) a tensor is read through."""

    buffer: Any
    dtype: DType
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def is_contiguous(self) -> bool:
        """Row-major dense from offset 0 (size-1 dims may have any stride)."""
        dense = contiguous_strides(self.shape)
        return self.offset == 0 and all(
            size == 1 or s == d for size, s, d in zip(self.shape, self.strides, dense))

    def view(self, shape: Sequence[int], strides: Sequence[int], offset: int = 0) -> DeviceTensor:
        """The same buffer read through another layout."""
        return DeviceTensor(self.buffer, self.dtype, tuple(shape), tuple(strides), offset)


def padded_size(nbytes: int) -> int:
    """The size of a buffer holding ``nbytes``: a multiple of ``BUFFER_ALIGN``, never 0."""
    return max(BUFFER_ALIGN, -(-nbytes // BUFFER_ALIGN) * BUFFER_ALIGN)


def dtype_of(values: np.ndarray) -> DType:
    """The fuselab dtype of a numpy array's values."""
    for dtype in DType:
        if dtype.numpy == values.dtype:
            return dtype
    raise TypeError(f"no fuselab dtype holds numpy {values.dtype}")
