"""burn-fusion's test doubles, for the search and cache tests (notes §10.2).

burn counterpart: ``crates/burn-fusion/src/stream/execution/tests.rs``
(``TestOptimizationBuilder``, ``TestOptimization``, ``TestSegment``, ``operation_1..3``) and
``crates/burn-fusion/src/search/testing.rs`` (``add``, ``add_rw``).

The mock fuser follows a fixed pattern of ops: it is ``Open`` while the ops it has seen are a
strict prefix of the pattern, ``Closed`` otherwise; it is ready (score = pattern length) once
the pattern has been seen in full at the start, and its ``len()`` is always the pattern length.
"""

from __future__ import annotations

from dataclasses import dataclass

from refimpl.dtypes import DType
from refimpl.ir import BinaryOpIr, OperationIr, ScalarOpIr, TensorIr, TensorStatus, UnaryOpIr
from refimpl.ops import op_named
from refimpl.planner.engine.fuser import FuserProperties, FuserStatus
from refimpl.planner.search.strategy import Composed, Operations, Optimization, leaves

SHAPE = (32, 32)


def tensor(tid: int, status: TensorStatus = TensorStatus.ReadOnly) -> TensorIr:
    return TensorIr(tid, SHAPE, DType.F32, status)


def add(lhs: int, rhs: int, out: int) -> OperationIr:
    """``NumericFloat.Add`` on ``[32, 32]``, every tensor ReadOnly (burn ``testing::add``)."""
    return OperationIr(op_named("NumericFloat.Add"),
                       BinaryOpIr(tensor(lhs), tensor(rhs), tensor(out)))


def add_rw(lhs: int, rhs: int, out: int) -> OperationIr:
    """Like ``add`` but ``lhs`` read ReadWrite (its last use: frees it)."""
    return OperationIr(op_named("NumericFloat.Add"),
                       BinaryOpIr(tensor(lhs, TensorStatus.ReadWrite), tensor(rhs), tensor(out)))


def operation_1() -> OperationIr:
    return OperationIr(op_named("NumericFloat.Add"), BinaryOpIr(
        tensor(0), tensor(1), tensor(2, TensorStatus.NotInit)))


def operation_2() -> OperationIr:
    return OperationIr(op_named("NumericFloat.AddScalar"), ScalarOpIr(
        tensor(0), 5.0, tensor(2, TensorStatus.NotInit)))


def operation_3() -> OperationIr:
    return OperationIr(op_named("Float.Log"), UnaryOpIr(
        tensor(0), tensor(0, TensorStatus.NotInit)))


@dataclass(frozen=True)
class TestOptimization:
    """What the mock fuser finishes into."""

    __test__ = False
    builder_id: int
    size: int

    @property
    def name(self) -> str:
        return "TestOptimization"

    def len(self) -> int:
        return self.size

    # What a plan step reads from an optimization (the mock fuses nothing real).
    def global_inputs(self) -> tuple[int, ...]:
        return ()

    def global_outputs(self) -> tuple[int, ...]:
        return ()

    def block_op_names(self) -> tuple[tuple[str, ...], ...]:
        return ()


class TestOptimizationBuilder:
    """The pattern-following mock fuser (burn ``TestOptimizationBuilder``)."""

    __test__ = False

    def __init__(self, builder_id: int, pattern: list[OperationIr]):
        self.builder_id = builder_id
        self.pattern = list(pattern)
        self.actual: list[OperationIr] = []

    @property
    def name(self) -> str:
        return f"Test{self.builder_id}"

    def fuse(self, operation: OperationIr) -> None:
        self.actual.append(operation)

    def finish(self) -> TestOptimization:
        return TestOptimization(self.builder_id, self.len())

    def reset(self) -> None:
        self.actual = []

    def status(self) -> FuserStatus:
        if len(self.actual) < len(self.pattern) and \
                self.actual == self.pattern[: len(self.actual)]:
            return FuserStatus.Open
        return FuserStatus.Closed

    def properties(self) -> FuserProperties:
        if len(self.actual) < len(self.pattern):
            return FuserProperties(0, False)
        if self.actual[: len(self.pattern)] != self.pattern:
            return FuserProperties(0, False)
        return FuserProperties(len(self.pattern), True)

    def len(self) -> int:
        return len(self.pattern)

    def clone(self) -> TestOptimizationBuilder:
        other = TestOptimizationBuilder(self.builder_id, self.pattern)
        other.actual = list(self.actual)
        return other


def builders(*patterns: list[OperationIr]) -> list[TestOptimizationBuilder]:
    """One mock fuser per pattern, ids 0, 1, ..."""
    return [TestOptimizationBuilder(i, p) for i, p in enumerate(patterns)]


def optimization(builder_id: int, size: int, ordering, score: int) -> Optimization:
    return Optimization(TestOptimization(builder_id, size), tuple(ordering), score)


def operations(ordering) -> Operations:
    return Operations(tuple(ordering))


def composed(*items) -> Composed:
    return Composed(tuple(items))


class TestSegment:
    """A segment over a plain list of (already relative) ops, recording executed plan ids
    (burn ``TestSegment``): executing drains as many leading ops as the strategy covers."""

    __test__ = False

    def __init__(self, ops: list[OperationIr], executed: list[int]):
        self.ops = ops
        self.executed = executed

    def operations(self) -> list[OperationIr]:
        return self.ops

    def execute(self, plan_id: int, store) -> None:
        self._drain(store.get(plan_id).optimization.strategy)
        self.executed.append(plan_id)

    def execute_unfused(self, block_optimization) -> None:
        self._drain(block_optimization.strategy)

    def _drain(self, strategy) -> None:
        for leaf in leaves(strategy):
            count = leaf.opt.len() if isinstance(leaf, Optimization) else len(leaf.ordering)
            del self.ops[:count]
