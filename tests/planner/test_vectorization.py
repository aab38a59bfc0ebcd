"""Per-tensor vector sizes, block widths, the vector-axis policy and the layout helpers they
rest on (``refimpl.planner.launch.vectorization``, ``refimpl.planner.launch.layout``; notes §6;
burn's ``launch/layout.rs`` and ``vectorization/axis.rs`` tests, cubecl's ``matrix_batch_layout``
tests), on refimpl and on fastplan (the ``planner_impl`` fixture)."""

from __future__ import annotations

import pytest

from refimpl.devices import profile_named
from refimpl.planner.launch.layout import MatrixBatchLayout
from refimpl.planner.launch.vectorization import (
    BROADCASTED,
    VECTORIZATION_MAX,
    AxisDecision,
    Vect,
    VectorAxisAction,
    candidate_widths,
)

WGPU_F32 = candidate_widths(profile_named("metal"), 4)
CONTIGUOUS = (48 * 16 * 16, 16 * 16, 16, 1)
NHWC = (16 * 16 * 48, 1, 16 * 48, 48)


# --- candidate widths ---------------------------------------------------------------------------


@pytest.mark.parametrize("device, elem_bytes, widths", [
    ("metal", 4, (4, 2, 1)), ("metal", 2, (4, 2, 1)), ("metal", 8, (2, 1)),
    ("webgpu-default", 1, (4, 2, 1)), ("cuda", 2, (8, 4, 2, 1)), ("cuda", 1, (16, 8, 4, 2, 1)),
])
def test_vectorization_candidates_by_element_size(planner_impl, device, elem_bytes, widths):
    assert planner_impl.launch.vectorization.candidate_widths(profile_named(device), elem_bytes) == widths


def test_vectorization_element_size_is_the_smallest_one(planner_impl):
    assert planner_impl.launch.vectorization.smallest_elem_bytes([4, 8, 2]) == 2
    assert planner_impl.launch.vectorization.smallest_elem_bytes([]) == 8


# --- one tensor --------------------------------------------------------------------------------


@pytest.mark.parametrize("shape, strides, vect", [
    ((4, 3), (3, 1), Vect(1)),
    ((4, 6), (6, 1), Vect(2)),
    ((64, 64), (64, 1), Vect(4)),
    ((2, 4096), (4096, 1), Vect(4)),
    ((5,), (1,), Vect(1)),
    ((2, 1), (1, 1), BROADCASTED),  # the [2,1] operand of [2,8] + [2,1]
    ((8, 4), (1, 8), Vect(1)),  # transposed: stride 2 on the axis
    ((4, 8), (10, 1), Vect(2)),  # padded rows: 10 is not a multiple of 4
    ((4, 8), (0, 1), Vect(4)),  # expanded rows: stride 0 is ignored
])
def test_vectorization_input(planner_impl, shape, strides, vect):
    assert planner_impl.launch.vectorization.vectorization_input(shape, strides, len(shape) - 1, WGPU_F32) == vect


def test_vectorization_input_takes_the_smallest_other_stride_only(planner_impl):
    # the seed page's rule: strides [5, 2, 1] still give 2 (the row pitch 5 is not checked)
    assert planner_impl.launch.vectorization.vectorization_input((2, 2, 2), (5, 2, 1), 2, WGPU_F32) == Vect(2)


def test_vectorization_input_along_a_permuted_axis(planner_impl):
    assert planner_impl.launch.vectorization.vectorization_input((4, 8), (1, 4), 0, WGPU_F32) == Vect(4)


@pytest.mark.parametrize("shape, vect", [((4, 6), Vect(2)), ((4, 1), Vect(1)), ((8,), Vect(4))])
def test_vectorization_output(planner_impl, shape, vect):
    assert planner_impl.launch.vectorization.vectorization_output(shape, len(shape) - 1, WGPU_F32, VECTORIZATION_MAX) == vect


def test_vectorization_output_respects_the_cap(planner_impl):
    assert planner_impl.launch.vectorization.vectorization_output((4, 8), 1, WGPU_F32, 2) == Vect(2)


def test_vectorization_reshape_rules(planner_impl):
    # a single read with a size-1 axis is broadcast; the last dims must agree
    assert planner_impl.launch.vectorization.vectorization_reshape((4, 1), (4,), False, 1, WGPU_F32, 255) == BROADCASTED
    assert planner_impl.launch.vectorization.vectorization_reshape((2, 8), (16,), False, 1, WGPU_F32, 255) == Vect(1)
    assert planner_impl.launch.vectorization.vectorization_reshape((2, 2, 8), (4, 8), False, 2, WGPU_F32, 255) == Vect(4)
    assert planner_impl.launch.vectorization.vectorization_reshape((2, 2, 6), (4, 6), True, 2, WGPU_F32, 255) == Vect(2)
    assert planner_impl.launch.vectorization.vectorization_reshape((4, 8), (4, 8), False, 0, WGPU_F32, 255) == Vect(1)


