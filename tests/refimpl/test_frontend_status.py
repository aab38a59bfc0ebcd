"""refimpl.frontend.status: statuses from reference counts and handle counts, and Drop.

Every entry point of the Tensor API reads a temporary subject ``ReadWrite`` and a held one
``ReadOnly``. Streams are built outside ``assert`` statements: pytest's assertion rewriting
keeps subexpressions alive, which would make temporaries look held.
"""

from __future__ import annotations

import pytest

from refimpl.eager import EagerExecutor
from refimpl.errors import TensorIdError
from refimpl.frontend import Session, Tensor, cat, refcount_calibration, status
from refimpl.ir import OperationIr, TensorStatus
from refimpl.validate import validate_stream
from tests.refimpl.helpers import (
    ENTRY_POINTS,
    entry_point_others,
    input_uses,
    item_names,
    recorded_ops,
)

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

@pytest.mark.parametrize("name,dtype,shape,call", ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
def test_frontend_entry_point_status_follows_references(name, dtype, shape, call):
    s = Session(executor=None)
    others = entry_point_others(s)
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
