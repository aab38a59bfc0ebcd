"""The search's building blocks: dependency graph, blocks, merging and order repair, on
refimpl and on fastplan (the ``planner_impl`` fixture).

burn counterparts: ``search/graph/tests.rs``, ``search/block.rs`` tests, ``search/merging.rs``
tests and the ``repair_order`` tests of ``search/optimization/stream.rs`` (notes §10.2).
"""

from __future__ import annotations

from refimpl.planner.search.graph import TestNode
from refimpl.planner.search.strategy import BlockOptimization
from tests.planner.burn_mocks import (
    TestOptimizationBuilder,
    add,
    add_rw,
    composed,
    operation_1,
    operation_2,
    operation_3,
    operations,
    optimization,
)

# --- Dag ------------------------------------------------------------------------------------


def test_graph_independent_nodes_ordered_by_position(planner_impl):
    dag = planner_impl.search.graph.Dag([TestNode(2, read=(200, 201), produced=(202,)),
               TestNode(0, read=(100, 101), produced=(102,))])
    assert not dag.depends_on(0, 1) and not dag.depends_on(1, 0)
    assert dag.topological_order() == [1, 0]


def test_graph_read_after_write_beats_position(planner_impl):
    dag = planner_impl.search.graph.Dag([TestNode(0, read=(50,), produced=(2,)),
                                  TestNode(5, read=(9,), produced=(50,))])
    assert dag.depends_on(0, 1)
    assert dag.topological_order() == [1, 0]


def test_graph_mutual_dependency_is_a_cycle(planner_impl):
    dag = planner_impl.search.graph.Dag([TestNode(0, read=(200,), produced=(100,)),
               TestNode(1, read=(100,), produced=(200,))])
    assert not dag.is_acyclic()
    assert dag.topological_order() is None


def test_graph_write_after_read_orders_freer_after_reader(planner_impl):
    dag = planner_impl.search.graph.Dag([TestNode(0, read=(100,), produced=(2,)),
                                  TestNode(1, frees=(100,), produced=(4,))])
    assert dag.depends_on(1, 0) and not dag.depends_on(0, 1)
    assert dag.topological_order() == [0, 1]


def test_graph_diamond_topological_order(planner_impl):
    dag = planner_impl.search.graph.Dag([
        TestNode(0, produced=(10,)), TestNode(1, read=(10,), produced=(11,)),
        TestNode(2, read=(10,), produced=(12,)), TestNode(3, read=(11, 12), produced=(13,))])
    assert dag.topological_order() == [0, 1, 2, 3]


def _chain(impl):
    return impl.search.graph.Dag([TestNode(0, produced=(100,)),
                                  TestNode(1, read=(100,), produced=(200,)),
                                  TestNode(2, read=(200,), produced=(300,))])


def test_graph_reachability_direct_edge_can_contract(planner_impl):
    guard = _chain(planner_impl).reachability()
    assert guard.can_contract(0b001, 0b010)
    assert guard.can_contract(0b010, 0b100)


def test_graph_reachability_intermediate_node_blocks_contraction(planner_impl):
    assert not _chain(planner_impl).reachability().can_contract(0b001, 0b100)


def test_graph_reachability_contraction_including_intermediate_is_legal(planner_impl):
    assert _chain(planner_impl).reachability().can_contract(0b011, 0b100)


def test_graph_reachability_empty_subgraphs_are_refused(planner_impl):
    guard = _chain(planner_impl).reachability()
    assert not guard.can_contract(0, 0)
    assert not guard.can_contract(0b001, 0)


def test_graph_reachability_transitive_ancestors_block_contraction(planner_impl):
    nodes = [TestNode(0, produced=(10,))] + [
        TestNode(i, read=(9 + i,), produced=(10 + i,)) for i in range(1, 4)]
    guard = planner_impl.search.graph.Dag(nodes).reachability()
    assert not guard.can_contract(1 << 0, 1 << 3)
    assert not guard.can_contract(1 << 0, 1 << 2)


