"""Vector widths: candidate sizes, per-tensor vector sizes, block widths, the vector axis.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/launch/vectorization/base.rs``
(``Vect``, ``vectorization_input``, ``vectorization_output``, ``vectorization_reshape``,
``vectorization_swapped``, ``multi_reads_vectorization_update``), ``vectorization/planner.rs``
(the element size the candidates come from, ``apply_vectorization_block`` and the
``VectorizationSetting`` caps) and ``vectorization/axis.rs`` (``VectorAxisAction``,
``VectorAxisPolicy``, ``block_axis``); cubecl's ``io_optimized_vector_sizes`` via the device
profile. Notes §6.1–§6.3, §6.8.

Facts (wgpu, f32): ``[4, 6]`` contiguous → 2; ``[64, 64]`` → 4; last dim 3 → 1; a transposed
input (stride ≠ 1 on the axis) → 1 while the block keeps the width its other tensors allow;
a size-1 axis → ``Broadcasted`` (vector size 1, lanes replicated, no vote on the width).

>>> from refimpl.devices import profile_named
>>> sizes = candidate_widths(profile_named("metal"), 4)
>>> sizes
(4, 2, 1)
>>> vectorization_input((4, 6), (6, 1), 1, sizes), vectorization_input((4, 3), (3, 1), 1, sizes)
(Vect(size=2, broadcast=False), Vect(size=1, broadcast=False))
>>> vectorization_input((2, 1), (1, 1), 1, sizes)
Vect(size=1, broadcast=True)
>>> block_width([(Vect(4), False), (Vect(1, True), False)], VECTORIZATION_MAX)
4
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable, Sequence

from refimpl.planner.launch.layout import permuted_innermost_axis, swap_dims_transform

__all__ = [
    "VECTORIZATION_MAX",
    "Vect",
    "BROADCASTED",
    "candidate_widths",
    "smallest_elem_bytes",
    "vectorization_input",
    "vectorization_output",
    "vectorization_reshape",
    "vectorization_swapped",
    "merge_multi_reads",
    "block_width",
    "VectorAxisAction",
    "AxisDecision",
    "merge_axis_actions",
    "axis_action",
    "block_axis",
]

VECTORIZATION_MAX = 255  # burn: ``u8::MAX``, the cap of an ``Activated`` block


@dataclass(frozen=True, slots=True)
class Vect:
    """burn ``Vect``: ``Aligned(size)`` or ``Broadcasted`` (``size`` 1, ``broadcast`` true)."""

    size: int
    broadcast: bool = False


BROADCASTED = Vect(1, True)


def candidate_widths(device: object, elem_bytes: int) -> tuple[int, ...]:
    """Candidate vector sizes for ``elem_bytes``-byte elements, widest first."""
    return device.vector_sizes(elem_bytes)  # type: ignore[attr-defined]


def smallest_elem_bytes(sizes: Iterable[int]) -> int:
    """The element size candidates are computed from: the smallest storage size among the
    trace's inputs and global outputs (start value 8, as burn's ``u64``)."""
    smallest = 8
    for size in sizes:
        smallest = min(smallest, size)
    return smallest


def _first(sizes: Sequence[int], fits) -> Vect:
    for s in sizes:
        if fits(s):
            return Vect(s)
    return Vect(1)


def _next_stride(strides: Sequence[int], axis: int) -> int:
    others = [s for i, s in enumerate(strides) if i != axis and s != 0]
    return min(others) if others else 0


def vectorization_input(shape: Sequence[int], strides: Sequence[int], axis: int,
                        sizes: Sequence[int]) -> Vect:
    """A read tensor: size-1 axis → broadcast; stride ≠ 1 on the axis → 1; else the widest
    size dividing the axis length and the smallest other non-zero stride."""
    shape_axis = shape[axis]
    if shape_axis == 1:
        return BROADCASTED
    if strides[axis] != 1:
        return Vect(1)
    next_stride = _next_stride(strides, axis)
    return _first(sizes, lambda s: shape_axis % s == 0 and next_stride % s == 0)


def vectorization_output(shape: Sequence[int], axis: int, sizes: Sequence[int],
                         max_size: int) -> Vect:
    """A written tensor (shape only): the widest size dividing the axis length."""
    return _first(sizes, lambda s: shape[axis] % s == 0 and s <= max_size)


def vectorization_reshape(reshaped: Sequence[int], original: Sequence[int], multi_reads: bool,
                          axis: int, sizes: Sequence[int], max_size: int) -> Vect:
    """A fused reshape view of ``original`` (shapes only)."""
    reshape_axis = reshaped[axis]
    if not multi_reads and reshape_axis == 1:
        return BROADCASTED
    if axis != len(reshaped) - 1:
        return Vect(1)
    original_axis = original[-1]
    if original_axis != reshape_axis:
        return Vect(1)
    if multi_reads:
        return _first(sizes, lambda s: reshape_axis % s == 0 and original_axis % s == 0
                      and s <= max_size)
    return _first(sizes, lambda s: reshape_axis % s == 0 and s <= max_size)


def vectorization_swapped(strides: Sequence[int], swapped: Sequence[int],
                          original: Sequence[int], multi_reads: bool, dims: tuple[int, int],
                          axis: int, sizes: Sequence[int], max_size: int) -> Vect:
    """A fused swap_dims view read from ``original``'s buffer (``strides`` are the
    original's)."""
    swapped_axis, shape_axis = swapped[axis], original[axis]
    dim_index = swap_dims_transform(axis, dims)
    if multi_reads and (strides[axis] != 1 or strides[dim_index] != 1):
        return Vect(1)
    if not multi_reads and strides[dim_index] != 1:
        return Vect(1)
    if not multi_reads and swapped_axis == 1:
        return BROADCASTED
    next_stride = _next_stride(strides, axis)
    if multi_reads:
        return _first(sizes, lambda s: swapped_axis % s == 0 and next_stride % s == 0
                      and s <= max_size)
    return _first(sizes, lambda s: swapped_axis % s == 0 and shape_axis % s == 0
                  and next_stride % s == 0 and s <= max_size)


