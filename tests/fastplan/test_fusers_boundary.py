"""The fusers' boundary in fastplan: an op of the wrong type raises a TypeError (an
``OverflowError`` for huge ints) and leaves the fuser as it was; anything at all never crashes.

The contract (docs/fastplan.md, "Boundary"): fusers take relative ``OperationIr``s whose op is
an entry of ``refimpl.ops.OPS``, whose operand struct is the op's, whose tensors are
``TensorIr`` with ``int`` ids and a tuple of ``int`` shape ids, a ``DType`` and a
``TensorStatus``, and whose ints fit in 64 bits. Within it, fastplan equals refimpl, errors
included (checked on both twins: tests/planner/test_fusers_errors.py); outside it, fastplan
raises ``TypeError`` before touching any state. refimpl trusts its input and fails wherever
Python first trips on it. (The planner-level boundary, whole streams, is ``test_boundary.py``.)
"""

from __future__ import annotations

import dataclasses
import importlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastplan
from refimpl.dtypes import DType
from refimpl.ir import OperationIr, TensorIr, TensorStatus
from refimpl.ops import OPS, op_named
from tests.planner.fuser_ops import NI, RO, op, relative, t, unary_chain

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

FUSERS = (("fusers.elemwise", "ElementWiseFuser"), ("fusers.matmul", "MatmulFuser"), ("fusers.reduce", "ReduceFuser"),
          ("fusers.reduce_broadcasted", "ReduceBroadcastedFuser"), ("fusers.nhwc", "NHWCRelayoutFuser"))


def make(package: str, module: str, name: str, max_bindings: int = 28):
    return getattr(importlib.import_module(f"{package}.{module}"), name)(max_bindings)


def outcome(call, *args):
    """The result of ``call(*args)``, or the class of what it raised."""
    try:
        return ("ok", call(*args))
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return ("raised", type(exc))


def state(fuser):
    return (fuser.status(), fuser.len(), fuser.properties(), fuser.closed_reason,
            outcome(fuser.finish) if fuser.properties().ready else None)


def exp(tid_in, tid_out, shape=(0, 1), status=RO):
    return op("Float.Exp", input=t(tid_in, shape, status), out=t(tid_out, shape, NI))


# --- outside the contract: TypeError, state untouched ---------------------------------------------


def _garbage_ops():
    good = exp(0, 1)
    desc = good.desc
    yield "not an OperationIr", "Float.Exp"
    yield "foreign desc", OperationIr(good.op, op_named("NumericFloat.Add").struct(
        lhs=desc.input, rhs=desc.input, out=desc.out))
    yield "str id", OperationIr(good.op, dataclasses.replace(
        desc, input=TensorIr("0", (0, 1), DType.F32, RO)))
    yield "list shape", OperationIr(good.op, dataclasses.replace(
        desc, input=TensorIr(0, [0, 1], DType.F32, RO)))
    yield "float shape id", OperationIr(good.op, dataclasses.replace(
        desc, input=TensorIr(0, (0, 1.0), DType.F32, RO)))
    yield "str dtype", OperationIr(good.op, dataclasses.replace(
        desc, input=TensorIr(0, (0, 1), "f32", RO)))
    yield "str status", OperationIr(good.op, dataclasses.replace(
        desc, input=TensorIr(0, (0, 1), DType.F32, "ReadOnly")))
    yield "not a tensor", OperationIr(good.op, dataclasses.replace(desc, input=7))
    yield "cat of a list of ints", OperationIr(op_named("BaseFloat.Cat"), op_named(
        "BaseFloat.Cat").struct(tensors=(1, 2), dim=0, out=desc.out))
    yield "op not in the table", OperationIr(dataclasses.replace(good.op), desc)


@pytest.mark.parametrize("module, name", FUSERS)
@pytest.mark.parametrize("label, garbage", list(_garbage_ops()))
def test_engine_boundary_wrong_types_raise_type_error_and_change_nothing(module, name, label,
                                                                         garbage):
    prefix = relative(unary_chain(3))
    fuser, untouched = make("fastplan", module, name), make("fastplan", module, name)
    for o in prefix:
        fuser.fuse(o)
        untouched.fuse(o)
    if fuser.status().name == "Closed":
        fuser.fuse(garbage)  # a closed fuser ignores every op, garbage included (as refimpl)
    else:
        with pytest.raises(TypeError):
            fuser.fuse(garbage)
    assert state(fuser) == state(untouched), label
    for o in relative(unary_chain(2, first=10)):
        fuser.fuse(o)
        untouched.fuse(o)
    assert state(fuser) == state(untouched), label


@pytest.mark.parametrize("module, name", FUSERS)
def test_engine_boundary_ints_beyond_64_bits_raise_overflow(module, name):
    fuser = make("fastplan", module, name)
    with pytest.raises(OverflowError):
        fuser.fuse(exp(2**70, 1))
    assert state(fuser) == state(make("fastplan", module, name))


# --- anything at all: never a crash ---------------------------------------------------------------


_VALUES = st.one_of(st.none(), st.integers(-(2**80), 2**80), st.floats(allow_nan=True),
                    st.text(max_size=3), st.lists(st.integers(-3, 3), max_size=4),
                    st.tuples(st.integers(-3, 3)), st.sampled_from(list(DType)),
                    st.sampled_from(list(TensorStatus)))
_TENSORS = st.builds(TensorIr, _VALUES | st.integers(0, 5),
                     _VALUES | st.tuples(st.integers(-3, 3), st.integers(-3, 3)),
                     _VALUES | st.sampled_from(list(DType)),
                     _VALUES | st.sampled_from(list(TensorStatus)))


@st.composite
def junk_ops(draw):
    entry = draw(st.sampled_from(OPS))
    fields = {name: draw(_TENSORS | _VALUES | st.lists(_TENSORS, max_size=3).map(tuple))
              for name, _ in entry.struct.SCHEMA}
    return OperationIr(entry, entry.struct(**fields))


@given(ops=st.lists(junk_ops(), min_size=1, max_size=12))
@settings(max_examples=200)
def test_engine_boundary_junk_never_crashes(ops):
    for module, name in FUSERS:
        fuser = make("fastplan", module, name, 4)
        for o in ops:
            result = outcome(fuser.fuse, o)
            assert result[0] == "ok" or issubclass(result[1], (
                TypeError, OverflowError, ValueError, IndexError, KeyError, RuntimeError))
        for call in (fuser.status, fuser.len, fuser.properties, fuser.estimate_bindings,
                     fuser.clone, fuser.finish, fuser.reset):
            result = outcome(call)
            assert result[0] == "ok" or issubclass(result[1], RuntimeError)
