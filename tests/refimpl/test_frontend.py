"""refimpl.frontend: statuses from reference counts, Drop, syncs and the recorded ops.

Streams are built outside ``assert`` statements: pytest's assertion rewriting keeps
subexpressions alive, which would make temporaries look held.
"""

from __future__ import annotations

import numpy as np
import pytest

from refimpl import frontend
from refimpl.data import random_values
from refimpl.dtypes import DType
from refimpl.eager import EagerExecutor
from refimpl.errors import AxisError, DTypeError, ShapeError, TensorIdError
from refimpl.frontend import DEFAULT_INT, FrontendError, Session, Tensor, cat
from refimpl.ir import OperationIr, Sync, TensorStatus
from refimpl.stream import stream_from_json
from refimpl.validate import validate_stream

RO, RW = TensorStatus.ReadOnly, TensorStatus.ReadWrite


def _ops(s: Session) -> list[OperationIr]:
    return [item for item in s.stream.items if isinstance(item, OperationIr)]


def _uses(item: OperationIr) -> list[tuple[int, TensorStatus]]:
    return [(t.id, t.status) for t in item.inputs()]


def _names(s: Session) -> list[str]:
    return [item.name if isinstance(item, OperationIr) else "Sync" for item in s.stream.items]


# --- statuses -------------------------------------------------------------------------------


def test_frontend_named_operands_are_read_only_and_temporaries_read_write():
    s = Session(executor=None)
    a, b, c = (s.random((4, 6), seed=k) for k in range(3))
    y = (a * b + c).exp()
    mul, add, exp = _ops(s)
    assert (mul.name, add.name, exp.name) == ("NumericFloat.Mul", "NumericFloat.Add", "Float.Exp")
    assert _uses(mul) == [(0, RO), (1, RO)]
    assert _uses(add) == [(3, RW), (2, RO)]
    assert _uses(exp) == [(4, RW)]
    assert y.id == 5 and exp.desc.out.status is TensorStatus.NotInit
    validate_stream(s.stream)


def test_frontend_temporary_first_operand_is_read_write():
    s = Session(executor=None)
    b, c = s.random((4, 6), seed=1), s.random((4, 6), seed=2)
    y = (s.random((4, 6), seed=0) * b + c).exp()
    mul = _ops(s)[0]
    assert _uses(mul) == [(2, RW), (0, RO)]
    assert y.shape == (4, 6)
    assert "Drop" not in _names(s)  # consumed with ReadWrite: no Drop when it is collected
    validate_stream(s.stream)


def test_frontend_moved_operand_is_read_write_and_handle_is_dead():
    s = Session(executor=None)
    a, b = s.random((2, 2)), s.random((2, 2))
    y = a.move() * b
    assert _uses(_ops(s)[0]) == [(0, RW), (1, RO)]
    with pytest.raises(TensorIdError, match="tensor 0 was moved"):
        a.exp()
    assert y.id == 2


def test_frontend_del_appends_drop_with_read_write_status():
    s = Session(executor=None)
    a = s.random((3, 5))
    y = a * 2.0
    del a
    drop = _ops(s)[-1]
    assert drop.name == "Drop"
    assert (drop.desc.tensor.id, drop.desc.tensor.status) == (0, RW)
    assert drop.desc.tensor.shape == (3, 5)
    assert y.id == 1
    validate_stream(s.stream)


def test_frontend_rebinding_reads_read_only_then_drops():
    s = Session(executor=None)
    x = s.random((2, 2))
    x = x + 1.0
    assert _names(s) == ["NumericFloat.AddScalar", "Drop"]
    assert _uses(_ops(s)[0]) == [(0, RO)]
    x = x.move() + 1.0  # burn's moving add_scalar: consumed, no Drop
    assert _names(s) == ["NumericFloat.AddScalar", "Drop", "NumericFloat.AddScalar"]
    assert _uses(_ops(s)[2]) == [(1, RW)]
    assert x.id == 2


def test_frontend_clone_makes_uses_read_only_until_the_last_handle_dies():
    s = Session(executor=None)
    a, b = s.random((2, 2)), s.random((2, 2))
    kept = a.clone()
    assert kept.id == a.id
    y = a.move() * b  # the only *Python* reference, but a clone still holds tensor 0
    assert _uses(_ops(s)[0]) == [(0, RO), (1, RO)]
    assert "Drop" not in _names(s)
    del kept  # the last handle of a tensor never consumed ReadWrite
    assert _names(s)[-1] == "Drop" and _ops(s)[-1].desc.tensor.id == 0
    assert y.id == 2


def test_frontend_dropping_one_clone_appends_nothing():
    s = Session(executor=None)
    a = s.random((2, 2))
    extra = a.clone()
    del extra
    assert s.stream.items == ()
    assert a.id == 0