def test_graph_reachability_cyclic_graph_falls_back_to_fixpoint(planner_impl):
    dag = planner_impl.search.graph.Dag([TestNode(0, read=(200,), produced=(100,)),
               TestNode(1, read=(100,), produced=(200,)),
               TestNode(2, read=(200,), produced=(300,))])
    assert not dag.is_acyclic()
    guard = dag.reachability()
    assert guard.can_contract(0b001, 0b010)
    assert not guard.can_contract(0b001, 0b100)


def test_graph_supports_more_than_64_nodes(planner_impl):
    nodes = [TestNode(i, produced=(i + 1,), read=(i,) if i else ()) for i in range(70)]
    dag = planner_impl.search.graph.Dag(nodes)
    guard = dag.reachability()
    assert dag.topological_order() == list(range(70))
    assert guard.can_contract(1 << 68, 1 << 69)
    assert not guard.can_contract(1 << 0, 1 << 69)
    assert planner_impl.search.graph.bits((1 << 3) | (1 << 70)) == [3, 70]


def test_graph_lifetime_rules(planner_impl):
    chain = [TestNode(0, read=(1,), produced=(10,)), TestNode(1, frees=(10,), produced=(11,))]
    assert planner_impl.search.graph.is_valid_execution_order(chain)
    consumer_first = [TestNode(1, read=(10,), produced=(11,)),
                      TestNode(0, read=(1,), produced=(10,))]
    assert not planner_impl.search.graph.is_valid_execution_order(consumer_first)
    free_then_read = [TestNode(0, frees=(1,), produced=(10,)),
                      TestNode(1, read=(1,), produced=(11,))]
    assert not planner_impl.search.graph.is_valid_execution_order(free_then_read)
    assert planner_impl.search.graph.is_valid_execution_order(free_then_read[::-1])
    external = [TestNode(0, read=(1,), produced=(10,)), TestNode(1, read=(1, 10), produced=(11,))]
    assert planner_impl.search.graph.is_valid_execution_order(external)
    assert planner_impl.search.graph.is_valid_execution_order(
        [TestNode(1, read=(10,), produced=(11,))])


# --- Block ------------------------------------------------------------------------------------


def _block(impl, ops, pattern=None):
    fusers = [TestOptimizationBuilder(0, pattern)] if pattern is not None else []
    block = impl.search.block.Block(fusers)
    for op, pos in ops:
        block.register(op, pos, True)
    return block


def test_block_dependency_beats_start_pos_in_topological_order(planner_impl):
    blocks = [_block(planner_impl, [(add(50, 1, 2), 0)]),
              _block(planner_impl, [(add(9, 8, 50), 5)])]
    assert planner_impl.search.graph.Dag(blocks).topological_order() == [1, 0]


def test_block_mutual_dependency_between_blocks_is_a_cycle(planner_impl):
    blocks = [_block(planner_impl, [(add(1, 2, 100), 0), (add(200, 3, 101), 1)]),
              _block(planner_impl, [(add(100, 4, 200), 2)])]
    assert not planner_impl.search.graph.Dag(blocks).is_acyclic()


def test_block_freeing_block_runs_after_reading_block(planner_impl):
    blocks = [_block(planner_impl, [(add(100, 1, 2), 0)]),
              _block(planner_impl, [(add_rw(100, 3, 4), 1)])]
    assert planner_impl.search.graph.Dag(blocks).topological_order() == [0, 1]


def test_block_merge_guard_blocks_contraction_around_intermediate_block(planner_impl):
    blocks = [_block(planner_impl, [(add(1, 2, 100), 0)]),
              _block(planner_impl, [(add(100, 3, 200), 1)]),
              _block(planner_impl, [(add(200, 4, 300), 2)])]
    for i, block in enumerate(blocks):
        block.seed_constituent(i)
    guard = planner_impl.search.graph.Dag(blocks).reachability()
    assert not guard.can_contract(blocks[0].constituents, blocks[2].constituents)
    assert guard.can_contract(blocks[0].constituents, blocks[1].constituents)
    assert guard.can_contract(blocks[1].constituents, blocks[2].constituents)


