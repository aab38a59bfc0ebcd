"""The Tensor methods that work along dims: reductions, views and movement, indexed reads and
masks, and the NCHW modules; ``Tensor`` (``refimpl.frontend.tensor``) inherits them.

burn counterpart: the dim-taking methods of burn's ``Tensor`` (``crates/burn-tensor/src/tensor/
api/base.rs``: reshape, swap_dims, permute, flip, expand, slice, gather, select, mask_*;
``api/numeric.rs``: the reductions; ``crates/burn-tensor/src/tensor/module.rs``: pooling and
interpolate), each recorded as one ``OperationIr`` by the ``Fusion`` backend
(``crates/burn-fusion/src/ops/*.rs``). Dims may be negative; reductions keep the reduced dim
with size 1, as in burn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

from refimpl.frontend.operands import (dim_index, expand_target, pair2, record, reduce,
                                       reshape_target, shape_op, slice_ranges, unary)
from refimpl.frontend.status import METHOD
from refimpl.ir import (AdaptiveAvgPool2dOpIr, AvgPool2dOpIr, FlipOpIr, GatherOpIr,
                        InterpolateOpIr, MaskFillOpIr, MaskWhereOpIr, MaxPool2dOpIr,
                        PermuteOpIr, SelectOpIr, SliceOpIr, SwapDimsOpIr)

__all__ = ["DimMethods"]


class DimMethods:
    """Methods along dims, for a tensor handle class with ``shape`` and ``rank``."""

    __slots__ = ()
    shape: tuple[int, ...]
    rank: int

    # --- reductions: per dim (dim kept with size 1) and full (shape [1]) --------------------
    def sum_dim(self, dim: int) -> Self:
        return record(METHOD, ("Numeric", "SumDim"), (self,), reduce(dim, self.rank))

    def mean_dim(self, dim: int) -> Self:
        return record(METHOD, ("Numeric", "MeanDim"), (self,), reduce(dim, self.rank))

    def prod_dim(self, dim: int) -> Self:
        return record(METHOD, ("Numeric", "ProdDim"), (self,), reduce(dim, self.rank))

    def max_dim(self, dim: int) -> Self:
        return record(METHOD, ("Numeric", "MaxDim"), (self,), reduce(dim, self.rank))

    def min_dim(self, dim: int) -> Self:
        return record(METHOD, ("Numeric", "MinDim"), (self,), reduce(dim, self.rank))

    def argmax(self, dim: int) -> Self:
        return record(METHOD, ("Numeric", "ArgMax"), (self,), reduce(dim, self.rank))

    def argmin(self, dim: int) -> Self:
        return record(METHOD, ("Numeric", "ArgMin"), (self,), reduce(dim, self.rank))

    def any_dim(self, dim: int) -> Self:
        return record(METHOD, ("Base", "AnyDim"), (self,), reduce(dim, self.rank))

    def all_dim(self, dim: int) -> Self:
        return record(METHOD, ("Base", "AllDim"), (self,), reduce(dim, self.rank))

    def sum(self) -> Self:
        return record(METHOD, ("Numeric", "Sum"), (self,), unary)

    def mean(self) -> Self:
        return record(METHOD, ("Numeric", "Mean"), (self,), unary)

    def prod(self) -> Self:
        return record(METHOD, ("Numeric", "Prod"), (self,), unary)

    def max(self) -> Self:
        return record(METHOD, ("Numeric", "Max"), (self,), unary)

    def min(self) -> Self:
        return record(METHOD, ("Numeric", "Min"), (self,), unary)

    def any(self) -> Self:
        return record(METHOD, ("Base", "Any"), (self,), unary)

    def all(self) -> Self:
        return record(METHOD, ("Base", "All"), (self,), unary)

    # --- views and movement (BaseOperationIr) -----------------------------------------------
    def reshape(self, shape: Sequence[int]) -> Self:
        """New shape with the same element count; one ``-1`` is inferred."""
        return record(METHOD, ("Base", "Reshape"), (self,), shape_op,
                      shape=reshape_target(self.shape, shape))

    def swap_dims(self, dim1: int, dim2: int) -> Self:
        d1, d2 = dim_index(dim1, self.rank), dim_index(dim2, self.rank)
        return record(METHOD, ("Base", "SwapDims"), (self,),
                      lambda i, o, s: SwapDimsOpIr(i[0], o, d1, d2))

    def transpose(self) -> Self:
        """Swap the last two dims (burn ``transpose``)."""
        d1, d2 = self.rank - 2, self.rank - 1
        return record(METHOD, ("Base", "SwapDims"), (self,),
                      lambda i, o, s: SwapDimsOpIr(i[0], o, d1, d2))

    def permute(self, axes: Sequence[int]) -> Self:
        order = tuple(dim_index(a, self.rank) for a in axes)
        return record(METHOD, ("Base", "Permute"), (self,),
                      lambda i, o, s: PermuteOpIr(i[0], o, order))

    def flip(self, axes: Sequence[int]) -> Self:
        order = tuple(dim_index(a, self.rank) for a in axes)
        return record(METHOD, ("Base", "Flip"), (self,),
                      lambda i, o, s: FlipOpIr(i[0], o, order))

    def expand(self, shape: Sequence[int]) -> Self:
        """Grow size-1 dims (and add leading dims); ``-1`` keeps a dim."""
        return record(METHOD, ("Base", "Expand"), (self,), shape_op,
                      shape=expand_target(self.shape, shape))

    def slice(self, ranges: Sequence) -> Self:
        """Per dim a ``(start, end)`` pair, a step-1 ``slice`` or ``None``; missing dims: all."""
        spans = slice_ranges(self.shape, ranges)
        return record(METHOD, ("Base", "Slice"), (self,),
                      lambda i, o, s: SliceOpIr(i[0], spans, o))

    # --- indexed reads and masks ------------------------------------------------------------
    def gather(self, dim: int, indices: Self) -> Self:
        axis = dim_index(dim, self.rank)
        return record(METHOD, ("Base", "Gather"), (self, indices),
                      lambda i, o, s: GatherOpIr(i[0], axis, i[1], o))

    def select(self, dim: int, indices: Self) -> Self:
        axis = dim_index(dim, self.rank)
        return record(METHOD, ("Base", "Select"), (self, indices),
                      lambda i, o, s: SelectOpIr(i[0], axis, i[1], o))

    def mask_where(self, mask: Self, value: Self) -> Self:
        """``value`` where ``mask`` is true, else this tensor."""
        return record(METHOD, ("Base", "MaskWhere"), (self, mask, value),
                      lambda i, o, s: MaskWhereOpIr(i[0], i[1], i[2], o))

    def mask_fill(self, mask: Self, value: float) -> Self:
        return record(METHOD, ("Base", "MaskFill"), (self, mask),
                      lambda i, o, s: MaskFillOpIr(i[0], i[1], s[0], o), (value,))

    # --- modules (NCHW float tensors) -------------------------------------------------------
    def max_pool2d(self, kernel_size: int | Sequence[int], stride: Any = None,
                   padding: Any = 0, dilation: Any = 1) -> Self:
        k, p, d = pair2(kernel_size), pair2(padding), pair2(dilation)
        st = k if stride is None else pair2(stride)
        return record(METHOD, ("Module", "MaxPool2d"), (self,),
                      lambda i, o, s: MaxPool2dOpIr(i[0], k, st, p, d, o))

    def avg_pool2d(self, kernel_size: int | Sequence[int], stride: Any = None,
                   padding: Any = 0, count_include_pad: bool = True) -> Self:
        k, p = pair2(kernel_size), pair2(padding)
        st, inc = (k if stride is None else pair2(stride)), bool(count_include_pad)
        return record(METHOD, ("Module", "AvgPool2d"), (self,),
                      lambda i, o, s: AvgPool2dOpIr(i[0], k, st, p, inc, o))

    def adaptive_avg_pool2d(self, output_size: int | Sequence[int]) -> Self:
        size = pair2(output_size)
        return record(METHOD, ("Module", "AdaptiveAvgPool2d"), (self,),
                      lambda i, o, s: AdaptiveAvgPool2dOpIr(i[0], size, o))

    def interpolate(self, output_size: int | Sequence[int], mode: str = "nearest") -> Self:
        size = pair2(output_size)
        return record(METHOD, ("Module", "Interpolate"), (self,),
                      lambda i, o, s: InterpolateOpIr(i[0], size, mode, o))