def merge_multi_reads(existing: Vect | None, new: Vect) -> Vect:
    """A view's vector size merged into its original's entry: a broadcast entry stays; an
    aligned entry becomes 1 against a broadcast view or a different size."""
    if existing is None:
        return new
    if existing.broadcast:
        return existing
    if new.broadcast or new.size != existing.size:
        return Vect(1)
    return existing


def block_width(items: Iterable[tuple[Vect, bool]], max_size: int) -> int:
    """burn ``apply_vectorization_block``'s width: the maximum over the block's items
    (``(vect, is_output)``), each item above ``max_size`` counting as 1. 0 when empty."""
    width = 0
    for vect, _ in items:
        width = max(width, vect.size if vect.size <= max_size else 1)
    return width


# --- vector axis policy (axis.rs) -------------------------------------------------------------


class VectorAxisAction(enum.Enum):
    """What one tensor's vector axis is: its last dim, ``Along`` a block's axis, or refused."""

    Default = "Default"
    Along = "Along"
    Refuse = "Refuse"


@dataclass(frozen=True, slots=True)
class AxisDecision:
    action: VectorAxisAction
    axis: int = 0


def merge_axis_actions(current: AxisDecision, other: AxisDecision) -> AxisDecision:
    """Two blocks touching the same tensor must agree, or the tensor is refused."""
    return current if current == other else AxisDecision(VectorAxisAction.Refuse)


def axis_action(block_axis_value: int | None, rank: int,
                stride_on_axis: int | None) -> AxisDecision:
    """``VectorAxisPolicy::LineUpWithBlock`` for one tensor of one block."""
    if block_axis_value is None:
        return AxisDecision(VectorAxisAction.Default)
    if block_axis_value >= rank:
        return AxisDecision(VectorAxisAction.Refuse)
    if stride_on_axis is not None and stride_on_axis != 1:
        return AxisDecision(VectorAxisAction.Refuse)
    return AxisDecision(VectorAxisAction.Along, block_axis_value)


def block_axis(concrete_shape: Sequence[int] | None,
               concrete_strides: Sequence[int] | None) -> int | None:
    """The axis a block with a concrete reference iterates along when that reference is
    permuted; ``None`` for logical order or a virtual reference."""
    if concrete_shape is None or concrete_strides is None:
        return None
    return permuted_innermost_axis(concrete_shape, concrete_strides)
