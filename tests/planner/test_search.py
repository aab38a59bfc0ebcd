"""burn-fusion's search and processor tests, ported with burn's mock fuser (notes §10.2), on
refimpl and on fastplan (the ``planner_impl`` fixture).

burn counterparts: ``search/optimization/tests.rs`` (StreamOptimizer / BlocksOptimizer),
``search/optimization/stream.rs`` tests (dependent-op stop paths) and
``stream/execution/tests.rs`` (Processor + Policy + Explorer end to end).
"""

from __future__ import annotations

from refimpl.planner.search.strategy import Composed, Operations
from refimpl.planner.stream.cache import Always, ExecutionMode, OnOperations, OnSync
from tests.planner.burn_mocks import (
    TestSegment,
    add,
    builders,
    composed,
    operation_1,
    operation_2,
    operation_3,
    operations,
    optimization,
)

A1 = add(100, 101, 102)
A2 = add(102, 103, 104)
A3 = add(104, 105, 106)
B1 = add(200, 201, 202)
B2 = add(202, 203, 204)


def optimizer(impl, *patterns):
    return impl.search.search.StreamOptimizer(builders(*patterns))


def run(impl, ops, *patterns):
    search = optimizer(impl, *patterns)
    for op in ops:
        search.register(op)
    return search.optimize(ops)


# --- StreamOptimizer / BlocksOptimizer (search/optimization/tests.rs) ------------------------


def test_search_single_block_fuses_full_stream(planner_impl):
    res = run(planner_impl, [A1, A2], [A1, A2])
    assert res.ordering == (0, 1)
    assert res.strategy == optimization(0, 2, [0, 1], 2)


def test_search_contiguous_independent_blocks_fuse_both(planner_impl):
    res = run(planner_impl, [A1, A2, B1, B2], [A1, A2], [B1, B2])
    assert res.ordering == (0, 1, 2, 3)
    assert res.strategy == composed(optimization(0, 2, [0, 1], 2), optimization(1, 2, [2, 3], 2))


def test_search_interleaved_independent_blocks_fuse_both(planner_impl):
    res = run(planner_impl, [A1, B1, A2, B2], [A1, A2], [B1, B2])
    assert res.ordering == (0, 2, 1, 3)
    assert res.strategy == composed(optimization(0, 2, [0, 2], 2), optimization(1, 2, [1, 3], 2))


def test_search_interleaved_blocks_with_merged_pattern_fuse_full(planner_impl):
    res = run(planner_impl, [A1, B1, A2, B2], [A1, A2, B1, B2])
    assert res.ordering == (0, 2, 1, 3)
    assert res.strategy == optimization(0, 4, [0, 2, 1, 3], 4)


def test_search_interleaved_blocks_single_builder_preserves_other_ops(planner_impl):
    res = run(planner_impl, [A1, B1, A2, B2], [A1, A2])
    assert res.ordering == (0, 2, 1, 3)
    assert res.strategy == composed(optimization(0, 2, [0, 2], 2), operations([1, 3]))


def test_search_within_block_order_is_not_reordered(planner_impl):
    res = run(planner_impl, [A1, A2], [A2, A1])
    assert res.ordering == (0, 1)
    assert res.strategy == operations([0, 1])


def test_search_pattern_longer_than_stream_stays_optimizing(planner_impl):
    search = optimizer(planner_impl, [A1, A2, A3])
    search.register(A1)
    search.register(A2)
    assert search.still_optimizing()
    res = search.optimize([A1, A2])
    assert res.ordering == (0, 1)
    assert res.strategy == operations([0, 1])


def test_search_ready_and_open_coexist_keeps_optimizing(planner_impl):
    search = optimizer(planner_impl, [A1, A2], [A1, A2, A3])
    search.register(A1)
    search.register(A2)
    assert search.still_optimizing()
    res = search.optimize([A1, A2])
    assert res.ordering == (0, 1)
    assert res.strategy == optimization(0, 2, [0, 1], 2)


def test_search_commit_picks_highest_score_ready_builder(planner_impl):
    search = optimizer(planner_impl, [A1, A2], [A1, A2, A3])
    for op in (A1, A2, A3):
        search.register(op)
    assert not search.still_optimizing()
    res = search.optimize([A1, A2, A3])
    assert res.ordering == (0, 1, 2)
    assert res.strategy == optimization(1, 3, [0, 1, 2], 3)


def test_search_all_closed_without_ready_bails_out(planner_impl):
    search = optimizer(planner_impl, [A1, B1])
    search.register(A1)
    search.register(A2)
    assert not search.still_optimizing()
    res = search.optimize([A1, A2])
    assert res.ordering == (0, 1)
    assert res.strategy == operations([0, 1])


