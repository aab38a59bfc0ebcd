"""Shared helpers of the refimpl tests: reading what a frontend session recorded, and the
bad-input catalogue of malformed streams (SPEC §8)."""

from __future__ import annotations

import copy
import json

import numpy as np
from hypothesis import strategies as st

from refimpl import errors
from refimpl.dtypes import DType
from refimpl.errors import AxisError, DTypeError, ShapeError
from refimpl.frontend import Session, Tensor, cat
from refimpl.ir import OperationIr, TensorIr, TensorStatus
from refimpl.ops import op_named
from refimpl.stream import InputSpec, Stream


def recorded_ops(s: Session) -> list[OperationIr]:
    """The session's ops so far (``Sync`` items left out)."""
    return [item for item in s.stream.items if isinstance(item, OperationIr)]


def input_uses(item: OperationIr) -> list[tuple[int, TensorStatus]]:
    """(id, status) of every tensor the op reads."""
    return [(t.id, t.status) for t in item.inputs()]


def item_names(s: Session) -> list[str]:
    """The name of every item so far, ``"Sync"`` for syncs."""
    return [item.name if isinstance(item, OperationIr) else "Sync" for item in s.stream.items]


# --- every entry point of the Tensor API ------------------------------------------------------

F32, I32, BOOL = DType.F32, DType.I32, DType.BOOL


def entry_point_others(s: Session) -> dict[str, Tensor]:
    """The other operands of ``ENTRY_POINTS``' calls, made on ``s``."""
    return {
        "f": s.random((4, 4), seed=50), "i": s.random((4, 4), I32, seed=51),
        "b": s.random((4, 4), BOOL, seed=52), "idx": s.tensor([[0, 1, 2, 3]] * 4),
        "row": s.tensor([2, 0]), "m": s.random((4, 4), seed=53),
    }