def test_vectorization_swapped_rules(planner_impl):
    # swapping the vector axis away: the original needs stride 1 on the dim that becomes
    # the axis, and that stride then enters the smallest-other-stride check: always 1
    assert planner_impl.launch.vectorization.vectorization_swapped((4, 1), (4, 8), (8, 4), False, (0, 1), 1, WGPU_F32, 255) \
        == Vect(1)
    assert planner_impl.launch.vectorization.vectorization_swapped((1, 8), (4, 8), (8, 4), False, (0, 1), 1, WGPU_F32, 255) \
        == Vect(1)
    # swapping two other dims keeps the axis: [2, 3, 8] -> [3, 2, 8]
    assert planner_impl.launch.vectorization.vectorization_swapped((24, 8, 1), (3, 2, 8), (2, 3, 8), False, (0, 1), 2,
                                 WGPU_F32, 255) == Vect(4)
    assert planner_impl.launch.vectorization.vectorization_swapped((24, 8, 1), (3, 2, 8), (2, 3, 8), True, (0, 1), 2,
                                 WGPU_F32, 255) == Vect(4)
    # read twice (multi_reads): both the axis and the swapped dim need stride 1
    assert planner_impl.launch.vectorization.vectorization_swapped((32, 8, 1), (2, 8, 4), (2, 4, 8), True, (1, 2), 2,
                                 WGPU_F32, 255) == Vect(1)


def test_vectorization_multi_reads_merge(planner_impl):
    assert planner_impl.launch.vectorization.merge_multi_reads(None, Vect(4)) == Vect(4)
    assert planner_impl.launch.vectorization.merge_multi_reads(BROADCASTED, Vect(4)) == BROADCASTED
    assert planner_impl.launch.vectorization.merge_multi_reads(Vect(4), BROADCASTED) == Vect(1)
    assert planner_impl.launch.vectorization.merge_multi_reads(Vect(4), Vect(2)) == Vect(1)
    assert planner_impl.launch.vectorization.merge_multi_reads(Vect(2), Vect(2)) == Vect(2)


def test_vectorization_block_width_is_the_maximum_under_the_cap(planner_impl):
    assert planner_impl.launch.vectorization.block_width([(Vect(1), False), (Vect(4), True), (BROADCASTED, False)], 255) == 4
    assert planner_impl.launch.vectorization.block_width([(Vect(4), False), (Vect(2), False)], 2) == 2
    assert planner_impl.launch.vectorization.block_width([], 255) == 0


# --- vector axis policy (axis.rs tests) ---------------------------------------------------------


def test_vector_axis_logical_order_asks_for_nothing(planner_impl):
    assert planner_impl.launch.vectorization.axis_action(None, 4, None) == AxisDecision(VectorAxisAction.Default)


def test_vector_axis_lines_up_refuses_and_merges(planner_impl):
    along = planner_impl.launch.vectorization.axis_action(1, 4, None)
    assert along == AxisDecision(VectorAxisAction.Along, 1)
    assert planner_impl.launch.vectorization.axis_action(3, 2, None).action is VectorAxisAction.Refuse  # rank too small
    assert planner_impl.launch.vectorization.axis_action(1, 4, 16).action is VectorAxisAction.Refuse  # written, stride != 1
    assert planner_impl.launch.vectorization.axis_action(1, 4, 1) == along
    refuse = AxisDecision(VectorAxisAction.Refuse)
    assert planner_impl.launch.vectorization.merge_axis_actions(along, AxisDecision(VectorAxisAction.Along, 2)) == refuse
    assert planner_impl.launch.vectorization.merge_axis_actions(refuse, refuse) == refuse
    assert planner_impl.launch.vectorization.merge_axis_actions(along, along) == along


# --- layout helpers (layout.rs tests) ----------------------------------------------------------


def test_layout_dim_order(planner_impl):
    assert planner_impl.launch.layout.dim_order((2, 48, 16, 16), CONTIGUOUS) == (0, 1, 2, 3)
    assert planner_impl.launch.layout.dim_order((2, 48, 16, 16), NHWC) == (0, 2, 3, 1)
    assert planner_impl.launch.layout.dim_order((4, 8), (0, 1)) is None  # broadcast
    assert planner_impl.launch.layout.dim_order((4, 8), (10, 1)) is None  # padded
    assert planner_impl.launch.layout.dim_order((4, 1, 8), (8, 1, 1)) == (0, 1, 2)  # size-1 dims ignored


