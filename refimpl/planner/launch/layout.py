"""Memory layouts: strides, dimension orders, density, and what a reshape can keep.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/launch/layout.rs`` (``dim_order``,
``permuted_innermost_axis``, ``strides_for``, ``is_contiguous_order``) and the helpers of
``crates/burn-std/src/tensor/mod.rs`` the launch planner and burn-cubecl's view ops use
(``contiguous_strides``, ``is_contiguous``, ``is_dense``, ``reshape_action``,
``split_strides``, ``broadcast_strides``), plus ``relayout_strides`` of
``engine/launch/output.rs`` and cubecl's ``matrix_batch_layout``.

Strides are in elements. "Contiguous" means exactly the row-major strides; "dense" means the
strides are a permutation of row-major ones (size-1 dims ignored), so a permuted tensor is
dense and a padded one is not.

>>> dim_order((2, 48, 16, 16), (16 * 16 * 48, 1, 16 * 48, 48))
(0, 2, 3, 1)
>>> permuted_innermost_axis((2, 48, 16, 16), (16 * 16 * 48, 1, 16 * 48, 48))
1
>>> strides_for((2, 48, 16, 16), (0, 2, 3, 1))
(12288, 1, 768, 48)
>>> reshape_action((4, 6), (6, 1), (2, 2, 6))
ReshapeAction(kind='UpdateStrides', strides=(12, 6, 1))
>>> reshape_action((4, 6), (1, 4), (24,)).kind
'Recompute'
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Sequence

from refimpl.data import contiguous_strides

__all__ = [
    "Shape",
    "Strides",
    "contiguous_strides",
    "is_contiguous",
    "is_dense",
    "dim_order",
    "is_contiguous_order",
    "permuted_innermost_axis",
    "strides_for",
    "swap_dims_transform",
    "unsqueezed",
    "ReshapeAction",
    "reshape_action",
    "relayout_strides",
    "MatrixBatchLayout",
    "matrix_batch_layout",
]

Shape = tuple[int, ...]
Strides = tuple[int, ...]


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Exactly the row-major strides (size-1 dims included)."""
    return tuple(strides) == contiguous_strides(shape)