# Every entry point of the Tensor API, used by tests/refimpl/test_frontend_status.py and
# tests/fastplan/test_frontend_parity.py: (name, subject dtype, subject shape, call(make,
# others)); make() returns the subject.
ENTRY_POINTS = [
    ("add", F32, (4, 4), lambda m, o: m() + o["f"]),
    ("add_scalar", F32, (4, 4), lambda m, o: m() + 2.0),
    ("radd", F32, (4, 4), lambda m, o: 2.0 + m()),
    ("sub", F32, (4, 4), lambda m, o: m() - o["f"]),
    ("rsub", F32, (4, 4), lambda m, o: 2.0 - m()),
    ("mul", F32, (4, 4), lambda m, o: m() * o["f"]),
    ("rmul", F32, (4, 4), lambda m, o: 3 * m()),
    ("rmul_numpy_scalar", F32, (4, 4), lambda m, o: np.float32(3) * m()),
    ("div", F32, (4, 4), lambda m, o: m() / o["f"]),
    ("rtruediv", F32, (4, 4), lambda m, o: 1.0 / m()),
    ("rem", I32, (4, 4), lambda m, o: m() % 3),
    ("rem_tensor", F32, (4, 4), lambda m, o: m() % o["f"]),
    ("div_int", I32, (4, 4), lambda m, o: m() / 2),
    ("neg", F32, (4, 4), lambda m, o: -m()),
    ("abs_builtin", F32, (4, 4), lambda m, o: abs(m())),
    ("abs", I32, (4, 4), lambda m, o: m().abs()),
    ("clamp", F32, (4, 4), lambda m, o: m().clamp(-1.0, 1.0)),
    ("clamp_min", F32, (4, 4), lambda m, o: m().clamp_min(0.0)),
    ("clamp_max", I32, (4, 4), lambda m, o: m().clamp_max(2)),
    ("lt", F32, (4, 4), lambda m, o: m() < o["f"]),
    ("gt_scalar", F32, (4, 4), lambda m, o: m() > 0.5),
    ("le", I32, (4, 4), lambda m, o: m() <= o["i"]),
    ("ge_reflected", F32, (4, 4), lambda m, o: 0.5 <= m()),  # reflected: float <= Tensor
    ("equal", BOOL, (4, 4), lambda m, o: m().equal(o["b"])),
    ("not_equal", F32, (4, 4), lambda m, o: m().not_equal(0.0)),
    ("exp", F32, (4, 4), lambda m, o: m().exp()),
    ("log", F32, (4, 4), lambda m, o: m().log()),
    ("log1p", F32, (4, 4), lambda m, o: m().log1p()),
    ("sin", F32, (4, 4), lambda m, o: m().sin()),
    ("cos", F32, (4, 4), lambda m, o: m().cos()),
    ("tanh", F32, (4, 4), lambda m, o: m().tanh()),
    ("erf", F32, (4, 4), lambda m, o: m().erf()),
    ("sqrt", F32, (4, 4), lambda m, o: m().sqrt()),
    ("recip", F32, (4, 4), lambda m, o: m().recip()),
    ("tan", F32, (4, 4), lambda m, o: m().tan()),
    ("sign", F32, (4, 4), lambda m, o: m().sign()),
    ("sign_int", I32, (4, 4), lambda m, o: m().sign()),
    ("round", F32, (4, 4), lambda m, o: m().round()),
    ("floor", F32, (4, 4), lambda m, o: m().floor()),
    ("ceil", F32, (4, 4), lambda m, o: m().ceil()),
    ("is_nan", F32, (4, 4), lambda m, o: m().is_nan()),
    ("is_inf", F32, (4, 4), lambda m, o: m().is_inf()),
    ("powf", F32, (4, 4), lambda m, o: m().powf(o["f"])),
    ("powf_scalar", F32, (4, 4), lambda m, o: m().powf(2.0)),
    ("pow_operator", F32, (4, 4), lambda m, o: m() ** 2),
    ("matmul", F32, (4, 4), lambda m, o: m().matmul(o["f"])),
    ("matmul_operator", F32, (4, 4), lambda m, o: m() @ o["f"]),
    ("bitwise_and", I32, (4, 4), lambda m, o: m() & o["i"]),
    ("bitwise_or_scalar", I32, (4, 4), lambda m, o: m() | 5),
    ("bitwise_xor", I32, (4, 4), lambda m, o: m() ^ o["i"]),
    ("shift_left", I32, (4, 4), lambda m, o: m() << 1),
    ("shift_right", I32, (4, 4), lambda m, o: m() >> o["i"].abs().clamp(0, 3)),
    ("bitwise_not", I32, (4, 4), lambda m, o: ~m()),
    ("bool_and", BOOL, (4, 4), lambda m, o: m() & o["b"]),
    ("bool_not", BOOL, (4, 4), lambda m, o: ~m()),
    ("sum_dim", F32, (4, 4), lambda m, o: m().sum_dim(1)),
    ("mean_dim", F32, (4, 4), lambda m, o: m().mean_dim(-1)),
    ("prod_dim", F32, (4, 4), lambda m, o: m().prod_dim(0)),
    ("max_dim", I32, (4, 4), lambda m, o: m().max_dim(1)),
    ("min_dim", F32, (4, 4), lambda m, o: m().min_dim(1)),
    ("argmax", F32, (4, 4), lambda m, o: m().argmax(1)),
    ("argmin", I32, (4, 4), lambda m, o: m().argmin(0)),
    ("any_dim", BOOL, (4, 4), lambda m, o: m().any_dim(1)),
    ("all_dim", F32, (4, 4), lambda m, o: m().all_dim(0)),
    ("sum", F32, (4, 4), lambda m, o: m().sum()),
    ("mean", F32, (4, 4), lambda m, o: m().mean()),
    ("prod", I32, (4, 4), lambda m, o: m().prod()),
    ("max", F32, (4, 4), lambda m, o: m().max()),
    ("min", F32, (4, 4), lambda m, o: m().min()),
    ("any", BOOL, (4, 4), lambda m, o: m().any()),
    ("all", I32, (4, 4), lambda m, o: m().all()),
    ("reshape", F32, (4, 4), lambda m, o: m().reshape((2, -1))),
    ("swap_dims", F32, (4, 4), lambda m, o: m().swap_dims(0, 1)),
    ("transpose", F32, (4, 4), lambda m, o: m().transpose()),
    ("permute", F32, (4, 4), lambda m, o: m().permute((1, 0))),
    ("flip", F32, (4, 4), lambda m, o: m().flip((0,))),
    ("expand", F32, (1, 4), lambda m, o: m().expand((3, 4))),
    ("slice", F32, (4, 4), lambda m, o: m().slice([(1, 3), slice(None, -1)])),
    ("gather", F32, (4, 4), lambda m, o: m().gather(1, o["idx"])),
    ("select", F32, (4, 4), lambda m, o: m().select(0, o["row"])),
    ("mask_where", F32, (4, 4), lambda m, o: m().mask_where(o["b"], o["m"])),
    ("mask_fill", F32, (4, 4), lambda m, o: m().mask_fill(o["b"], 0.5)),
    ("cast", F32, (4, 4), lambda m, o: m().cast("f16")),
    ("int", F32, (4, 4), lambda m, o: m().int()),
    ("float", I32, (4, 4), lambda m, o: m().float()),
    ("bool_float", BOOL, (4, 4), lambda m, o: m().float()),
    ("max_pool2d", F32, (1, 2, 4, 4), lambda m, o: m().max_pool2d(2)),
    ("avg_pool2d", F32, (1, 2, 4, 4), lambda m, o: m().avg_pool2d(2, stride=1, padding=1)),
    ("adaptive_avg_pool2d", F32, (1, 2, 4, 4), lambda m, o: m().adaptive_avg_pool2d(2)),
    ("interpolate", F32, (1, 2, 4, 4), lambda m, o: m().interpolate((8, 8))),
    ("cat", F32, (4, 4), lambda m, o: cat([m(), o["f"]], 1)),
    ("session_cat", F32, (4, 4), lambda m, o: o["f"].session.cat((m(), o["f"]), 0)),
]