def test_block_merge_guard_refuses_unseeded_blocks(planner_impl):
    blocks = [_block(planner_impl, [(add(1, 2, 3), 0)]), _block(planner_impl, [(add(4, 5, 6), 1)])]
    guard = planner_impl.search.graph.Dag(blocks).reachability()
    assert not guard.can_contract(blocks[0].constituents, blocks[1].constituents)


def test_block_merge_rejects_consumer_fused_before_producer(planner_impl):
    x, y, z = add(1, 2, 10), add(50, 3, 11), add(4, 5, 50)
    pattern = [x, y, z, x]
    base = _block(planner_impl, [(x, 0), (y, 1)], pattern)
    assert not base.merge(_block(planner_impl, [(z, 2)], pattern))


def test_block_merge_accepts_producer_fused_before_consumer(planner_impl):
    x, y, z = add(1, 2, 10), add(50, 3, 11), add(4, 5, 50)
    pattern = [z, x, y, x]
    base = _block(planner_impl, [(z, 2)], pattern)
    assert base.merge(_block(planner_impl, [(x, 0), (y, 1)], pattern))


def test_block_merge_rejects_free_fused_before_read(planner_impl):
    reader, freer = add(100, 1, 2), add_rw(100, 3, 4)
    pattern = [freer, reader, reader]
    base = _block(planner_impl, [(freer, 1)], pattern)
    assert not base.merge(_block(planner_impl, [(reader, 0)], pattern))


def test_block_data_flow_sets_track_external_reads(planner_impl):
    block = _block(planner_impl, [(add(1, 2, 10), 0), (add_rw(10, 3, 11), 1)])
    assert block.produced() == (10, 11)
    assert block.read() == (1, 2, 3)
    assert block.freed() == (10,)
    assert (block.start_pos, block.end_pos) == (0, 2)


# --- merging (search/merging.rs) ------------------------------------------------------------


def _builders():
    return [TestOptimizationBuilder(0, [operation_1()] * 10),
            TestOptimizationBuilder(1, [operation_2()] * 10)]


def _blocks(impl, *layout):
    """One block per entry; an entry lists (op, position) pairs."""
    found = []
    for entry in layout:
        block = impl.search.block.Block(_builders())
        for op, pos in entry:
            block.register(op, pos, False)
        found.append(block)
    return found


def _merge(impl, blocks):
    for i, block in enumerate(blocks):
        block.seed_constituent(i)
    reachability = impl.search.graph.Dag(blocks).reachability()
    return impl.search.merging.merge_blocks(blocks, reachability, sort=True)


def _positions(blocks):
    return [block.sorted_positions() for block in blocks]


def test_merging_no_block_fails(planner_impl):
    assert _merge(planner_impl, []).kind == "Fail"


def test_merging_single_block_is_full(planner_impl):
    result = _merge(planner_impl, _blocks(planner_impl, []))
    assert result.kind == "Full" and _positions(result.merged) == [[]]


def test_merging_two_blocks(planner_impl):
    o1 = operation_1()
    result = _merge(planner_impl, _blocks(planner_impl, [(o1, 0), (o1, 1)], [(o1, 2), (o1, 3)]))
    assert result.kind == "Full" and _positions(result.merged) == [[0, 1, 2, 3]]


def test_merging_three_blocks(planner_impl):
    o1 = operation_1()
    result = _merge(planner_impl, _blocks(planner_impl, [(o1, 0)], [(o1, 1)], [(o1, 2)]))
    assert result.kind == "Full" and _positions(result.merged) == [[0, 1, 2]]


def test_merging_three_blocks_partial(planner_impl):
    o1, o2 = operation_1(), operation_2()
    result = _merge(planner_impl, _blocks(planner_impl, [(o1, 0)], [(o2, 1)], [(o1, 2)]))
    assert result.kind == "Partial"
    assert _positions(result.merged) == [[0, 2], [1]]
    assert result.failed == []


def test_merging_four_blocks_partial_with_failure(planner_impl):
    o1, o2, o3 = operation_1(), operation_2(), operation_3()
    result = _merge(planner_impl, _blocks(planner_impl, [(o1, 0)], [(o2, 1)], [(o1, 2)], [(o3, 3)]))
    assert result.kind == "Partial"
    assert _positions(result.merged) == [[0, 2]]
    assert _positions(result.failed) == [[1], [3]]