def test_frontend_same_tensor_twice_in_one_op_is_read_only():
    s = Session(executor=None)
    x = s.random((2, 2))
    y = x * x
    assert _uses(_ops(s)[0]) == [(0, RO), (0, RO)]
    assert y.id == 1


def test_frontend_consumed_handle_cannot_be_used(monkeypatch):
    # Force the method path to see every count as a temporary: the named x is consumed.
    monkeypatch.setitem(frontend._TEMPORARY, "method", 10**6)
    s = Session(executor=None)
    x = s.random((2, 2))
    y = x.exp()
    assert _uses(_ops(s)[0]) == [(0, RW)]
    with pytest.raises(TensorIdError, match=r"tensor 0 was consumed \(ReadWrite\) by op 0") as err:
        x.exp()
    assert err.value.op_index == 1 and err.value.field == "input"
    assert y.id == 1


def test_frontend_calibration_tells_temporaries_from_named_tensors():
    measured = frontend.refcount_calibration()
    assert set(measured) == {"method", "binary", "reflected", "unary", "compare", "cat",
                             "cat_list"}
    for path, (temporary, named) in measured.items():
        assert named == temporary + 1, path


def test_frontend_cat_statuses_follow_the_list():
    s = Session(executor=None)
    a = s.random((1, 2))
    out = cat([s.random((1, 2)), a], 0)
    assert _uses(_ops(s)[0]) == [(1, RW), (0, RO)]
    held = [s.random((1, 2)), s.random((1, 2))]  # the caller keeps the list: all ReadOnly
    out2 = Session.cat(held, 1)
    assert _uses(_ops(s)[1]) == [(3, RO), (4, RO)]
    out3 = s.cat((s.random((1, 2)), a), 0)  # a tuple literal is a temporary like a list
    assert _uses(_ops(s)[2]) == [(6, RW), (0, RO)]
    assert (out.shape, out2.shape, out3.shape) == ((2, 2), (1, 4), (2, 2))


# --- every entry point: a temporary subject is ReadWrite, a held one ReadOnly ----------------

F32, I32, BOOL = DType.F32, DType.I32, DType.BOOL


def _others(s: Session) -> dict[str, Tensor]:
    return {
        "f": s.random((4, 4), seed=50), "i": s.random((4, 4), I32, seed=51),
        "b": s.random((4, 4), BOOL, seed=52), "idx": s.tensor([[0, 1, 2, 3]] * 4),
        "row": s.tensor([2, 0]), "m": s.random((4, 4), seed=53),
    }


# (name, subject dtype, subject shape, call(make, others)); make() returns the subject.
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


@pytest.mark.parametrize("name,dtype,shape,call", ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
def test_frontend_entry_point_status_follows_references(name, dtype, shape, call):
    s = Session(executor=None)
    others = _others(s)
    held = s.random(shape, dtype, seed=1)
    made: list[int] = []

    def make_temporary() -> Tensor:
        t = s.random(shape, dtype)
        made.append(t.id)
        return t

    results = []
    for make, expected in ((lambda: held, RO), (make_temporary, RW)):
        start = len(s.stream.items)
        results.append(call(make, others))
        subject = made[-1] if made else held.id
        uses = [t for item in s.stream.items[start:]
                if isinstance(item, OperationIr) and item.name != "Drop"
                for t in item.inputs() if t.id == subject]
        assert uses[0].status is expected, (name, expected)
    s.sync(*results)
    stream = s.close()
    validate_stream(stream)
    values = EagerExecutor().run_stream(stream)
    assert set(values) == {r.id for r in results}


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
    ops = [op for op in _ops(s) if op.name != "Drop"]
    assert [op.name for op in ops] == [name for _, name, _ in cases]
    assert [t.dtype for t, _, _ in cases] == [dtype for _, _, dtype in cases]
    assert ops[0].scalars() == (1,) and isinstance(ops[0].scalars()[0], int)
    assert ops[14].scalars() == (3.0,) and isinstance(ops[14].scalars()[0], float)
    assert f.int().dtype is DType.I32 and f.cast("f32") is f  # same dtype: the same handle
    validate_stream(s.stream)


@pytest.mark.parametrize("build,error,field", [
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
])
def test_frontend_bad_op_raises_and_records_nothing(build, error, field):
    s = Session(executor=None)
    with pytest.raises(error) as err:
        build(s)
    assert getattr(err.value, "field", field) == field
    assert getattr(err.value, "op_index", 0) == 0
    assert [item.name for item in _ops(s)] in ([], ["Drop"], ["Drop", "Drop"])
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
    assert got.dtype == np.float32 and _names(s)[-1] == "Sync"


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
