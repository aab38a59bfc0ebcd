"""The search's paths that skip work, against refimpl: an unfused block in ascending order
left as it is by the repair (its repair is an equal value either way), the repair's chunk DAG
read in the chunks' id dicts, the merging pass's DAG reused for the order, blocks sorted by
start position in C, a merge list made only when two blocks touch the op, and a one-block
pass handing back its block's optimization.
"""

from __future__ import annotations

import pytest

import fastplan
from refimpl.planner.search import repair as ref_repair
from refimpl.planner.search import search as ref_search
from refimpl.planner.search.strategy import BlockOptimization, Composed, Operations
from tests.fastplan.helpers import A1, A2, B1, B2, C1
from tests.planner.burn_mocks import add, add_rw, builders, optimization
from tests.planner.fuser_ops import NI, RO, RW, op, relative, t

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

from fastplan.search import repair as fast_repair  # noqa: E402
from fastplan.search import search as fast_search  # noqa: E402

D1 = add(40, 41, 42)
E1 = add(50, 51, 52)
# B1 frees 21 (ReadWrite) and X reads it after: B1 then X is an invalid order
X = add(21, 60, 61)
B1_RW = add_rw(21, 20, 22)

CASES = [
    ([A1, A2], [[A1, A2]], 5),  # one fused block
    ([A1, A2], [], 5),  # one block, no fuser: unfused in order
    ([A1, B1, A2, B2], [[A1, A2], [B1, B2]], 5),  # two blocks
    ([A1, B1, A2, B2], [], 5),  # two unfused blocks: a Composed repair
    ([A1, B1, A2], [[A1, A2]], 5),  # a hole
    ([A1, B1, C1, A2, B2], [[A1], [B1, B2]], 5),
    ([A1, B1, C1, D1, E1, A2, B2], [[A1, A2]], 3),  # the cap: a merge of every block
    ([A1, B1, C1, D1, E1, A2, B2], [], 2),
    ([A1, B1, C1, A2, B2], [[A1, B1, C1]], 2),
    ([B1_RW, X], [], 5),  # unfused, in an invalid order: unfused stream order, equal
    ([B1_RW, X], [[B1_RW, X]], 5),  # fused, invalid: the repair falls back
    ([A1, B1_RW, A2, X], [[A1, A2]], 5),
]


def _optimized(module, ops, patterns, max_blocks):
    search = module.StreamOptimizer(builders(*patterns), max_blocks)
    for operation in ops:
        search.register(operation)
    return search.optimize(ops), [(b.start_pos, b.end_pos) for b in search.blocks]


@pytest.mark.parametrize(("ops", "patterns", "max_blocks"), CASES)
def test_search_is_refimpls(ops, patterns, max_blocks):
    ours, our_blocks = _optimized(fast_search, ops, patterns, max_blocks)
    theirs, their_blocks = _optimized(ref_search, ops, patterns, max_blocks)
    assert ours == theirs
    assert our_blocks == their_blocks


@pytest.mark.parametrize(("ops", "patterns", "max_blocks"), CASES)
def test_blocks_optimizer_is_refimpls(ops, patterns, max_blocks):
    def run(module):
        search = module.StreamOptimizer(builders(*patterns), max_blocks)
        for operation in ops:
            search.register(operation)
        blocks = [block.clone() for block in search.blocks]
        if not blocks:
            return None
        return module.BlocksOptimizer(blocks).optimize()
    assert run(fast_search) == run(ref_search)


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
def test_repair_of_chunks(order, fused):
    ops = _segment()
    strategies = tuple(optimization(i, len(chunk), list(chunk), len(chunk)) if fused
                       else Operations(tuple(chunk)) for i, chunk in enumerate(order))
    ordering = tuple(pos for chunk in order for pos in chunk)
    opt = BlockOptimization(Composed(strategies), ordering)
    assert fast_repair.repair_order(opt, ops) == ref_repair.repair_order(opt, ops)


@pytest.mark.parametrize("ordering", [(0, 1, 2, 3), (0, 2), (3,), (1, 0), (0, 0, 1), ()])
def test_repair_of_unfused(ordering):
    ops = _segment()
    opt = BlockOptimization(Operations(ordering), ordering)
    ours = fast_repair.repair_order(opt, ops)
    assert ours == ref_repair.repair_order(opt, ops)
    assert ours.ordering == tuple(sorted(ordering)) or ours is opt