def test_search_pattern_straddles_incomplete_merged_blocks(planner_impl):
    search = optimizer(planner_impl, [A1, A2, B1, B2])
    for op in (A1, B1, A2):
        search.register(op)
    assert search.still_optimizing()
    res = search.optimize([A1, B1, A2])
    # merged block's registration order: a1 (pos 0), a2 (pos 2), b1 (pos 1)
    assert res.ordering == (0, 2, 1)
    assert res.strategy == operations([0, 2, 1])


def test_search_dependent_block_created_instead_of_stopping(planner_impl):
    c = add(104, 204, 105)  # reads A's 104 and B's 204
    res = run(planner_impl, [A1, A2, B1, B2, c], [A1, A2], [B1, B2])
    assert res.ordering == (0, 1, 2, 3, 4)
    assert res.strategy == composed(
        optimization(0, 2, [0, 1], 2), optimization(1, 2, [2, 3], 2), operations([4]))


def test_search_interior_hole_is_reoptimized_and_ordered(planner_impl):
    # Block A = [a1, a2] fuses only a1 (pattern [a1]); block B = [b1] runs unfused. Position 1
    # is left unresolved before the resolved position 2: a hole, searched again on its own,
    # then repair_order puts it back between its producer and the independent block.
    res = run(planner_impl, [A1, A2, B1], [A1])
    assert res.ordering == (0, 1, 2)
    assert res.strategy == composed(optimization(0, 1, [0], 1), operations([1]), operations([2]))


def test_search_trailing_unresolved_ops_are_left_for_the_next_round(planner_impl):
    res = run(planner_impl, [A1, A2], [A1])
    assert res.ordering == (0,)
    assert res.strategy == optimization(0, 1, [0], 1)


# --- dependent-op stop paths (search/optimization/stream.rs tests) ---------------------------


def test_search_dependent_op_at_max_blocks_stops_when_no_merge_possible(planner_impl):
    c = add(104, 204, 105)
    search = optimizer(planner_impl, [A1, A2], [B1, B2])
    search.max_blocks = 2
    for op in (A1, A2, B1, B2):
        search.register(op)
    assert not search.stopped
    search.register(c)  # both blocks hold a ready fusion: force-merging frees no slot
    assert search.stopped
    res = search.optimize([A1, A2, B1, B2])
    assert res.ordering == (0, 1, 2, 3)
    assert res.strategy == composed(optimization(0, 2, [0, 1], 2), optimization(1, 2, [2, 3], 2))


def test_search_dependent_op_creating_a_cycle_stops_segment(planner_impl):
    from tests.planner.burn_mocks import add_rw

    search = optimizer(planner_impl)
    search.max_blocks = None
    search.register(add_rw(1, 2, 3))  # block A: frees 1, produces 3
    search.register(add(10, 11, 12))  # block B: unrelated
    assert len(search.blocks) == 2
    search._on_dependent_op(add(1, 3, 20))  # reads 1 (freed by A) and 3 (made by A)
    assert search.stopped
    assert len(search.blocks) == 2


def test_search_block_cap_stops_optimizer_at_sixth_independent_block(planner_impl):
    ops = [add(10 * i, 10 * i + 1, 10 * i + 2) for i in range(6)]
    # each block stays open on its own op
    search = optimizer(planner_impl, *[[op, op] for op in ops])
    for op in ops[:5]:
        search.register(op)
    assert len(search.blocks) == 5 and not search.stopped and search.still_optimizing()
    # No room for a sixth block, and no two blocks merge into something still open or
    # newly ready: the optimizer stops and the sixth op is not registered.
    search.register(ops[5])
    assert search.stopped and not search.still_optimizing()
    assert search.length == 5
    res = search.optimize(ops[:5])
    assert res.ordering == (0, 1, 2, 3, 4)
    assert res.strategy == composed(*[operations([i]) for i in range(5)])


# --- Processor end to end (stream/execution/tests.rs) ----------------------------------------


class MockStream:
    """burn's ``TestStream``: a processor over a plain list of (relative) ops."""

    def __init__(self, impl, *patterns):
        self.processor = impl.stream.processor.Processor(builders(*patterns))
        self.store = impl.stream.cache.ExecutionPlanStore()
        self.executed: list[int] = []
        self.ops: list = []

    def add(self, op) -> None:
        self.ops.append(op)
        self.processor.process(TestSegment(self.ops, self.executed), self.store,
                               ExecutionMode.Lazy)

    def sync(self) -> None:
        self.processor.process(TestSegment(self.ops, self.executed), self.store,
                               ExecutionMode.Sync)

    def check(self, queued: int, executions: int, last: int | None = None) -> None:
        assert len(self.ops) == queued
        assert len(self.executed) == executions
        if last is not None:
            assert self.executed[-1] == last

    def plan(self, plan_id: int):
        found = self.store.get(plan_id)
        return list(found.operations), list(found.triggers)


