"""refimpl.frontend: the recorded ops, their dtypes and values, syncs and executors.

Statuses and Drop are tested in ``test_frontend_status.py``. Streams are built outside
``assert`` statements: pytest's assertion rewriting keeps subexpressions alive, which would
make temporaries look held.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from refimpl.data import random_values
from refimpl.dtypes import DType
from refimpl.eager import EagerExecutor
from refimpl.errors import DTypeError
from refimpl.frontend import DEFAULT_INT, FrontendError, Session, Tensor, cat
from refimpl.ir import OperationIr, Sync
from refimpl.ops import OPS, Category, OpKind
from refimpl.stream import stream_from_json
from refimpl.validate import validate_stream
from tests.refimpl.helpers import BAD_CALLS, item_names, recorded_ops

DOC = Path(__file__).resolve().parents[2] / "docs" / "frontend.md"


# --- op selection and dtypes ----------------------------------------------------------------


def test_frontend_category_and_output_dtype_follow_the_operands():
    s = Session(executor=None)
    f, i = s.random((2, 3)), s.random((2, 3), "i32")
    b = s.random((2, 3), "bool")
    cases = [
        (i + 1, "NumericInt.AddScalar", DType.I32),
        (f < 0.5, "NumericFloat.LowerElem", DType.BOOL),
        (i.equal(i), "BaseInt.Equal", DType.BOOL),
        (b.equal(True), "BaseBool.EqualElem", DType.BOOL),
        (f.argmax(1), "NumericFloat.ArgMax", DEFAULT_INT),
        (b & b, "Bool.And", DType.BOOL),
        (~b, "Bool.Not", DType.BOOL),
        (b.int(), "Bool.IntoInt", DType.I32),
        (f.cast("f16"), "BaseFloat.Cast", DType.F16),
        (f.cast(DType.I64), "Float.IntoInt", DType.I64),
        (i.float(), "Int.IntoFloat", DType.F32),
        (i.cast("i64"), "BaseInt.Cast", DType.I64),
        (s.ones((2,), "bool"), "BaseBool.Ones", DType.BOOL),
        (s.full((2,), 0, "bool"), "BaseBool.Zeros", DType.BOOL),
        (s.full((2,), 3, "f32"), "NumericFloat.Full", DType.F32),
        (s.zeros((2,), "u8"), "BaseInt.Zeros", DType.U8),
        (f.any_dim(0), "BaseFloat.AnyDim", DType.BOOL),
    ]
    ops = [op for op in recorded_ops(s) if op.name != "Drop"]
    assert [op.name for op in ops] == [name for _, name, _ in cases]
    assert [t.dtype for t, _, _ in cases] == [dtype for _, _, dtype in cases]
    assert ops[0].scalars() == (1,) and isinstance(ops[0].scalars()[0], int)
    assert ops[14].scalars() == (3.0,) and isinstance(ops[14].scalars()[0], float)
    assert f.int().dtype is DType.I32 and f.cast("f32") is f  # same dtype: the same handle
    validate_stream(s.stream)


def test_frontend_operators_record_every_int_bitwise_op():
    """The frontend's operator table (``&``, ``|``, ``^``, ``<<``, ``>>``, ``~``) reaches every
    element-wise op of the Int category but the conversion (``.float()``)."""
    s = Session(executor=None)
    i = s.random((2, 3), "i32")
    kept = [i & i, i & 3, i | i, i | 3, i ^ i, i ^ 3, i << i, i << 1, i >> i, i >> 1, ~i]
    names = [op.name for op in recorded_ops(s) if op.name != "Drop"]
    assert len(kept) == len(names)
    assert names == ["Int.BitwiseAnd", "Int.BitwiseAndScalar", "Int.BitwiseOr",
                     "Int.BitwiseOrScalar", "Int.BitwiseXor", "Int.BitwiseXorScalar",
                     "Int.BitwiseLeftShift", "Int.BitwiseLeftShiftScalar",
                     "Int.BitwiseRightShift", "Int.BitwiseRightShiftScalar", "Int.BitwiseNot"]
    elementwise = {op.name for op in OPS
                   if op.category is Category.Int and op.kind is OpKind.ELEMENTWISE}
    assert set(names) == elementwise - {"Int.IntoFloat"}


@pytest.mark.parametrize("build,error,field", BAD_CALLS)
def test_frontend_bad_op_raises_and_records_nothing(build, error, field):
    s = Session(executor=None)
    with pytest.raises(error) as err:
        build(s)
    assert getattr(err.value, "field", field) == field
    assert getattr(err.value, "op_index", 0) == 0
    assert [item.name for item in recorded_ops(s)] in ([], ["Drop"], ["Drop", "Drop"])
    assert s.stream.inputs.keys() == set(range(len(s.stream.inputs)))


def test_frontend_cast_to_bool_and_foreign_tensors_are_refused():
    s, other = Session(executor=None), Session(executor=None)
    x, y = s.random((2,)), other.random((2,))
    with pytest.raises(DTypeError, match="no cast from f32 to bool"):
        x.cast("bool")
    with pytest.raises(FrontendError, match="another session"):
        x + y
    with pytest.raises(TypeError):
        bool(x)
    with pytest.raises(TypeError):
        cat([], 0)


# --- reading values -------------------------------------------------------------------------


def test_frontend_numpy_matches_a_direct_numpy_computation():
    s = Session()
    a, b, c = (s.random((4, 6), seed=k) for k in range(3))
    y = (a * b + c).exp()
    got = y.numpy()
    na, nb, nc = (random_values((4, 6), DType.F32, k) for k in range(3))
    np.testing.assert_array_equal(got, np.exp(na * nb + nc))
    assert got.dtype == np.float32 and item_names(s)[-1] == "Sync"


def test_frontend_values_of_shape_and_index_ops():
    s = Session()
    x = s.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    idx = s.tensor([[[3, 2, 1, 0]] * 3] * 2)
    mask = s.tensor(np.arange(24).reshape(2, 3, 4) % 3 == 0)
    outs = s.sync(x.swap_dims(0, 2), x.reshape((4, -1)), x.sum_dim(1), x.argmax(2),
                  x.slice([None, (1, 3), slice(-2, None)]), x.flip((2,)),
                  x.permute((2, 0, 1)), x.gather(2, idx), x.mask_fill(mask, -1.0),
                  x.slice([(0, 1)]).expand((3, 3, 4)), x.matmul(x.swap_dims(1, 2)))
    n = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    nmask = np.arange(24).reshape(2, 3, 4) % 3 == 0
    expected = [n.swapaxes(0, 2), n.reshape(4, 6), n.sum(1, keepdims=True),
                n.argmax(2)[..., None].astype(np.int32), n[:, 1:3, -2:], n[:, :, ::-1],
                n.transpose(2, 0, 1), n[:, :, ::-1], np.where(nmask, -1.0, n),
                np.broadcast_to(n[:1], (3, 3, 4)), n @ n.swapaxes(1, 2)]
    for got, want in zip(outs, expected, strict=True):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


def test_frontend_strided_input_reads_its_logical_values():
    s = Session()
    t = s.tensor([[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]], strides=(1, 3))
    assert s.stream.inputs[0].strides == (1, 3)
    np.testing.assert_array_equal((t * 2).numpy(), [[2, 8], [4, 10], [6, 12]])


def test_frontend_random_defaults_to_the_id_as_seed():
    s = Session(executor=None)
    s.random((2,))
    t = s.random((3, 2), "i32")
    assert s.stream.inputs[1].random == 1 and t.dtype is DType.I32


class _RecordingExecutor:
    """An Executor that logs the protocol calls and delegates to the eager one."""

    def __init__(self) -> None:
        self.inner, self.calls = EagerExecutor(), []

    def load_inputs(self, inputs):
        self.calls.append(("load", tuple(inputs)))
        self.inner.load_inputs(inputs)

    def execute(self, item):
        self.calls.append(("execute", item.name if isinstance(item, OperationIr) else "Sync"))
        self.inner.execute(item)

    def value(self, tensor_id):
        self.calls.append(("value", tensor_id))
        return self.inner.value(tensor_id)


def test_frontend_executor_protocol_runs_items_once_and_incrementally():
    ex = _RecordingExecutor()
    s = Session(executor=ex)
    a = s.random((2, 2))
    y = a + 1.0
    first = y.numpy()
    b = s.random((2, 2))  # an input created after the first run
    z, w = s.sync(y * b, y)
    assert ex.calls == [
        ("load", (0,)), ("execute", "NumericFloat.AddScalar"), ("execute", "Sync"),
        ("value", 1), ("load", (2,)), ("execute", "NumericFloat.Mul"), ("execute", "Sync"),
        ("value", 3), ("value", 1)]
    np.testing.assert_array_equal(w, first)
    np.testing.assert_array_equal(z, first * random_values((2, 2), DType.F32, 2))
    sync, drop = s.stream.items[-2:]  # the temporary y * b dies after the read: Drop
    assert sync == Sync((3, 1)) and drop.name == "Drop" and drop.desc.tensor.id == 3


def test_frontend_record_only_session_and_closing():
    s = Session(executor=None)
    a = s.random((2, 2))
    assert s.sync(a) is None and s.stream.items == (Sync((0,)),)
    with pytest.raises(FrontendError, match="records only"):
        a.numpy()
    stream = s.close()
    del a  # no Drop once the session is closed
    assert s.stream == stream and s.closed
    with pytest.raises(FrontendError, match="closed"):
        s.random((1,))
    with Session(executor=None) as t:
        t.random((1,))
    assert t.closed


def test_frontend_to_json_round_trips_through_stream_from_json():
    s = Session(executor=None)
    a = s.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = s.random((2, 2), "f32", seed=7, strides=(1, 2))
    mask = a > 2.0
    y = cat([a.mask_where(mask, b), b.clamp(-1, 1)], 0).sum_dim(1)
    del mask
    s.sync(y)
    text = s.to_json()
    assert stream_from_json(text) == s.stream
    assert '"op": "Drop"' in text and '"strides": [1, 2]' in text


# --- element-wise methods and burn's division rules ------------------------------------------

SPECIALS = [[-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5],
            [np.nan, np.inf, -np.inf, 1e4, -3.7, 3.7, 1.0, -1.0]]

# (method, op recorded on a float tensor, numpy reference)
FLOAT_METHODS = [
    ("tan", "Float.Tan", np.tan),
    ("round", "Float.Round", np.round),  # half to even, as burn
    ("floor", "Float.Floor", np.floor),
    ("ceil", "Float.Ceil", np.ceil),
    ("is_nan", "Float.IsNan", np.isnan),
    ("is_inf", "Float.IsInf", np.isinf),
    ("sign", "NumericFloat.Sign", np.sign),
]


def _eager_values(s: Session) -> dict[int, np.ndarray]:
    """The session's stream run again, from scratch, by the eager oracle."""
    return EagerExecutor().run_stream(s.stream)