# Calls the frontend refuses, each wrong in one way (used by tests/refimpl/test_frontend.py and
# tests/fastplan/test_frontend_parity.py): (call on a session, error class, field).
BAD_CALLS = [
    (lambda s: s.random((2, 3)) + s.random((3, 2)), ShapeError, "rhs.shape"),
    (lambda s: s.random((2, 3)) + s.random((2, 3), "i32"), DTypeError, "rhs.dtype"),
    (lambda s: s.random((2, 3), "i32").exp(), DTypeError, None),
    (lambda s: s.random((2, 3), "i32") + 2.5, DTypeError, None),
    (lambda s: s.random((2, 3), "u8") + 300, DTypeError, None),
    (lambda s: s.random((2, 3)).sum_dim(2), AxisError, "axis"),
    (lambda s: s.random((2, 3)).reshape((4, 2)), ShapeError, "out.shape"),
    (lambda s: s.random((1, 1)).reshape((-1, -1)), ShapeError, "out.shape"),
    (lambda s: s.random((2, 3)).slice([(0, 1), (0, 1), (0, 1)]), AxisError, "ranges"),
    (lambda s: s.random((2, 3)).mask_fill(s.random((2, 3)), 0.0), DTypeError, "mask.dtype"),
    (lambda s: cat([s.random((2, 3)), s.random((3, 3))], 1), ShapeError, "tensors.1.shape"),
]


# --- the bad-input catalogue ------------------------------------------------------------------
# Used by tests/refimpl/test_bad_input.py and tests/fastplan/test_boundary.py. JSON documents,
# each wrong in exactly one way: (kind, source, error class, op index, field).

S = [4, 6]


def T(i, shape=S, dtype="f32", status="ReadOnly"):
    return {"id": i, "shape": list(shape), "dtype": dtype, "status": status}


def O(i, shape=S, dtype="f32"):
    return T(i, shape, dtype, "NotInit")


def inp(shape=S, dtype="f32", **extra):
    spec = {"shape": list(shape), "dtype": dtype}
    spec.update(extra if extra else {"random": 0})
    return spec


def doc(ops, inputs=None, **top):
    d = {"version": 1, "inputs": {"0": inp(), "1": inp()} if inputs is None else inputs,
         "ops": ops}
    d.update(top)
    return d


def add(lhs=None, rhs=None, out=None, name="NumericFloat.Add"):
    return {"op": name, "lhs": T(0) if lhs is None else lhs, "rhs": T(1) if rhs is None else rhs,
            "out": O(2) if out is None else out}


def unary(name, src=None, out=None):
    return {"op": name, "input": T(0) if src is None else src, "out": O(2) if out is None else out}


def drop(i, shape=S, dtype="f32", status="ReadWrite"):
    return {"op": "Drop", "tensor": T(i, shape, dtype, status)}


def without(d, key):
    d = copy.deepcopy(d)
    del d[key]
    return d


def with_(d, **changes):
    d = copy.deepcopy(d)
    d.update(changes)
    return d


