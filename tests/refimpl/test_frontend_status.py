"""refimpl.frontend.status: statuses from reference counts and handle counts, and Drop.

Every entry point of the Tensor API reads a temporary subject ``ReadWrite`` and a held one
``ReadOnly``. Streams are built outside ``assert`` statements: pytest's assertion rewriting
keeps subexpressions alive, which would make temporaries look held.
"""

from __future__ import annotations

import numpy as np
import pytest

from refimpl.dtypes import DType
from refimpl.eager import EagerExecutor
from refimpl.errors import TensorIdError
from refimpl.frontend import Session, Tensor, cat, refcount_calibration, status
from refimpl.ir import OperationIr, TensorStatus
from refimpl.validate import validate_stream
from tests.refimpl.helpers import input_uses, item_names, recorded_ops

RO, RW = TensorStatus.ReadOnly, TensorStatus.ReadWrite


# --- statuses -------------------------------------------------------------------------------


def test_frontend_named_operands_are_read_only_and_temporaries_read_write():
    s = Session(executor=None)
    a, b, c = (s.random((4, 6), seed=k) for k in range(3))
    y = (a * b + c).exp()
    mul, add, exp = recorded_ops(s)
    assert (mul.name, add.name, exp.name) == ("NumericFloat.Mul", "NumericFloat.Add", "Float.Exp")
    assert input_uses(mul) == [(0, RO), (1, RO)]
    assert input_uses(add) == [(3, RW), (2, RO)]
    assert input_uses(exp) == [(4, RW)]
    assert y.id == 5 and exp.desc.out.status is TensorStatus.NotInit
    validate_stream(s.stream)


def test_frontend_temporary_first_operand_is_read_write():
    s = Session(executor=None)
    b, c = s.random((4, 6), seed=1), s.random((4, 6), seed=2)
    y = (s.random((4, 6), seed=0) * b + c).exp()
    mul = recorded_ops(s)[0]
    assert input_uses(mul) == [(2, RW), (0, RO)]
    assert y.shape == (4, 6)
    assert "Drop" not in item_names(s)  # consumed with ReadWrite: no Drop when it is collected
    validate_stream(s.stream)


def test_frontend_moved_operand_is_read_write_and_handle_is_dead():
    s = Session(executor=None)
    a, b = s.random((2, 2)), s.random((2, 2))
    y = a.move() * b
    assert input_uses(recorded_ops(s)[0]) == [(0, RW), (1, RO)]
    with pytest.raises(TensorIdError, match="tensor 0 was moved"):
        a.exp()
    assert y.id == 2


def test_frontend_del_appends_drop_with_read_write_status():
    s = Session(executor=None)
    a = s.random((3, 5))
    y = a * 2.0
    del a
    drop = recorded_ops(s)[-1]
    assert drop.name == "Drop"
    assert (drop.desc.tensor.id, drop.desc.tensor.status) == (0, RW)
    assert drop.desc.tensor.shape == (3, 5)
    assert y.id == 1
    validate_stream(s.stream)


def test_frontend_rebinding_reads_read_only_then_drops():
    s = Session(executor=None)
    x = s.random((2, 2))
    x = x + 1.0
    assert item_names(s) == ["NumericFloat.AddScalar", "Drop"]
    assert input_uses(recorded_ops(s)[0]) == [(0, RO)]
    x = x.move() + 1.0  # burn's moving add_scalar: consumed, no Drop
    assert item_names(s) == ["NumericFloat.AddScalar", "Drop", "NumericFloat.AddScalar"]
    assert input_uses(recorded_ops(s)[2]) == [(1, RW)]
    assert x.id == 2


def test_frontend_clone_makes_uses_read_only_until_the_last_handle_dies():
    s = Session(executor=None)
    a, b = s.random((2, 2)), s.random((2, 2))
    kept = a.clone()
    assert kept.id == a.id
    y = a.move() * b  # the only *Python* reference, but a clone still holds tensor 0
    assert input_uses(recorded_ops(s)[0]) == [(0, RO), (1, RO)]
    assert "Drop" not in item_names(s)
    del kept  # the last handle of a tensor never consumed ReadWrite
    assert item_names(s)[-1] == "Drop" and recorded_ops(s)[-1].desc.tensor.id == 0
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
    assert input_uses(recorded_ops(s)[0]) == [(0, RO), (0, RO)]
    assert y.id == 1


def test_frontend_consumed_handle_cannot_be_used(monkeypatch):
    # Force the method path to see every count as a temporary: the named x is consumed.
    monkeypatch.setitem(status._TEMPORARY, "method", 10**6)
    s = Session(executor=None)
    x = s.random((2, 2))
    y = x.exp()
    assert input_uses(recorded_ops(s)[0]) == [(0, RW)]
    with pytest.raises(TensorIdError, match=r"tensor 0 was consumed \(ReadWrite\) by op 0") as err:
        x.exp()
    assert err.value.op_index == 1 and err.value.field == "input"
    assert y.id == 1


def test_frontend_calibration_tells_temporaries_from_named_tensors():
    measured = refcount_calibration()
    assert set(measured) == {"method", "binary", "reflected", "unary", "compare", "cat",
                             "cat_list"}
    for path, (temporary, named) in measured.items():
        assert named == temporary + 1, path


def test_frontend_cat_statuses_follow_the_list():
    s = Session(executor=None)
    a = s.random((1, 2))
    out = cat([s.random((1, 2)), a], 0)
    assert input_uses(recorded_ops(s)[0]) == [(1, RW), (0, RO)]
    held = [s.random((1, 2)), s.random((1, 2))]  # the caller keeps the list: all ReadOnly
    out2 = Session.cat(held, 1)
    assert input_uses(recorded_ops(s)[1]) == [(3, RO), (4, RO)]
    out3 = s.cat((s.random((1, 2)), a), 0)  # a tuple literal is a temporary like a list
    assert input_uses(recorded_ops(s)[2]) == [(6, RW), (0, RO)]
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