def test_layout_permuted_innermost_axis(planner_impl):
    assert planner_impl.launch.layout.permuted_innermost_axis((2, 48, 16, 16), NHWC) == 1
    assert planner_impl.launch.layout.permuted_innermost_axis((2, 48, 16, 16), CONTIGUOUS) is None
    assert planner_impl.launch.layout.permuted_innermost_axis((1, 2, 2), (1, 2, 1)) == 2  # a degenerate dim is skipped


def test_layout_strides_for_inverts_dim_order(planner_impl):
    assert planner_impl.launch.layout.strides_for((2, 48, 16, 16), (0, 2, 3, 1)) == NHWC
    assert planner_impl.launch.layout.strides_for((4, 8), (1, 0)) == (1, 4)


def test_layout_density_and_contiguity(planner_impl):
    assert planner_impl.launch.layout.is_dense((4, 8), (1, 4)) and not planner_impl.launch.layout.is_contiguous((4, 8), (1, 4))
    assert not planner_impl.launch.layout.is_dense((4, 8), (10, 1))
    assert planner_impl.launch.layout.is_contiguous((4, 8), planner_impl.launch.layout.contiguous_strides((4, 8)))
    assert planner_impl.launch.layout.contiguous_strides((2, 3, 4)) == (12, 4, 1)


def test_layout_unsqueezed_uses_numel_strides(planner_impl):
    assert planner_impl.launch.layout.unsqueezed((4,), (1,), 3) == ((1, 1, 4), (4, 4, 1))
    assert planner_impl.launch.layout.unsqueezed((2, 2), (2, 1), 2) == ((2, 2), (2, 1))


@pytest.mark.parametrize("shape, strides, new, kind, result", [
    ((4, 6), (6, 1), (24,), "UpdateStrides", (1,)),
    ((4, 6), (1, 4), (24,), "Recompute", ()),
    ((4, 6), (1, 4), (4, 6), "NoChange", (1, 4)),
    ((4, 6), (1, 4), (1, 4, 6), "UpdateStrides", (24, 1, 4)),  # batch dim added
    ((4, 8), (10, 1), (4, 2, 4), "UpdateStrides", (10, 4, 1)),  # split the last dim
    ((26, 1), (1, 0), (26, 1, 1), "UpdateStrides", (1, 1, 1)),  # unit dims don't anchor
    ((4, 8), (10, 1), (32,), "Recompute", ()),
])
def test_layout_reshape_action(planner_impl, shape, strides, new, kind, result):
    action = planner_impl.launch.layout.reshape_action(shape, strides, new)
    assert (action.kind, action.strides) == (kind, result)


def test_layout_relayout_strides_to_nhwc(planner_impl):
    strides, changed = planner_impl.launch.layout.relayout_strides(CONTIGUOUS, (2, 48, 16, 16), (0, 3, 1, 2))
    assert changed and strides == NHWC
    assert planner_impl.launch.layout.relayout_strides(NHWC, (2, 48, 16, 16), (0, 3, 1, 2)) == (NHWC, False)


@pytest.mark.parametrize("strides, layout", [
    ((8, 4, 2, 1), MatrixBatchLayout.Contiguous),
    ((1,), MatrixBatchLayout.Contiguous),
    ((8, 4, 1, 2), MatrixBatchLayout.MildlyPermutedTransposed),
    ((4, 8, 2, 1), MatrixBatchLayout.MildlyPermuted),
    ((4, 8, 1, 2), MatrixBatchLayout.MildlyPermutedTransposed),
    ((8, 2, 4, 1), MatrixBatchLayout.HighlyPermuted),
    ((1, 4, 2, 8), MatrixBatchLayout.HighlyPermuted),
    ((0, 0, 1), MatrixBatchLayout.HighlyPermuted),
    ((0, 1), MatrixBatchLayout.HighlyPermuted),
    ((1, 0), MatrixBatchLayout.HighlyPermuted),
    ((0, 4, 1), MatrixBatchLayout.MildlyPermuted),
    ((0, 0, 4, 1), MatrixBatchLayout.MildlyPermuted),
])
def test_layout_matrix_batch_layout(planner_impl, strides, layout):
    assert planner_impl.launch.layout.matrix_batch_layout(strides) is layout
