"""Shape rules (refimpl.shapes): every ShapeRule has a rule; each rule's result and errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl.dtypes import DType
from refimpl.errors import AxisError, FieldTypeError, ShapeError
from refimpl.ir import OperationIr, TensorIr, TensorStatus
from refimpl.ops import OPS, ShapeRule, op_named
from refimpl.shapes import SHAPE_RULES, broadcast_shapes, expected_shape

F32, I32, BOOL = DType.F32, DType.I32, DType.BOOL


def t(i, shape, dtype=F32):
    return TensorIr(i, tuple(shape), dtype, TensorStatus.ReadOnly)


def out(shape, dtype=F32):
    return TensorIr(99, tuple(shape), dtype, TensorStatus.NotInit)


def mk(name, **fields):
    op = op_named(name)
    return OperationIr(op, op.struct(**fields))


def shape_of(op, index=0):
    return expected_shape(op, index)


def raises(cls, op, field, index=3):
    with pytest.raises(cls) as info:
        expected_shape(op, index)
    assert type(info.value) is cls
    assert (info.value.op_index, info.value.field) == (index, field), str(info.value)
    assert info.value.op_name == op.name


# --- completeness ---------------------------------------------------------------------------


def test_shape_rules_cover_every_shape_rule():
    assert list(SHAPE_RULES) == list(ShapeRule)


def test_shape_rules_cover_every_op():
    assert all(op.shape in SHAPE_RULES for op in OPS)


def test_shapes_expected_shape_dispatches_on_the_op_rule():
    op = mk("NumericFloat.Add", lhs=t(0, (4, 1)), rhs=t(1, (1, 6)), out=out((4, 6)))
    assert expected_shape(op, 0) == SHAPE_RULES[ShapeRule.BROADCAST](op, 0) == (4, 6)


# --- broadcasting ---------------------------------------------------------------------------


def test_shapes_broadcast_size_one_dims_grow():
    assert broadcast_shapes((4, 1), (1, 6)) == (4, 6)
    assert broadcast_shapes((1, 0), (4, 1)) == (4, 0)
    assert broadcast_shapes((4, 6), (4, 5)) is None
    assert broadcast_shapes((6,), (4, 6)) is None  # burn: equal ranks only


@given(st.lists(st.tuples(st.sampled_from([0, 1, 2, 3]), st.sampled_from([0, 1, 2, 3])),
                min_size=1, max_size=4))
def test_shapes_broadcast_matches_numpy_for_equal_ranks(pairs):
    a, b = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    try:
        want = np.broadcast_shapes(a, b)
    except ValueError:
        want = None
    assert broadcast_shapes(a, b) == want


def test_shapes_binary_rank_and_dim_errors_name_rhs():
    raises(ShapeError, mk("NumericFloat.Add", lhs=t(0, (4, 6)), rhs=t(1, (1, 4, 6)),
                          out=out((4, 6))), "rhs.shape")
    raises(ShapeError, mk("NumericFloat.Mul", lhs=t(0, (4, 6)), rhs=t(1, (4, 5)),
                          out=out((4, 6))), "rhs.shape")


def test_shapes_same_and_scalar_ops_keep_the_input_shape():
    assert shape_of(mk("Float.Exp", input=t(0, (2, 3)), out=out((2, 3)))) == (2, 3)
    assert shape_of(mk("NumericInt.AddScalar", lhs=t(0, (5,), I32), rhs=1,
                       out=out((5,), I32))) == (5,)
    assert shape_of(mk("NumericFloat.Clamp", tensor=t(0, (3, 1)), min=0.0, max=1.0,
                       out=out((3, 1)))) == (3, 1)


# --- reductions -----------------------------------------------------------------------------


def test_shapes_reduce_dim_keeps_axis_with_size_one():
    op = mk("NumericFloat.SumDim", input=t(0, (4, 6, 2)), out=out((4, 1, 2)), axis=1)
    assert shape_of(op) == (4, 1, 2)
    raises(AxisError, mk("NumericFloat.ArgMax", input=t(0, (4, 6)), out=out((4, 1), I32),
                         axis=2), "axis")
    raises(AxisError, mk("NumericFloat.MaxDim", input=t(0, (4, 6)), out=out((4, 1)),
                         axis=-1), "axis")


def test_shapes_full_reduction_gives_one():
    assert shape_of(mk("NumericFloat.Sum", input=t(0, (4, 6)), out=out((1,)))) == (1,)
    assert shape_of(mk("BaseBool.Any", input=t(0, (3,), BOOL), out=out((1,), BOOL))) == (1,)


# --- views and movement ---------------------------------------------------------------------


def test_shapes_reshape_keeps_numel():
    assert shape_of(mk("BaseFloat.Reshape", input=t(0, (4, 6)), out=out((2, 12)))) == (2, 12)
    raises(ShapeError, mk("BaseFloat.Reshape", input=t(0, (4, 6)), out=out((5, 5))),
           "out.shape")


def test_shapes_expand_grows_size_one_dims_and_rank_on_the_left():
    assert shape_of(mk("BaseFloat.Expand", input=t(0, (4, 1)), out=out((2, 4, 6)))) == (2, 4, 6)
    raises(ShapeError, mk("BaseFloat.Expand", input=t(0, (4, 2)), out=out((4, 6))), "out.shape")
    raises(ShapeError, mk("BaseFloat.Expand", input=t(0, (1, 4, 1)), out=out((4, 6))),
           "out.shape")


def test_shapes_swap_dims_and_permute():
    assert shape_of(mk("BaseFloat.SwapDims", input=t(0, (2, 3, 4)), out=out((4, 3, 2)),
                       dim1=0, dim2=2)) == (4, 3, 2)
    raises(AxisError, mk("BaseFloat.SwapDims", input=t(0, (2, 3)), out=out((3, 2)), dim1=2,
                         dim2=0), "dim1")
    assert shape_of(mk("BaseInt.Permute", input=t(0, (2, 3, 4), I32), out=out((4, 2, 3), I32),
                       axes=(2, 0, 1))) == (4, 2, 3)
    raises(AxisError, mk("BaseFloat.Permute", input=t(0, (2, 3, 4)), out=out((3, 2)),
                         axes=(1, 0)), "axes")
    raises(AxisError, mk("BaseFloat.Permute", input=t(0, (2, 3)), out=out((3, 2)),
                         axes=(1, 2)), "axes")


def test_shapes_flip_checks_axes():
    assert shape_of(mk("BaseFloat.Flip", input=t(0, (2, 3)), out=out((2, 3)), axes=(1,))) == (
        2, 3)
    raises(AxisError, mk("BaseFloat.Flip", input=t(0, (2, 3)), out=out((2, 3)), axes=(1, 1)),
           "axes")
    raises(AxisError, mk("BaseFloat.Flip", input=t(0, (2, 3)), out=out((2, 3)), axes=(2,)),
           "axes")


def test_shapes_slice_ranges_on_leading_dims():
    op = mk("BaseFloat.Slice", tensor=t(0, (4, 6, 2)), ranges=((1, 3), (0, 0)),
            out=out((2, 0, 2)))
    assert shape_of(op) == (2, 0, 2)
    raises(ShapeError, mk("BaseFloat.Slice", tensor=t(0, (4, 6)), ranges=((3, 2),),
                          out=out((0, 6))), "ranges.0")
    raises(ShapeError, mk("BaseFloat.Slice", tensor=t(0, (4, 6)), ranges=((0, 4), (0, 7)),
                          out=out((4, 7))), "ranges.1")
    raises(AxisError, mk("BaseFloat.Slice", tensor=t(0, (4,)), ranges=((0, 1), (0, 1)),
                         out=out((1,))), "ranges")


# --- indexed --------------------------------------------------------------------------------


def test_shapes_cat_sums_along_dim():
    op = mk("BaseFloat.Cat", tensors=(t(0, (4, 6)), t(1, (4, 2)), t(2, (4, 1))), dim=1,
            out=out((4, 9)))
    assert shape_of(op) == (4, 9)
    raises(ShapeError, mk("BaseFloat.Cat", tensors=(t(0, (4, 6)), t(1, (3, 6))), dim=1,
                          out=out((4, 12))), "tensors.1.shape")
    raises(ShapeError, mk("BaseFloat.Cat", tensors=(t(0, (4, 6)), t(1, (4, 6, 1))), dim=0,
                          out=out((8, 6))), "tensors.1.shape")
    raises(AxisError, mk("BaseFloat.Cat", tensors=(t(0, (4, 6)),), dim=2, out=out((4, 6))),
           "dim")


def test_shapes_gather_gives_the_indices_shape():
    op = mk("BaseFloat.Gather", tensor=t(0, (4, 6)), dim=1, indices=t(1, (4, 3), I32),
            out=out((4, 3)))
    assert shape_of(op) == (4, 3)
    raises(ShapeError, mk("BaseFloat.Gather", tensor=t(0, (4, 6)), dim=1,
                          indices=t(1, (12,), I32), out=out((12,))), "indices.shape")
    raises(ShapeError, mk("BaseFloat.Gather", tensor=t(0, (4, 6)), dim=1,
                          indices=t(1, (2, 3), I32), out=out((2, 3))), "indices.shape")


def test_shapes_select_sets_dim_to_the_number_of_indices():
    op = mk("BaseInt.Select", tensor=t(0, (4, 6), I32), dim=1, indices=t(1, (3,), I32),
            out=out((4, 3), I32))
    assert shape_of(op) == (4, 3)
    raises(AxisError, mk("BaseFloat.Select", tensor=t(0, (4, 6)), dim=2,
                         indices=t(1, (3,), I32), out=out((4, 3))), "dim")


def test_shapes_mask_broadcasts_tensor_mask_and_value():
    op = mk("BaseFloat.MaskWhere", tensor=t(0, (4, 1)), mask=t(1, (4, 6), BOOL),
            value=t(2, (1, 6)), out=out((4, 6)))
    assert shape_of(op) == (4, 6)
    raises(ShapeError, mk("BaseFloat.MaskWhere", tensor=t(0, (4, 6)), mask=t(1, (4, 6), BOOL),
                          value=t(2, (4, 5)), out=out((4, 6))), "value.shape")
    raises(ShapeError, mk("BaseFloat.MaskFill", tensor=t(0, (4, 6)), mask=t(1, (6,), BOOL),
                          value=0.0, out=out((4, 6))), "mask.shape")


# --- matmul ---------------------------------------------------------------------------------


def test_shapes_matmul_broadcasts_batch_dims():
    op = mk("Float.Matmul", lhs=t(0, (2, 1, 4, 5)), rhs=t(1, (1, 3, 5, 7)),
            out=out((2, 3, 4, 7)))
    assert shape_of(op) == (2, 3, 4, 7)
    assert shape_of(op) == np.matmul(np.zeros((2, 1, 4, 5)), np.zeros((1, 3, 5, 7))).shape


def test_shapes_matmul_errors():
    raises(ShapeError, mk("Float.Matmul", lhs=t(0, (5,)), rhs=t(1, (5, 2)), out=out((2,))),
           "lhs.shape")
    raises(ShapeError, mk("Float.Matmul", lhs=t(0, (4, 5)), rhs=t(1, (1, 5, 2)),
                          out=out((1, 4, 2))), "rhs.shape")
    raises(ShapeError, mk("Float.Matmul", lhs=t(0, (4, 5)), rhs=t(1, (4, 2)), out=out((4, 2))),
           "rhs.shape")
    raises(ShapeError, mk("Int.Matmul", lhs=t(0, (2, 4, 5), I32), rhs=t(1, (3, 5, 2), I32),
                          out=out((3, 4, 2), I32)), "rhs.shape")


# --- modules --------------------------------------------------------------------------------


def _max_pool(shape, k, s, p, d):
    return mk("Module.MaxPool2d", x=t(0, shape), kernel_size=k, stride=s, padding=p,
              dilation=d, out=out((1,)))


def test_shapes_pool2d_standard_formula():
    assert shape_of(_max_pool((1, 3, 32, 32), (3, 3), (2, 2), (1, 1), (1, 1))) == (1, 3, 16, 16)
    assert shape_of(_max_pool((1, 3, 32, 32), (3, 3), (2, 2), (1, 1), (2, 2))) == (1, 3, 15, 15)
    assert shape_of(_max_pool((2, 4, 7, 5), (2, 3), (1, 2), (0, 1), (1, 1))) == (2, 4, 6, 3)
    avg = mk("Module.AvgPool2d", x=t(0, (1, 3, 32, 32)), kernel_size=(2, 2), stride=(2, 2),
             padding=(0, 0), count_include_pad=True, out=out((1,)))
    assert shape_of(avg) == (1, 3, 16, 16)


def test_shapes_pool2d_formula_counts_windows():
    """The formula equals the number of dilated windows that fit the padded input."""
    for size, k, s, p, d in ((9, 3, 2, 1, 2), (8, 2, 3, 0, 1), (5, 5, 1, 2, 1)):
        padded = size + 2 * p
        windows = sum(1 for start in range(0, padded, s) if start + d * (k - 1) < padded)
        op = _max_pool((1, 1, size, 1), (k, 1), (s, 1), (p, 0), (d, 1))
        assert shape_of(op)[2] == windows


def test_shapes_pool2d_errors():
    raises(ShapeError, _max_pool((3, 32, 32), (2, 2), (1, 1), (0, 0), (1, 1)), "x.shape")
    raises(ShapeError, _max_pool((1, 3, 2, 2), (3, 3), (1, 1), (0, 0), (1, 1)), "kernel_size")
    raises(ShapeError, _max_pool((1, 3, 8, 8), (2, 2), (0, 1), (0, 0), (1, 1)), "stride")
    raises(ShapeError, _max_pool((1, 3, 8, 8), (2,), (1, 1), (0, 0), (1, 1)), "kernel_size")
    raises(ShapeError, _max_pool((1, 3, 8, 8), (2, 2), (1, 1), (0, -1), (1, 1)), "padding")
    raises(ShapeError, _max_pool((1, 3, 8, 8), (2, 2), (1, 1), (0, 0), (0, 1)), "dilation")


def test_shapes_adaptive_pool_and_interpolate_use_output_size():
    op = mk("Module.AdaptiveAvgPool2d", x=t(0, (2, 3, 9, 9)), output_size=(7, 7),
            out=out((2, 3, 7, 7)))
    assert shape_of(op) == (2, 3, 7, 7)
    for mode in ("nearest", "bilinear"):
        op = mk("Module.Interpolate", x=t(0, (1, 3, 4, 4)), output_size=(8, 6), mode=mode,
                out=out((1, 3, 8, 6)))
        assert shape_of(op) == (1, 3, 8, 6)
    raises(FieldTypeError, mk("Module.Interpolate", x=t(0, (1, 3, 4, 4)), output_size=(8, 6),
                              mode="bicubic", out=out((1, 3, 8, 6))), "mode")
    raises(ShapeError, mk("Module.AdaptiveAvgPool2d", x=t(0, (2, 3, 9, 9)), output_size=(7,),
                          out=out((2, 3, 7))), "output_size")


# --- creation and drop ----------------------------------------------------------------------


def test_shapes_creation_takes_out_and_drop_has_none():
    assert shape_of(mk("NumericFloat.Full", out=out((3, 2)), value=1.5)) == (3, 2)
    assert shape_of(mk("BaseInt.Zeros", out=out((0, 2), I32))) == (0, 2)
    assert shape_of(mk("Init", out=out((5,)))) == (5,)
    assert shape_of(mk("Drop", tensor=t(0, (4, 6)))) is None