E = errors
CATALOGUE = [
    # --- the document ---------------------------------------------------------------------
    ("bad_json", '{"version": 1, "ops": [', E.StreamFormatError, None, None),
    ("not_utf8", b'{"version": 1, "ops": []}\xff', E.StreamFormatError, None, None),
    ("not_an_object", "[1, 2]", E.StreamFormatError, None, None),
    ("wrong_version", doc([], version=2), E.StreamFormatError, None, "version"),
    ("version_as_text", doc([], version="1"), E.StreamFormatError, None, "version"),
    ("missing_version", without(doc([]), "version"), E.StreamFormatError, None, "version"),
    ("missing_ops", without(doc([]), "ops"), E.StreamFormatError, None, "ops"),
    ("ops_not_list", doc({}), E.StreamFormatError, None, "ops"),
    ("inputs_not_object", doc([], inputs=[]), E.StreamFormatError, None, "inputs"),
    ("unknown_top_key", doc([], extra=1), E.StreamFormatError, None, "extra"),
    ("duplicate_key", '{"version": 1, "version": 1, "ops": []}', E.StreamFormatError, None,
     "version"),
    # --- inputs ---------------------------------------------------------------------------
    ("input_key_not_id", doc([], inputs={"x": inp()}), E.FieldTypeError, None, "inputs.x"),
    ("input_key_padded", doc([], inputs={"01": inp()}), E.FieldTypeError, None, "inputs.01"),
    ("input_not_object", doc([], inputs={"0": [4, 6]}), E.FieldTypeError, None, "inputs.0"),
    ("input_missing_dtype", doc([], inputs={"0": {"shape": S, "random": 1}}),
     E.MissingFieldError, None, "inputs.0.dtype"),
    ("input_extra_field", doc([], inputs={"0": inp(random=1, layout="nhwc")}),
     E.MissingFieldError, None, "inputs.0.layout"),
    ("input_unknown_dtype", doc([], inputs={"0": inp(dtype="float")}), E.DTypeError, None,
     "inputs.0.dtype"),
    ("negative_dim", doc([], inputs={"0": inp(shape=[-1, 6])}), E.ShapeError, None,
     "inputs.0.shape"),
    ("huge_dim", doc([], inputs={"0": inp(shape=[2**31, 1])}), E.ShapeError, None,
     "inputs.0.shape"),
    ("huge_numel", doc([], inputs={"0": inp(shape=[2**20, 2**21])}), E.ShapeError, None,
     "inputs.0.shape"),
    ("rank_zero", doc([], inputs={"0": inp(shape=[])}), E.ShapeError, None, "inputs.0.shape"),
    ("huge_rank", doc([], inputs={"0": inp(shape=[1] * 33)}), E.ShapeError, None,
     "inputs.0.shape"),
    ("json_nested_too_deeply", "[" * 100_000 + "]" * 100_000, E.StreamFormatError, None, None),
    ("aliasing_strides", doc([], inputs={"0": inp(strides=[1, 1], random=1)}), E.StrideError,
     None, "inputs.0.strides"),
    ("interleaved_aliasing", doc([], inputs={"0": inp(shape=[4, 3], strides=[2, 3],
                                                      random=1)}),
     E.StrideError, None, "inputs.0.strides"),
    ("zero_stride", doc([], inputs={"0": inp(strides=[0, 1], random=1)}), E.StrideError, None,
     "inputs.0.strides"),
    ("negative_stride", doc([], inputs={"0": inp(strides=[6, -1], random=1)}), E.StrideError,
     None, "inputs.0.strides"),
    ("strides_length", doc([], inputs={"0": inp(strides=[1], random=1)}), E.StrideError, None,
     "inputs.0.strides"),
    ("strides_null", doc([], inputs={"0": inp(strides=None, random=1)}), E.FieldTypeError,
     None, "inputs.0.strides"),
    ("data_shape_mismatch", doc([], inputs={"0": inp(data=[[0.0] * 6] * 3)}),
     E.InputDataError, None, "inputs.0.data"),
    ("data_ragged", doc([], inputs={"0": inp(shape=[2, 2], data=[[1.0, 2.0], [3.0]])}),
     E.InputDataError, None, "inputs.0.data"),
    ("data_kind_mismatch", doc([], inputs={"0": inp(shape=[2], dtype="bool", data=[0.5, 1.0])}),
     E.InputDataError, None, "inputs.0.data"),
    ("data_int_out_of_range", doc([], inputs={"0": inp(shape=[2], dtype="u8", data=[1, 256])}),
     E.InputDataError, None, "inputs.0.data"),
    ("both_data_and_random", doc([], inputs={"0": inp(shape=[1], data=[1.0], random=3)}),
     E.InputDataError, None, "inputs.0.data"),
    ("neither_data_nor_random", doc([], inputs={"0": {"shape": S, "dtype": "f32"}}),
     E.InputDataError, None, "inputs.0.data"),
    ("random_not_int", doc([], inputs={"0": inp(random=1.5)}), E.FieldTypeError, None,
     "inputs.0.random"),
    ("random_negative", doc([], inputs={"0": inp(random=-1)}), E.InputDataError, None,
     "inputs.0.random"),
    # --- op objects -----------------------------------------------------------------------
    ("op_not_object", doc([[0, 1]]), E.FieldTypeError, 0, None),
    ("missing_op_name", doc([without(add(), "op")]), E.MissingFieldError, 0, "op"),
    ("op_name_not_text", doc([with_(add(), op=3)]), E.FieldTypeError, 0, "op"),
    ("unknown_op", doc([add(name="NumericFloat.Addd")]), E.UnknownOpError, 0, "op"),
    ("missing_field", doc([without(add(), "rhs")]), E.MissingFieldError, 0, "rhs"),
    ("extra_field", doc([with_(add(), alpha=1)]), E.MissingFieldError, 0, "alpha"),
    ("tensor_not_object", doc([add(lhs=0)]), E.FieldTypeError, 0, "lhs"),
    ("tensor_missing_key", doc([add(lhs=without(T(0), "status"))]), E.MissingFieldError, 0,
     "lhs.status"),
    ("tensor_extra_key", doc([add(lhs=with_(T(0), strides=[6, 1]))]), E.MissingFieldError, 0,
     "lhs.strides"),
    ("tensor_id_not_int", doc([add(lhs=with_(T(0), id="0"))]), E.FieldTypeError, 0, "lhs.id"),
    ("tensor_id_negative", doc([add(lhs=with_(T(0), id=-1))]), E.FieldTypeError, 0, "lhs.id"),
    ("shape_not_list", doc([add(lhs=with_(T(0), shape=4))]), E.FieldTypeError, 0, "lhs.shape"),
    ("unknown_dtype", doc([add(lhs=T(0, dtype="float32"))]), E.DTypeError, 0, "lhs.dtype"),
    ("unknown_status", doc([add(lhs=T(0, status="Consumed"))]), E.StatusError, 0,
     "lhs.status"),
    ("axis_not_int", doc([{"op": "NumericFloat.SumDim", "input": T(0), "out": O(2, [4, 1]),
                           "axis": 1.0}]), E.FieldTypeError, 0, "axis"),
    ("scalar_not_number", doc([add(rhs="2", name="NumericFloat.AddScalar")]), E.FieldTypeError,
     0, "rhs"),
    ("cat_empty_list", doc([{"op": "BaseFloat.Cat", "tensors": [], "dim": 0, "out": O(2)}]),
     E.FieldTypeError, 0, "tensors"),
    ("range_not_pair", doc([{"op": "BaseFloat.Slice", "tensor": T(0), "ranges": [[0, 1, 2]],
                             "out": O(2, [1, 6])}]), E.FieldTypeError, 0, "ranges.0"),
    ("sync_ids_not_list", doc([{"op": "Sync", "tensors": 0}]), E.FieldTypeError, 0, "tensors"),
    ("sync_extra_field", doc([{"op": "Sync", "tensors": [0], "all": True}]),
     E.MissingFieldError, 0, "all"),
    # --- ids, liveness and statuses -------------------------------------------------------
    ("unknown_tensor_id", doc([add(lhs=T(9))]), E.TensorIdError, 0, "lhs.id"),
    ("use_after_readwrite", doc([unary("Float.Exp", T(0, status="ReadWrite")),
                                 unary("Float.Log", T(0), O(3))]), E.StatusError, 1,
     "input.id"),
    ("use_after_drop", doc([drop(0), unary("Float.Exp")]), E.TensorIdError, 1, "input.id"),
    ("double_drop", doc([drop(0), drop(0)]), E.TensorIdError, 1, "tensor.id"),
    ("drop_after_readwrite", doc([unary("Float.Exp", T(0, status="ReadWrite")), drop(0)]),
     E.StatusError, 1, "tensor.id"),
    ("drop_not_readwrite", doc([drop(0, status="ReadOnly")]), E.StatusError, 0,
     "tensor.status"),
    ("output_id_reused", doc([add(out=O(1))]), E.TensorIdError, 0, "out.id"),
    ("output_id_of_dropped", doc([drop(1), add(rhs=T(0), out=O(1))]), E.TensorIdError, 1,
     "out.id"),
    ("output_status_not_notinit", doc([add(out=T(2))]), E.StatusError, 0, "out.status"),
    ("input_status_notinit", doc([add(lhs=O(0))]), E.StatusError, 0, "lhs.status"),
    ("sync_unknown_id", doc([add(), {"op": "Sync", "tensors": [7]}]), E.TensorIdError, 1,
     "tensors.0"),
    ("sync_after_readwrite", doc([add(lhs=T(0, status="ReadWrite")),
                                  {"op": "Sync", "tensors": [2, 0]}]), E.StatusError, 1,
     "tensors.1"),
    ("sync_duplicate_id", doc([{"op": "Sync", "tensors": [0, 0]}]), E.TensorIdError, 0,
     "tensors.1"),
    ("init_not_an_input", doc([{"op": "Init", "out": O(9)}]), E.TensorIdError, 0, "out.id"),
    ("init_shape_differs", doc([{"op": "Init", "out": O(1, [6, 4])}]), E.ShapeError, 0,
     "out.shape"),
    ("use_before_init", doc([unary("Float.Exp", T(1)), {"op": "Init", "out": O(1)}]),
     E.TensorIdError, 0, "input.id"),
    # --- snapshots ------------------------------------------------------------------------
    ("snapshot_shape_differs", doc([add(lhs=T(0, [6, 4]))]), E.ShapeError, 0, "lhs.shape"),
    ("snapshot_dtype_differs", doc([add(lhs=T(0, dtype="f16"))]), E.DTypeError, 0,
     "lhs.dtype"),
    ("negative_dim_in_op", doc([add(out=O(2, [4, -6]))]), E.ShapeError, 0, "out.shape"),
    ("huge_dim_in_op", doc([add(out=O(2, [4, 2**40]))]), E.ShapeError, 0, "out.shape"),
    # --- dtype rules ----------------------------------------------------------------------
    ("float_op_on_int", doc([unary("Float.Exp", T(0, dtype="i32"), O(2, dtype="i32"))],
                            inputs={"0": inp(dtype="i32")}), E.DTypeError, 0, "input.dtype"),
    ("mixed_dtypes", doc([add(rhs=T(1, dtype="f16"))], inputs={"0": inp(), "1": inp(
        dtype="f16")}), E.DTypeError, 0, "rhs.dtype"),
    ("mask_not_bool", doc([{"op": "BaseFloat.MaskFill", "tensor": T(0), "mask": T(1),
                            "value": 0.0, "out": O(2)}]), E.DTypeError, 0, "mask.dtype"),
    ("indices_not_int", doc([{"op": "BaseFloat.Gather", "tensor": T(0), "dim": 1,
                              "indices": T(1), "out": O(2)}]), E.DTypeError, 0,
     "indices.dtype"),
    ("comparison_out_not_bool", doc([add(name="NumericFloat.Lower")]), E.DTypeError, 0,
     "out.dtype"),
    ("same_out_dtype_differs", doc([add(out=O(2, dtype="f16"))]), E.DTypeError, 0,
     "out.dtype"),
    ("int_op_fractional_scalar", doc([add(T(0, dtype="i32"), 2.5, O(2, dtype="i32"),
                                          "NumericInt.AddScalar")],
                                     inputs={"0": inp(dtype="i32")}), E.DTypeError, 0, "rhs"),
    ("int_scalar_out_of_range", doc([add(T(0, dtype="u8"), 300, O(2, dtype="u8"),
                                         "NumericInt.AddScalar")],
                                    inputs={"0": inp(dtype="u8")}), E.DTypeError, 0, "rhs"),
    ("bool_scalar_on_float_op", doc([add(rhs=True, name="NumericFloat.MulScalar")]),
     E.DTypeError, 0, "rhs"),
    ("number_scalar_on_bool_op", doc([add(T(0, dtype="bool"), 1, O(2, dtype="bool"),
                                          "BaseBool.EqualElem")],
                                     inputs={"0": inp(dtype="bool")}), E.DTypeError, 0, "rhs"),
    # --- shape rules ----------------------------------------------------------------------
    ("binary_shape_mismatch", doc([add(rhs=T(1, [4, 5]))], inputs={"0": inp(), "1": inp(
        [4, 5])}), E.ShapeError, 0, "rhs.shape"),
    ("rank_mismatch", doc([add(rhs=T(1, [1, 4, 6]))], inputs={"0": inp(), "1": inp(
        [1, 4, 6])}), E.ShapeError, 0, "rhs.shape"),
    ("out_shape_wrong", doc([add(out=O(2, [4, 7]))]), E.ShapeError, 0, "out.shape"),
    ("bad_axis", doc([{"op": "NumericFloat.SumDim", "input": T(0), "out": O(2, [4, 1]),
                       "axis": 2}]), E.AxisError, 0, "axis"),
    ("bad_swap_dims", doc([{"op": "BaseFloat.SwapDims", "input": T(0), "out": O(2, [6, 4]),
                            "dim1": 0, "dim2": 5}]), E.AxisError, 0, "dim2"),
    ("permute_repeats_axis", doc([{"op": "BaseFloat.Permute", "input": T(0), "out": O(2),
                                   "axes": [0, 0]}]), E.AxisError, 0, "axes"),
    ("cat_dims_mismatch", doc([{"op": "BaseFloat.Cat", "tensors": [T(0), T(1, [4, 5])],
                                "dim": 0, "out": O(2, [8, 6])}],
                              inputs={"0": inp(), "1": inp([4, 5])}), E.ShapeError, 0,
     "tensors.1.shape"),
    ("matmul_inner_mismatch", doc([add(name="Float.Matmul", out=O(2, [4, 6]))]), E.ShapeError,
     0, "rhs.shape"),
    ("reshape_numel_mismatch", doc([{"op": "BaseFloat.Reshape", "input": T(0),
                                     "out": O(2, [5, 5])}]), E.ShapeError, 0, "out.shape"),
    ("slice_out_of_range", doc([{"op": "BaseFloat.Slice", "tensor": T(0), "ranges": [[0, 5]],
                                 "out": O(2, [5, 6])}]), E.ShapeError, 0, "ranges.0"),
    ("select_indices_rank", doc([{"op": "BaseFloat.Select", "tensor": T(0), "dim": 0,
                                  "indices": T(1, [2, 2], "i32"), "out": O(2, [2, 6])}],
                                inputs={"0": inp(), "1": inp([2, 2], "i32")}), E.ShapeError,
     0, "indices.shape"),
    ("pool_not_rank4", doc([{"op": "Module.MaxPool2d", "x": T(0), "kernel_size": [2, 2],
                             "stride": [1, 1], "padding": [0, 0], "dilation": [1, 1],
                             "out": O(2)}]), E.ShapeError, 0, "x.shape"),
    ("interpolate_bad_mode", doc([{"op": "Module.Interpolate", "x": T(0, [1, 1, 4, 6]),
                                   "output_size": [8, 12], "mode": "cubic",
                                   "out": O(2, [1, 1, 8, 12])}],
                                 inputs={"0": inp([1, 1, 4, 6])}), E.FieldTypeError, 0,
     "mode"),
]