@pytest.mark.parametrize("dtype", [DType.F32, DType.F16], ids=lambda d: d.value)
@pytest.mark.parametrize("name,op,reference", FLOAT_METHODS, ids=[m[0] for m in FLOAT_METHODS])
def test_frontend_float_methods_match_numpy_and_the_eager_oracle(name, op, reference, dtype):
    s = Session()
    x = s.tensor(SPECIALS, dtype)
    y = getattr(x, name)()
    got = y.numpy()
    assert recorded_ops(s)[0].name == op
    with np.errstate(invalid="ignore"):
        want = reference(np.array(SPECIALS, dtype=dtype.numpy))
    assert got.dtype == want.dtype and y.dtype.numpy == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(_eager_values(s)[y.id], got)
    validate_stream(s.stream)


def test_frontend_round_is_half_to_even():
    s = Session()
    got = s.tensor([0.5, 1.5, 2.5, -0.5, -2.5, 3.5]).round().numpy()
    np.testing.assert_array_equal(got, [0.0, 2.0, 2.0, -0.0, -2.0, 4.0])


def test_frontend_sign_of_int_tensors():
    s = Session()
    x = s.tensor([-5, 0, 7, -1], "i16")
    y = x.sign()
    got = y.numpy()
    assert recorded_ops(s)[0].name == "NumericInt.Sign" and got.dtype == np.int16
    np.testing.assert_array_equal(got, [-1, 0, 1, -1])
    np.testing.assert_array_equal(_eager_values(s)[y.id], got)


