"""The fusers' boundary: any op gives refimpl's result or refimpl's error class, or (an op of
the wrong type) a TypeError; never a crash, and a rejected op leaves the fuser as it was.

The contract (docs/fastplan.md, "Boundary"): fusers take relative ``OperationIr``s whose op is
an entry of ``refimpl.ops.OPS``, whose operand struct is the op's, whose tensors are
``TensorIr`` with ``int`` ids and a tuple of ``int`` shape ids, a ``DType`` and a
``TensorStatus``, and whose ints fit in 64 bits. Within it, fastplan equals refimpl, errors
included; outside it, fastplan raises ``TypeError`` (``OverflowError`` for huge ints) before
touching any state. refimpl trusts its input and fails wherever Python first trips on it.
(The planner-level boundary, whole streams, is ``test_boundary.py``.)
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
from refimpl.planner.engine.builder import Refusal
from refimpl.planner.engine.settings import ELEMENTWISE_SETTINGS
from tests.planner.fuser_ops import NI, RO, RW, op, relative, t, unary_chain

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

FUSERS = (("fusers.elemwise", "ElementWiseFuser"), ("fusers.matmul", "MatmulFuser"),
          ("fusers.reduce", "ReduceFuser"), ("fusers.reduce_broadcasted", "ReduceBroadcastedFuser"),
          ("fusers.nhwc", "NHWCRelayoutFuser"))


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


# --- inside the contract: refimpl's result or refimpl's error class -------------------------------


def both(module: str, name: str, max_bindings: int = 28):
    return (make("refimpl.planner", module, name, max_bindings),
            make("fastplan", module, name, max_bindings))


def assert_same_run(ops, max_bindings: int = 28):
    for module, name in FUSERS:
        reference, twin = both(module, name, max_bindings)
        for o in ops:
            assert outcome(twin.fuse, o) == outcome(reference.fuse, o), name
            assert state(twin) == state(reference), name


def test_engine_boundary_rank0_swap_dims_raises_index_error_in_both():
    # a rank-0 first output leaves the reference shape empty, so the rank-0 view output fits
    shape = (0, 1)
    ops = [op("NumericFloat.AddScalar", lhs=t(0, shape), rhs=0, out=t(1, (), NI)),
           op("BaseFloat.SwapDims", input=t(0, shape, RW), out=t(2, (), NI), dim1=0, dim2=0)]
    reference, twin = both("fusers.elemwise", "ElementWiseFuser")
    for fuser in (reference, twin):
        fuser.fuse(ops[0])
        with pytest.raises(IndexError):
            fuser.fuse(ops[1])
    assert state(twin) == state(reference)
    assert_same_run(ops)


def test_engine_boundary_non_int_scalar_raises_type_error_in_both():
    bad = op("NumericFloat.MulScalar", lhs=t(0, (0, 1)), rhs=2.0, out=t(1, (0, 1), NI))
    for package in ("refimpl.planner", "fastplan"):
        with pytest.raises(TypeError, match="placeholder"):
            make(package, "fusers.elemwise", "ElementWiseFuser").fuse(bad)
    assert_same_run([exp(5, 0), bad])


@pytest.mark.parametrize("package", ["refimpl.planner", "fastplan"])
def test_engine_boundary_trace_fuser_runtime_errors_match(package):
    builder = importlib.import_module(f"{package}.engine.builder")
    fuser = builder.TraceFuser(ELEMENTWISE_SETTINGS)
    indexed = TensorIr(3, (1, 2), DType.F32, RO)
    fuser.input_indexed(indexed)
    with pytest.raises(RuntimeError):
        fuser.output_unhandled(indexed)
    with pytest.raises(RuntimeError):
        fuser.input_unhandled(indexed)
    with pytest.raises(Refusal):
        fuser.input(indexed)
    with pytest.raises(IndexError):
        fuser.block_local_input(TensorIr(4, (1,), DType.F32, RO), 3, False)
    with pytest.raises(TypeError):
        fuser.scalar(1.5, DType.F32)


def test_engine_boundary_negative_ids_and_large_values_match():
    ops = [op("NumericFloat.Add", lhs=t(-5, (-1, 2**40)), rhs=t(2**62, (-1, 2**40)),
              out=t(-(2**63), (-1, 2**40), NI)),
           op("Float.Exp", input=t(-(2**63), (-1, 2**40), RW), out=t(7, (-1, 2**40), NI))]
    assert_same_run(ops)


def test_engine_boundary_large_ranks_cats_and_drops_match():
    rank = 40
    shape = tuple(range(1, rank + 1))
    big_cat = op("BaseFloat.Cat", tensors=tuple(t(i, shape) for i in range(300)), dim=0,
                 out=t(1000, shape, NI))
    drops = [op("Drop", tensor=t(2000 + i, (), RW)) for i in range(500)]
    assert_same_run([exp(0, 1, shape), big_cat] + drops, max_bindings=1000)
    assert_same_run([exp(0, 1, shape)] + drops + [big_cat], max_bindings=50)


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