def test_processor_supports_complex_stream(planner_impl):
    o1, o2 = operation_1(), operation_2()
    s = MockStream(planner_impl, [o1, o2], [o2, o2])
    s.add(o1)
    s.check(1, 0)
    s.add(o1)
    s.check(0, 1, last=0)
    assert s.plan(0) == ([o1, o1], [Always()])
    assert s.store.get(0).optimization.strategy == operations([0, 1])
    s.add(o1)
    s.check(1, 1)
    s.add(o2)
    s.check(0, 2, last=1)
    assert s.plan(1) == ([o1, o2], [Always()])
    assert s.store.get(1).optimization.strategy == optimization(0, 2, [0, 1], 2)
    s.add(o2)
    s.check(1, 2)
    s.add(o2)
    s.check(0, 3, last=2)
    assert s.plan(2) == ([o2, o2], [Always()])
    s.add(o1)
    s.check(1, 3)
    s.add(o2)
    s.check(0, 4, last=1)
    s.add(o2)
    s.check(1, 4)
    s.add(o2)
    s.check(0, 5, last=2)
    assert len(s.store) == 3
    assert s.processor.num_explorations == 3
    assert s.processor.num_cache_hits == 2


def test_processor_reuses_basic_operations(planner_impl):
    o1, o3 = operation_1(), operation_3()
    s = MockStream(planner_impl, [o1, operation_2()])
    s.add(o3)
    s.check(0, 1, last=0)
    assert s.plan(0) == ([o3], [Always()])
    s.add(o3)
    s.check(0, 2, last=0)
    assert s.plan(0) == ([o3], [Always()])
    s.add(o1)  # lazily tries the builder's pattern...
    s.add(o3)  # ...which can't match: a new plan with both ops, unfused
    assert s.plan(1) == ([o1, o3], [Always()])
    assert s.store.get(1).optimization.strategy == operations([0, 1])
    s.check(0, 3, last=1)


def test_processor_supports_overlapping_optimizations(planner_impl):
    o1, o2, o3 = operation_1(), operation_2(), operation_3()
    s = MockStream(planner_impl, [o1, o2], [o1, o2, o1, o1])
    for queued, op in enumerate((o1, o2, o1), start=1):
        s.add(op)
        s.check(queued, 0)
    s.add(o2)
    s.check(2, 1, last=0)
    assert s.plan(0) == ([o1, o2], [OnOperations((o1, o2))])
    s.add(o2)
    s.check(0, 3)
    assert s.plan(0) == ([o1, o2], [OnOperations((o1, o2)), OnOperations((o2,))])
    assert s.plan(1) == ([o2], [Always()])
    for queued, op in enumerate((o1, o2, o1), start=1):
        s.add(op)
        s.check(queued, 3)
    s.add(o1)
    s.check(0, 4)
    assert s.plan(2) == ([o1, o2, o1, o1], [Always()])
    for queued, op in enumerate((o1, o2, o1), start=1):
        s.add(op)
        s.check(queued, 4)
    s.sync()  # one plan covering the whole segment: fused pair + the unfused tail
    s.check(0, 5)
    assert s.plan(0) == ([o1, o2], [OnOperations((o1, o2)), OnOperations((o2,))])
    assert s.plan(3) == ([o1, o2, o1], [OnSync()])
    plan3 = s.store.get(3).optimization
    assert plan3.strategy == Composed((optimization(0, 2, [0, 1], 2), Operations((2,))))
    assert plan3.ordering == (0, 1, 2)
    s.add(o3)
    s.check(0, 6, last=4)
    assert s.plan(4) == ([o3], [Always()])
    s.add(o3)
    s.check(0, 7, last=4)


def test_processor_reuses_sync_plan_on_next_pass(planner_impl):
    o1, o2, o3 = operation_1(), operation_2(), operation_3()
    s = MockStream(planner_impl, [o1, o2], [o1, o2, o3, o1])
    for op in (o1, o2, o3):
        s.add(op)
    s.check(3, 0)
    s.sync()
    s.check(0, 1, last=0)
    assert s.processor.num_explorations == 1
    assert s.plan(0) == ([o1, o2, o3], [OnSync()])
    plan = s.store.get(0).optimization
    assert plan.strategy == Composed((optimization(0, 2, [0, 1], 2), Operations((2,))))
    assert plan.ordering == (0, 1, 2)
    for op in (o1, o2, o3):
        s.add(op)
    s.check(3, 1)
    s.sync()
    s.check(0, 2, last=0)
    assert s.processor.num_explorations == 1
    assert s.processor.num_cache_hits == 1


def test_processor_exploration_cap_runs_unfused_without_caching(planner_impl):
    o1, o2 = operation_1(), operation_2()
    s = MockStream(planner_impl, [o1, o2])
    s.processor.explorer.max_explorations = 0
    s.add(o1)
    s.add(o2)
    s.sync()
    assert s.ops == []
    assert len(s.store) == 0
    assert s.executed == []