def as_source(src):
    """Text and bytes are passed as they are; objects go through json.dumps like a file."""
    return src if isinstance(src, str | bytes) else json.dumps(src)


# Valid documents that the fuzzers mutate.

BASES = [doc([add(), unary("Float.Exp", T(2), O(3)), drop(0),
              {"op": "Sync", "tensors": [3, 1]}]),
         doc([{"op": "BaseFloat.Slice", "tensor": T(0), "ranges": [[1, 3]], "out": O(2, [2, 6])},
              {"op": "BaseFloat.Cat", "tensors": [T(2, [2, 6]), T(1)], "dim": 0,
               "out": O(3, [6, 6])},
              {"op": "BaseFloat.Permute", "input": T(3, [6, 6]), "out": O(4, [6, 6]),
               "axes": [1, 0]}],
             inputs={"0": inp(strides=[1, 4], random=1), "1": inp(data=[[0.5] * 6] * 4)}),
         doc([{"op": "Module.MaxPool2d", "x": T(0, [1, 2, 4, 6]), "kernel_size": [2, 2],
               "stride": [1, 1], "padding": [0, 0], "dilation": [1, 1],
               "out": O(1, [1, 2, 3, 5])},
              {"op": "NumericFloat.Clamp", "tensor": T(1, [1, 2, 3, 5]), "min": 0.0, "max": 1.0,
               "out": O(2, [1, 2, 3, 5])},
              {"op": "Init", "out": O(3, [2], "i32")},
              {"op": "BaseFloat.Select", "tensor": T(2, [1, 2, 3, 5]), "dim": 3,
               "indices": T(3, [2], "i32"), "out": O(4, [1, 2, 3, 2])}],
             inputs={"0": inp([1, 2, 4, 6]), "3": inp([2], "i32", data=[0, 4])})]