@pytest.mark.parametrize("name", ["tan", "round", "floor", "ceil", "is_nan", "is_inf"])
def test_frontend_float_methods_refuse_int_tensors(name):
    s = Session(executor=None)
    x = s.tensor([1, 2])
    with pytest.raises(DTypeError, match="does not take i32"):
        getattr(x, name)()
    assert recorded_ops(s) == []


def test_frontend_sign_refuses_bool_tensors():
    s = Session(executor=None)
    x = s.tensor([True, False])
    with pytest.raises(DTypeError, match="does not take bool"):
        x.sign()


INTS = [-8, -7, -1, 0, 1, 6, 7, 2**31 - 1]


@pytest.mark.parametrize("divisor", [2, -2, 3, -3, 1, -1])
def test_frontend_int_division_truncates_and_rem_is_floor_modulo(divisor):
    s = Session()
    x = s.tensor(INTS)
    d = s.full((len(INTS),), divisor, "i32")
    results = (x / d, x / divisor, x % d, x % divisor)
    q, q_scalar, r, r_scalar = s.sync(*results)
    truncated = [int(v / divisor) for v in INTS]  # exact for these magnitudes
    floor_mod = [v % divisor for v in INTS]  # Python's %: the divisor's sign
    for got in (q, q_scalar):
        assert got.dtype == np.int32 and got.tolist() == truncated
    for got in (r, r_scalar):
        assert got.tolist() == floor_mod
    values = _eager_values(s)
    for t, got in zip(results, (q, q_scalar, r, r_scalar), strict=True):
        np.testing.assert_array_equal(values[t.id], got)


