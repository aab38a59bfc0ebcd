"""The repair (``repair.repair_order``, ``repair.Chunk``), on refimpl and on fastplan (the
``planner_impl`` fixture): the order a block optimization's chunks are run in, fused or
unfused, listed in or out of position order, is refimpl's, and a chunk's position is the least
of its positions.

fastplan skips work here: an unfused block in ascending order is left as it is (its repair is
an equal value either way), the chunk DAG is read in the chunks' id dicts, the merging pass's
DAG is reused for the order, and a chunk's position is ``min`` as a loop.
"""

from __future__ import annotations

import pytest

from refimpl.planner.search import repair as ref_repair
from refimpl.planner.search.strategy import BlockOptimization, Composed, Operations
from tests.planner.burn_mocks import optimization
from tests.planner.fuser_ops import NI, RO, RW, op, relative, t


def _segment():
    return relative([
        op("Float.Exp", input=t(0, (2, 3), RO), out=t(1, (2, 3), NI)),
        op("Float.Exp", input=t(2, (2, 3), RW), out=t(3, (2, 3), NI)),
        op("Float.Exp", input=t(1, (2, 3), RW), out=t(4, (2, 3), NI)),
        op("Float.Exp", input=t(3, (2, 3), RO), out=t(5, (2, 3), NI)),
    ])


@pytest.mark.parametrize("order", [((2, 3), (0, 1)), ((1, 3), (0, 2)), ((3,), (2,), (1, 0)),
                                   ((0, 2), (1, 3)), ((3, 2), (1, 0))])
@pytest.mark.parametrize("fused", [True, False])
def test_repair_of_chunks(planner_impl, order, fused):
    fast_repair = planner_impl.search.repair
    ops = _segment()
    strategies = tuple(optimization(i, len(chunk), list(chunk), len(chunk)) if fused
                       else Operations(tuple(chunk)) for i, chunk in enumerate(order))
    ordering = tuple(pos for chunk in order for pos in chunk)
    opt = BlockOptimization(Composed(strategies), ordering)
    assert fast_repair.repair_order(opt, ops) == ref_repair.repair_order(opt, ops)


@pytest.mark.parametrize("ordering", [(0, 1, 2, 3), (0, 2), (3,), (1, 0), (0, 0, 1), ()])
def test_repair_of_unfused(planner_impl, ordering):
    fast_repair = planner_impl.search.repair
    ops = _segment()
    opt = BlockOptimization(Operations(ordering), ordering)
    ours = fast_repair.repair_order(opt, ops)
    assert ours == ref_repair.repair_order(opt, ops)
    assert ours.ordering == tuple(sorted(ordering)) or ours is opt


def _read_only_segment():
    """Ops whose chunks a Composed strategy lists out of position order."""
    return relative([
        op("Float.Exp", input=t(0, (2, 3), RO), out=t(1, (2, 3), NI)),
        op("Float.Exp", input=t(2, (2, 3), RO), out=t(3, (2, 3), NI)),
        op("Float.Exp", input=t(1, (2, 3), RO), out=t(4, (2, 3), NI)),
        op("Float.Exp", input=t(3, (2, 3), RO), out=t(5, (2, 3), NI)),
    ])


@pytest.mark.parametrize("positions", [(3, 1, 2), (2, 0, 0, 1), (0,), (5, 4), ()])
def test_chunk_position_is_the_least(planner_impl, positions):
    fast_repair = planner_impl.search.repair
    ops = _read_only_segment() + _read_only_segment()
    ours = fast_repair.Chunk(positions, ops).position()
    theirs = ref_repair.Chunk(positions, ops).position()
    assert ours == theirs == (min(positions) if positions else 0)


@pytest.mark.parametrize("order", [((2, 3), (0, 1)), ((1, 3), (0, 2)), ((3,), (2,), (1, 0))])
def test_repair_order_of_chunks_out_of_order(planner_impl, order):
    fast_repair = planner_impl.search.repair
    ops = _read_only_segment()
    strategies = tuple(optimization(i, len(chunk), list(chunk), len(chunk))
                       for i, chunk in enumerate(order))
    ordering = tuple(pos for chunk in order for pos in chunk)
    opt = BlockOptimization(Composed(strategies), ordering)
    assert fast_repair.repair_order(opt, ops) == ref_repair.repair_order(opt, ops)