_LEAVES = (st.none() | st.booleans() | st.integers(-3, 2**65) | st.floats() | st.text(max_size=3)
           | st.sampled_from([-1, 0, 1, 2, 2**31, 0.5, "f32", "i32", "bool", "ReadWrite",
                              "NotInit", "Sync", "Drop", "NumericFloat.Add", "BaseFloat.Cat"]))
_VALUES = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=6)


def mutate(obj, data) -> None:
    """Replace, delete or add one entry somewhere in the JSON value ``obj``."""
    node = obj
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            break
        key = data.draw(st.sampled_from(keys))
        if isinstance(node[key], dict | list) and node[key] and data.draw(st.integers(0, 4)):
            node = node[key]
            continue
        action = data.draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace":
            node[key] = data.draw(_VALUES)
        elif action == "delete":
            del node[key]
        elif isinstance(node, dict):
            node[data.draw(st.text(max_size=4))] = data.draw(_VALUES)
        else:
            node.append(data.draw(_VALUES))
        return


# The Python form: streams built without the parser, each wrong in one way.

_F32 = DType.F32


def _t(i, shape=(4, 6), status=TensorStatus.ReadOnly):
    return TensorIr(i, shape, _F32, status)


def py_stream(*items, inputs=None):
    specs = {0: InputSpec((4, 6), _F32, random=0), 1: InputSpec((4, 6), _F32, random=1)}
    return Stream(specs if inputs is None else inputs, tuple(items))