def test_frontend_division_by_zero_follows_burn():
    s = Session()
    x = s.tensor([-7, 0, 7])
    q, r = s.sync(x / 0, x % 0)
    assert q.tolist() == [-7, 0, 7] and r.tolist() == [0, 0, 0]


def test_frontend_float_rem_takes_the_divisor_sign():
    s = Session()
    x = s.tensor([-7.0, 7.0, -7.5, 7.5])
    pos, neg = s.sync(x % 2.0, x % -2.0)
    np.testing.assert_array_equal(pos, [1.0, 1.0, 0.5, 1.5])
    np.testing.assert_array_equal(neg, [-1.0, -1.0, -1.5, -0.5])


@pytest.mark.parametrize("dtype", ["i32", "f32"])
@pytest.mark.parametrize("build", [
    lambda x, y: x // y,
    lambda x, y: x // 2,
    lambda x, y: 2 // x,
], ids=["tensor", "scalar", "reflected"])
def test_frontend_floor_division_is_refused_with_burn_rule(build, dtype):
    s = Session(executor=None)
    x, y = s.tensor([-7, 7], dtype), s.tensor([2, 2], dtype)
    with pytest.raises(FrontendError, match=r"truncates toward zero.*floor modulo.*floor\(\)"):
        build(x, y)
    assert recorded_ops(s) == []


def test_frontend_floor_division_by_other_types_is_a_type_error():
    s = Session(executor=None)
    x = s.tensor([1, 2])
    with pytest.raises(TypeError):
        x // "2"
    with pytest.raises(TypeError):
        "2" // x


# --- the documented list of methods ----------------------------------------------------------


def _public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_frontend_doc_lists_every_tensor_and_session_method():
    text = DOC.read_text()
    missing = [f"t.{name}" for name in _public(Tensor) if not re.search(rf"`t\.{name}\b", text)]
    missing += [f"s.{name}" for name in _public(Session) if not re.search(rf"`s\.{name}\b", text)]
    assert missing == []
    assert "truncates toward zero" in text and "`cat(tensors, dim)`" in text