def is_dense(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """The tensor fills its buffer without gaps in some dim order (size-1 dims ignored)."""
    if len(shape) != len(strides):
        return False
    dims = sorted(((s, d) for d, s in zip(shape, strides) if d > 1), key=lambda p: p[0])
    expected = 1
    for stride, dim in dims:
        if stride != expected:
            return False
        expected *= dim
    return True


def dim_order(shape: Sequence[int], strides: Sequence[int]) -> Shape | None:
    """Dims outermost first (descending stride, ties by index) for a dense tensor, else
    ``None``. Size-1 dims keep a place in the order but are skipped by the density check."""
    rank = len(shape)
    if rank != len(strides):
        return None
    order = sorted(range(rank), key=lambda axis: (-strides[axis], axis))
    expected = 1
    for axis in reversed(order):
        if shape[axis] == 1:
            continue
        if strides[axis] != expected:
            return None
        expected *= shape[axis]
    return tuple(order)


def is_contiguous_order(order: Sequence[int]) -> bool:
    """``order`` is ``0, 1, .., rank-1``."""
    return all(pos == axis for pos, axis in enumerate(order))


def permuted_innermost_axis(shape: Sequence[int], strides: Sequence[int]) -> int | None:
    """The innermost non-degenerate dim of a dense tensor laid out in a permuted order; ``None``
    when the tensor is in logical order, not dense, or has no dim of size > 1."""
    order = dim_order(shape, strides)
    if order is None or is_contiguous_order(order):
        return None
    for axis in reversed(order):
        if shape[axis] > 1:
            return axis
    return None


def strides_for(shape: Sequence[int], order: Sequence[int]) -> Strides:
    """The strides of ``shape`` laid out densely in ``order`` (outermost first)."""
    strides = [0] * len(shape)
    current = 1
    for axis in reversed(order):
        strides[axis] = current
        current *= shape[axis]
    return tuple(strides)


def swap_dims_transform(i: int, dims: tuple[int, int]) -> int:
    """Where dim ``i`` of a swapped view lives in its original."""
    if i == dims[0]:
        return dims[1]
    if i == dims[1]:
        return dims[0]
    return i


def unsqueezed(shape: Sequence[int], strides: Sequence[int], rank: int) -> tuple[Shape, Strides]:
    """Leading size-1 dims up to ``rank``, each with stride ``numel`` (burn's InputPlanner)."""
    missing = rank - len(shape)
    if missing <= 0:
        return tuple(shape), tuple(strides)
    numel = 1
    for d in shape:
        numel *= d
    return (1,) * missing + tuple(shape), (numel,) * missing + tuple(strides)


# --- reshape (burn-std ``reshape_analysis`` / ``ReshapeAction``) ------------------------------


class _Analysis(enum.Enum):
    IsContiguous = "IsContiguous"
    HighlyPermuted = "HighlyPermuted"
    Broadcasted = "Broadcasted"
    Split = "Split"
    SmallerRank = "SmallerRank"
    NoChange = "NoChange"


@dataclass(frozen=True, slots=True)
class ReshapeAction:
    """``kind`` is ``"UpdateStrides"`` (a metadata view with ``strides``), ``"NoChange"`` or
    ``"Recompute"`` (a copy is needed)."""

    kind: str
    strides: Strides = ()


def _split_group_ok(shape: Sequence[int], new: Sequence[int]) -> bool:
    dim_prod, old_idx = 1, 0
    for dim in new:
        dim_prod *= dim
        if dim == 1:
            continue
        if old_idx >= len(shape):
            return False
        if dim_prod == shape[old_idx]:
            dim_prod, old_idx = 1, old_idx + 1
        elif dim_prod > shape[old_idx]:
            return False
    return True


def _analysis(shape: Shape, strides: Strides, new: Shape) -> _Analysis:
    if is_contiguous(shape, strides):
        return _Analysis.IsContiguous
    if len(new) < len(shape):
        return _Analysis.SmallerRank
    batch = len(new) - len(shape)
    if batch == 0:
        return _Analysis.NoChange if shape == new else _Analysis.HighlyPermuted
    if shape == new[batch:] and all(d == 1 for d in new[:batch]):
        return _Analysis.Broadcasted
    return _Analysis.Split if _split_group_ok(shape, new) else _Analysis.HighlyPermuted


def _split_strides(shape: Shape, strides: Strides, new: Shape) -> Strides:
    result = [1] * len(new)

    def skip_unit(idx: int) -> int:
        while idx > 0 and shape[idx] == 1:
            idx -= 1
        return idx

    old_idx = skip_unit(len(shape) - 1)
    current, dim_prod = strides[old_idx], 1
    for i in range(len(new) - 1, -1, -1):
        dim = new[i]
        dim_prod *= dim
        result[i] = current
        if dim == 1:
            continue
        if dim_prod == shape[old_idx]:
            old_idx = skip_unit(max(old_idx - 1, 0))
            current, dim_prod = strides[old_idx], 1
        else:
            current *= dim
    return tuple(result)


def reshape_action(shape: Sequence[int], strides: Sequence[int],
                   new_shape: Sequence[int]) -> ReshapeAction:
    """What a reshape of a tensor laid out with ``strides`` needs (burn-std
    ``reshape_action``)."""
    shape, strides, new = tuple(shape), tuple(strides), tuple(new_shape)
    analysis = _analysis(shape, strides, new)
    if analysis is _Analysis.IsContiguous:
        return ReshapeAction("UpdateStrides", contiguous_strides(new))
    if analysis is _Analysis.NoChange:
        return ReshapeAction("NoChange", strides)
    if analysis is _Analysis.Broadcasted:
        numel = 1
        for d in shape:
            numel *= d
        batch = len(new) - len(shape)
        return ReshapeAction("UpdateStrides", (numel,) * batch + strides)
    if analysis is _Analysis.Split:
        return ReshapeAction("UpdateStrides", _split_strides(shape, strides, new))
    return ReshapeAction("Recompute")


def relayout_strides(strides: Sequence[int], shape: Sequence[int],
                     stride_relayout: Sequence[int]) -> tuple[Strides, bool]:
    """Strides with dim ``d`` moved to memory position ``stride_relayout[d]`` (NHWC outputs),
    and whether anything changed (burn ``relayout_strides``)."""
    rank = len(shape)
    result = list(strides)
    if rank < 2 or len(stride_relayout) != rank:
        return tuple(result), False
    by_target: list[int | None] = [None] * rank
    for original in range(rank):
        target = stride_relayout[original]
        if target >= rank or by_target[target] is not None:
            return tuple(result), False
        by_target[target] = original
    current, changed = 1, False
    for original in reversed(by_target):
        if original is None:
            continue
        if result[original] != current:
            result[original] = current
            changed = True
        current *= shape[original]
    return tuple(result), changed


class MatrixBatchLayout(enum.Enum):
    """cubecl ``MatrixBatchLayout`` (the ``MildlyPermuted`` flags folded into variants)."""

    Contiguous = "Contiguous"
    MildlyPermuted = "MildlyPermuted"
    MildlyPermutedTransposed = "MildlyPermutedTransposed"
    HighlyPermuted = "HighlyPermuted"


def matrix_batch_layout(strides: Sequence[int]) -> MatrixBatchLayout:
    """How a batch of matrices is laid out (cubecl ``matrix_batch_layout``)."""
    rank = len(strides)
    if rank <= 1:
        return MatrixBatchLayout.Contiguous
    row, col = strides[rank - 2], strides[rank - 1]
    if row == 0 or col == 0:
        return MatrixBatchLayout.HighlyPermuted
    transposed, batch_swap, previous = row < col, False, row
    for d in range(rank - 2):
        current = strides[rank - 3 - d]
        if current < row or current < col:
            if current != 0:
                return MatrixBatchLayout.HighlyPermuted
            batch_swap = True
        if current < previous:
            batch_swap = True
        previous = current
    if transposed:
        return MatrixBatchLayout.MildlyPermutedTransposed
    return MatrixBatchLayout.MildlyPermuted if batch_swap else MatrixBatchLayout.Contiguous