def _py_op(name, **fields):
    op = op_named(name)
    return OperationIr(op, op.struct(**fields))


_EXP_OUT = _t(2, status=TensorStatus.NotInit)
PY_CATALOGUE = [
    ("item_not_op", py_stream("Float.Exp"), E.FieldTypeError, 0, None),
    ("wrong_struct", py_stream(OperationIr(op_named("Float.Exp"), op_named("Float.Log").struct)),
     E.FieldTypeError, 0, None),
    ("snapshot_not_tensor", py_stream(_py_op("Float.Exp", input=0, out=_EXP_OUT)),
     E.FieldTypeError, 0, "input"),
    ("dtype_not_dtype", py_stream(_py_op("Float.Exp", input=TensorIr(0, (4, 6), "f32",
                                                                    TensorStatus.ReadOnly),
                                          out=_EXP_OUT)), E.DTypeError, 0, "input.dtype"),
    ("status_not_status", py_stream(_py_op("Float.Exp", input=TensorIr(0, (4, 6), _F32, "RO"),
                                            out=_EXP_OUT)), E.StatusError, 0, "input.status"),
    ("shape_of_text", py_stream(_py_op("Float.Exp", input=_t(0, ("4", "6")), out=_EXP_OUT)),
     E.FieldTypeError, 0, "input.shape"),
    ("axis_not_int", py_stream(_py_op("NumericFloat.SumDim", input=_t(0), out=_t(
        2, (4, 1), TensorStatus.NotInit), axis="1")), E.FieldTypeError, 0, "axis"),
    ("cat_of_nothing", py_stream(_py_op("BaseFloat.Cat", tensors=(), dim=0, out=_EXP_OUT)),
     E.FieldTypeError, 0, "tensors"),
    ("scalar_not_number", py_stream(_py_op("NumericFloat.AddScalar", lhs=_t(0), rhs="2",
                                            out=_EXP_OUT)), E.DTypeError, 0, "rhs"),
    ("input_id_negative", py_stream(inputs={-1: InputSpec((2,), _F32, random=0)}),
     E.FieldTypeError, None, "inputs.-1"),
    ("input_numpy_data_shape", py_stream(inputs={0: InputSpec((2,), _F32,
                                                               data=np.zeros((3,)))}),
     E.InputDataError, None, "inputs.0.data"),
    ("input_spec_not_spec", py_stream(inputs={0: TensorIr(0, (4, 6), _F32,
                                                           TensorStatus.ReadOnly)}),
     E.FieldTypeError, None, "inputs.0"),
    ("input_spec_of_nothing", py_stream(inputs={0: None}), E.FieldTypeError, None, "inputs.0"),
    # axes may be a list in Python form (FieldKind.INTS): checked like a tuple, found by the
    # planner fuzzer (tools/fuzz_planners.py) as a TypeError from the validator
    ("axes_list_out_of_range", py_stream(_py_op("BaseFloat.Permute", input=_t(0), out=_t(
        2, (6, 4), TensorStatus.NotInit), axes=[0, 2])), E.AxisError, 0, "axes"),
]
