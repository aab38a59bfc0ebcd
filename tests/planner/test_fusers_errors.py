"""The fusers within their contract, on refimpl and on fastplan (the ``planner_impl`` fixture):
any op gives refimpl's result or refimpl's error class, and leaves the fuser in refimpl's
state: rank-0 views, scalars that are no placeholder, the trace builder's runtime errors,
negative ids and values past 32 bits, large ranks, long cats and many drops.

The contract (docs/fastplan.md, "Boundary"): fusers take relative ``OperationIr``s whose op is
an entry of ``refimpl.ops.OPS``, whose operand struct is the op's, whose tensors are
``TensorIr`` with ``int`` ids and a tuple of ``int`` shape ids, a ``DType`` and a
``TensorStatus``, and whose ints fit in 64 bits. Outside it fastplan raises ``TypeError``
before touching any state (tests/fastplan/test_fusers_boundary.py).
"""

from __future__ import annotations

import importlib

import pytest

from refimpl.dtypes import DType
from refimpl.ir import TensorIr
from refimpl.planner.engine.builder import Refusal
from refimpl.planner.engine.settings import ELEMENTWISE_SETTINGS
from tests.planner.fuser_ops import NI, RO, RW, op, t

FUSERS = (("fusers.elemwise", "ElementWiseFuser"), ("fusers.matmul", "MatmulFuser"), ("fusers.reduce", "ReduceFuser"),
          ("fusers.reduce_broadcasted", "ReduceBroadcastedFuser"), ("fusers.nhwc", "NHWCRelayoutFuser"))


def make(module, name: str, max_bindings: int = 28):
    """Fuser ``name`` of ``module`` (refimpl's or a twin's)."""
    return getattr(module, name)(max_bindings)


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


def both(impl, module: str, name: str, max_bindings: int = 28):
    """refimpl's fuser ``name`` of ``module`` and ``impl``'s."""
    return (make(importlib.import_module(f"refimpl.planner.{module}"), name, max_bindings),
            make(getattr(impl, module), name, max_bindings))


def assert_same_run(impl, ops, max_bindings: int = 28):
    for module, name in FUSERS:
        reference, twin = both(impl, module, name, max_bindings)
        for o in ops:
            assert outcome(twin.fuse, o) == outcome(reference.fuse, o), name
            assert state(twin) == state(reference), name


def test_engine_boundary_rank0_swap_dims_raises_index_error_in_both(planner_impl):
    # a rank-0 first output leaves the reference shape empty, so the rank-0 view output fits
    shape = (0, 1)
    ops = [op("NumericFloat.AddScalar", lhs=t(0, shape), rhs=0, out=t(1, (), NI)),
           op("BaseFloat.SwapDims", input=t(0, shape, RW), out=t(2, (), NI), dim1=0, dim2=0)]
    reference, twin = both(planner_impl, "fusers.elemwise", "ElementWiseFuser")
    for fuser in (reference, twin):
        fuser.fuse(ops[0])
        with pytest.raises(IndexError):
            fuser.fuse(ops[1])
    assert state(twin) == state(reference)
    assert_same_run(planner_impl, ops)


def test_engine_boundary_non_int_scalar_raises_type_error_in_both(planner_impl):
    bad = op("NumericFloat.MulScalar", lhs=t(0, (0, 1)), rhs=2.0, out=t(1, (0, 1), NI))
    for elemwise in (importlib.import_module("refimpl.planner.fusers.elemwise"), planner_impl.fusers.elemwise):
        with pytest.raises(TypeError, match="placeholder"):
            make(elemwise, "ElementWiseFuser").fuse(bad)
    assert_same_run(planner_impl, [exp(5, 0), bad])


def test_engine_boundary_trace_fuser_runtime_errors_match(planner_impl):
    builder = planner_impl.engine.builder
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


def test_engine_boundary_negative_ids_and_large_values_match(planner_impl):
    ops = [op("NumericFloat.Add", lhs=t(-5, (-1, 2**40)), rhs=t(2**62, (-1, 2**40)),
              out=t(-(2**63), (-1, 2**40), NI)),
           op("Float.Exp", input=t(-(2**63), (-1, 2**40), RW), out=t(7, (-1, 2**40), NI))]
    assert_same_run(planner_impl, ops)


def test_engine_boundary_large_ranks_cats_and_drops_match(planner_impl):
    rank = 40
    shape = tuple(range(1, rank + 1))
    big_cat = op("BaseFloat.Cat", tensors=tuple(t(i, shape) for i in range(300)), dim=0,
                 out=t(1000, shape, NI))
    drops = [op("Drop", tensor=t(2000 + i, (), RW)) for i in range(500)]
    assert_same_run(planner_impl, [exp(0, 1, shape), big_cat] + drops, max_bindings=1000)
    assert_same_run(planner_impl, [exp(0, 1, shape)] + drops + [big_cat], max_bindings=50)