def test_merging_five_blocks_partial_with_failure(planner_impl):
    o1, o2, o3 = operation_1(), operation_2(), operation_3()
    result = _merge(planner_impl, _blocks(planner_impl, [(o1, 0)], [(o2, 1)], [(o1, 2)],
                                          [(o3, 3)], [(o2, 4)]))
    assert result.kind == "Partial"
    assert _positions(result.merged) == [[0, 2], [1, 4]]
    assert _positions(result.failed) == [[3]]


def test_merging_accumulator_reverses_direction(planner_impl):
    x, y, z, w = add(1, 2, 10), add(50, 3, 11), add(4, 5, 50), add(6, 7, 12)
    pattern = [z, x, y, w, x]
    blocks = [_block(planner_impl, [(x, 0), (y, 5)], pattern),
              _block(planner_impl, [(z, 3)], pattern),
              _block(planner_impl, [(w, 6)], pattern)]
    result = _merge(planner_impl, blocks)
    assert result.kind == "Full"
    assert result.merged[0].ordering == [3, 0, 5, 6]  # registration order z, x, y, w


def test_merging_never_aliases_its_input_blocks(planner_impl):
    o1 = operation_1()
    blocks = _blocks(planner_impl, [(o1, 0)], [(o1, 1)], [(o1, 2)])
    result = _merge(planner_impl, blocks)
    assert all(merged is not block for merged in result.merged for block in blocks)
    assert _positions(blocks) == [[0], [1], [2]]


# --- repair_order (search/optimization/stream.rs tests) -------------------------------------


def test_repair_splits_unfused_produce_free_chunk_instead_of_unfusing_everything(planner_impl):
    ops = [add(1, 2, 10), add(10, 3, 100), add(100, 4, 101), add_rw(10, 5, 11)]
    opt = BlockOptimization(composed(optimization(0, 2, [1, 2], 0), operations([0, 3])),
                            (1, 2, 0, 3))
    repaired = planner_impl.search.repair.repair_order(opt, ops)
    assert repaired.ordering == (0, 1, 2, 3)
    assert repaired.strategy == composed(
        operations([0]), optimization(0, 2, [1, 2], 0), operations([3]))


def test_repair_reorders_chunks_by_dependency(planner_impl):
    ops = [add(1, 2, 5), add(5, 3, 10), add(10, 4, 20)]
    opt = BlockOptimization(composed(operations([2]), optimization(0, 2, [0, 1], 0)), (2, 0, 1))
    repaired = planner_impl.search.repair.repair_order(opt, ops)
    assert repaired.ordering == (0, 1, 2)
    assert repaired.strategy == composed(optimization(0, 2, [0, 1], 0), operations([2]))


def test_repair_falls_back_to_unfused_when_fused_chunks_cycle(planner_impl):
    ops = [add(1, 2, 10), add(10, 6, 20), add(20, 7, 21), add(20, 5, 11)]
    opt = BlockOptimization(
        composed(optimization(0, 2, [0, 3], 0), optimization(0, 2, [1, 2], 0)), (0, 3, 1, 2))
    repaired = planner_impl.search.repair.repair_order(opt, ops)
    assert repaired.ordering == (0, 1, 2, 3)
    assert repaired.strategy == operations([0, 1, 2, 3])


def test_repair_single_strategy_with_invalid_order_unfuses(planner_impl):
    ops = [add(1, 2, 10), add(10, 3, 11)]
    opt = BlockOptimization(optimization(0, 2, [1, 0], 0), (1, 0))
    repaired = planner_impl.search.repair.repair_order(opt, ops)
    assert repaired.ordering == (0, 1)
    assert repaired.strategy == operations([0, 1])


def test_repair_single_strategy_with_valid_order_passes_through(planner_impl):
    ops = [add(1, 2, 10), add(10, 3, 11)]
    opt = BlockOptimization(optimization(0, 2, [0, 1], 0), (0, 1))
    assert planner_impl.search.repair.repair_order(opt, ops) == opt
