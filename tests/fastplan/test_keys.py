"""fastplan's op keys (``fastplan/_keys.pyx``): two relative ops have equal keys exactly when
they are ``==``. Checked through ``ExecutionPlanStore.find`` (the plan index is keyed by the
first op's key), against refimpl's store, which compares the ops themselves."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import fastplan
from refimpl.ir import OperationIr
from refimpl.planner.cache import ExecutionPlan
from refimpl.planner.cache import ExecutionPlanStore as ReferenceStore
from refimpl.planner.relative import OperationConverter, to_relative
from refimpl.planner.strategy import BlockOptimization, Operations
from refimpl.stream import stream_to_json
from refimpl.strategies import streams
from tests.planner.burn_mocks import operation_1, operation_2, operation_3

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")


def _plan(op: OperationIr) -> ExecutionPlan:
    return ExecutionPlan((op,), [], BlockOptimization(Operations((0,)), (0,)))


def _index(store_cls, ops: list) -> list[list[int]]:
    store = store_cls()
    for op in ops:
        store.add(_plan(op))
    return [store.find(op) for op in ops]


def _relative(stream) -> list[OperationIr]:
    converter = OperationConverter()
    return [to_relative(op, converter) for op in stream.ops]


def _with_scalar(op: OperationIr, value) -> OperationIr:
    return OperationIr(op.op, dataclasses.replace(op.desc, rhs=value))


@given(first=streams(max_ops=6), second=streams(max_ops=6))
def test_keys_equal_exactly_when_ops_are_equal(first, second):
    note(stream_to_json(first))
    note(stream_to_json(second))
    ops = _relative(first) + _relative(second)
    twin = fastplan.planner_module("cache").ExecutionPlanStore
    assert _index(twin, ops) == _index(ReferenceStore, ops)


@pytest.mark.parametrize("a, b", [(5, 5.0), (1, True), (0, -0.0), (2.5, 2.5), (2**70, 2**70),
                                  (2**70, float(2**70)), ("x", "x")])
def test_keys_scalar_values_compare_as_python_does(a, b):
    ops = [_with_scalar(operation_2(), a), _with_scalar(operation_2(), b),
           _with_scalar(operation_2(), 7)]
    twin = fastplan.planner_module("cache").ExecutionPlanStore
    assert _index(twin, ops) == _index(ReferenceStore, ops)


def test_keys_distinguish_burns_test_operations():
    ops = [operation_1(), operation_2(), operation_3(), operation_1()]
    twin = fastplan.planner_module("cache").ExecutionPlanStore
    assert _index(twin, ops) == _index(ReferenceStore, ops) == [[0, 3], [1], [2], [0, 3]]
