"""The exploration's paths that skip a Python call, against refimpl: ``BlocksOptimizer``'s
result (unwrapped for the search, refimpl's dataclass for ``optimize`` and ``_first_pass``)
and its log levels (read once per log object, read again when ``log`` is replaced), the
repair's chunk position (``min`` as a loop) and ReduceBroadcasted's closing status (found by
identity).
"""

from __future__ import annotations

import io

import pytest

import fastplan
from refimpl.planner.fusers import reduce_broadcasted as ref_rb
from refimpl.planner.fusers.reduce_broadcasted import (
    ReduceBroadcastedState,
    ReduceBroadcastedStatus,
)
from refimpl.planner.log import NO_LOG, FusionLog, LogLevel
from refimpl.planner.search import repair as ref_repair
from refimpl.planner.search import search as ref_search
from refimpl.planner.search.strategy import BlockOptimization, Composed
from tests.fastplan.helpers import A1, A2, B1, B2, C1
from tests.planner.burn_mocks import add, builders, optimization
from tests.planner.fuser_ops import NI, RO, op, relative, t

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

from fastplan.fusers import reduce_broadcasted as fast_rb  # noqa: E402
from fastplan.search import repair as fast_repair  # noqa: E402
from fastplan.search import search as fast_search  # noqa: E402

# (ops, fuser patterns): one block, two blocks, a hole, a search the block cap stops
CASES = [
    ([A1, A2], [[A1, A2]]),
    ([A1, B1, A2, B2], [[A1, A2], [B1, B2]]),
    ([A1, B1, A2, B2], [[A1, A2, B1, B2]]),
    ([A1, B1, A2], [[A1, A2]]),
    ([A1, B1, C1, A2, B2], [[A1], [B1, B2]]),
]


def _search(module, ops, patterns, log=NO_LOG, max_blocks=5):
    search = module.StreamOptimizer(builders(*patterns), max_blocks, log)
    for operation in ops:
        search.register(operation)
    return search


@pytest.mark.parametrize(("ops", "patterns"), CASES)
def test_first_pass_is_refimpls_result(ops, patterns):
    ours = _search(fast_search, ops, patterns)._first_pass()
    theirs = _search(ref_search, ops, patterns)._first_pass()
    assert type(ours) is ref_search.BlocksOptimizerResult
    assert ours == theirs
    assert ours.full() == theirs.full()


@pytest.mark.parametrize(("ops", "patterns"), CASES)
@pytest.mark.parametrize("max_blocks", [1, 2, 5])
def test_optimize_equals_refimpl(ops, patterns, max_blocks):
    ours = _search(fast_search, ops, patterns, max_blocks=max_blocks).optimize(ops)
    theirs = _search(ref_search, ops, patterns, max_blocks=max_blocks).optimize(ops)
    assert ours == theirs


@pytest.mark.parametrize(("ops", "patterns"), CASES)
def test_blocks_optimizer_result(ops, patterns):
    ours = fast_search.BlocksOptimizer(_search(fast_search, ops, patterns).blocks).optimize()
    theirs = ref_search.BlocksOptimizer(_search(ref_search, ops, patterns).blocks).optimize()
    assert type(ours) is ref_search.BlocksOptimizerResult
    assert ours == theirs


def test_blocks_optimizer_of_no_block_raises_as_refimpl():
    with pytest.raises(ValueError):
        ref_search.BlocksOptimizer([])
    with pytest.raises(ValueError):
        fast_search.BlocksOptimizer([])


def _log(level):
    out = io.StringIO()
    return FusionLog(level, out), out


def test_blocks_optimizer_reads_a_replaced_log():
    """The levels are read from the log the optimizer holds when it runs: a log set after
    construction prints, one replaced by NO_LOG does not."""
    blocks = _search(fast_search, [A1, A2], [[A1, A2]]).blocks
    optimizer = fast_search.BlocksOptimizer(blocks)
    log, out = _log(LogLevel.FULL)
    optimizer.log = log
    optimizer.optimize()
    assert "[search] 1 strategy chunk(s), holes=[]" in out.getvalue()
    assert "[block]" in out.getvalue()
    quiet_blocks = _search(fast_search, [A1, A2], [[A1, A2]]).blocks
    optimizer = fast_search.BlocksOptimizer(quiet_blocks, log)
    optimizer.log = NO_LOG
    before = out.getvalue()
    optimizer.optimize()
    assert out.getvalue() == before


@pytest.mark.parametrize("level", [LogLevel.OFF, LogLevel.BASIC, LogLevel.FULL])
@pytest.mark.parametrize(("ops", "patterns"), CASES)
def test_search_log_matches_refimpl(level, ops, patterns):
    """The search's own BlocksOptimizers take the levels its log setter read: the same lines
    as refimpl's, at every level (and none when off)."""
    ours_log, ours_out = _log(level)
    theirs_log, theirs_out = _log(level)
    ours = _search(fast_search, ops, patterns, ours_log).optimize(ops)
    theirs = _search(ref_search, ops, patterns, theirs_log).optimize(ops)
    assert ours == theirs
    assert ours_out.getvalue() == theirs_out.getvalue()
    if level is LogLevel.OFF:
        assert ours_out.getvalue() == ""
    else:
        assert ours_out.getvalue() != ""


def test_search_log_replaced_after_construction():
    search = _search(fast_search, [A1, B1, A2, B2], [[A1, A2], [B1, B2]])
    log, out = _log(LogLevel.FULL)
    search.log = log
    search.optimize([A1, B1, A2, B2])
    assert "[search]" in out.getvalue()


def _segment():
    """Ops whose chunks a Composed strategy lists out of position order."""
    return relative([
        op("Float.Exp", input=t(0, (2, 3), RO), out=t(1, (2, 3), NI)),
        op("Float.Exp", input=t(2, (2, 3), RO), out=t(3, (2, 3), NI)),
        op("Float.Exp", input=t(1, (2, 3), RO), out=t(4, (2, 3), NI)),
        op("Float.Exp", input=t(3, (2, 3), RO), out=t(5, (2, 3), NI)),
    ])


@pytest.mark.parametrize("positions", [(3, 1, 2), (2, 0, 0, 1), (0,), (5, 4), ()])
def test_chunk_position_is_the_least(positions):
    ops = _segment() + _segment()
    ours = fast_repair.Chunk(positions, ops).position()
    theirs = ref_repair.Chunk(positions, ops).position()
    assert ours == theirs == (min(positions) if positions else 0)


@pytest.mark.parametrize("order", [((2, 3), (0, 1)), ((1, 3), (0, 2)), ((3,), (2,), (1, 0))])
def test_repair_order_of_chunks_out_of_order(order):
    ops = _segment()
    strategies = tuple(optimization(i, len(chunk), list(chunk), len(chunk))
                       for i, chunk in enumerate(order))
    ordering = tuple(pos for chunk in order for pos in chunk)
    opt = BlockOptimization(Composed(strategies), ordering)
    assert fast_repair.repair_order(opt, ops) == ref_repair.repair_order(opt, ops)


@pytest.mark.parametrize("state", list(ReduceBroadcastedState))
def test_closing_status(state):
    """``_set_closed`` leaves the status refimpl builds, for every state (the two a fuser
    closes with are shared objects)."""
    ours = fast_rb.ReduceBroadcastedFuser(28)
    theirs = ref_rb.ReduceBroadcastedFuser(28)
    ours._set_closed(state, "why")
    theirs._set_closed(state, "why")
    assert ours.state == theirs.state == ReduceBroadcastedStatus(state)
    assert ours.closed_reason == theirs.closed_reason == "why"
    assert ours.status() == theirs.status()
    assert ours.properties() == theirs.properties()


# Tensor ids past CPython's small-int cache (256): op_flow's tuples must own their ids.
BIG = [add(1000 + 10 * k, 1001 + 10 * k, 1002 + 10 * k) for k in range(3)] + \
    [add(1002, 2001, 2002), add(1012, 2011, 2012)]


@pytest.mark.parametrize("rounds", [8])
def test_searches_over_large_ids(rounds):
    """Searches over ops whose ids are large ints, again and again (a freed id crashed the
    third or fourth one); every flow's ids stay the ops' own, and the results refimpl's."""
    patterns = [[BIG[0], BIG[3]], [BIG[1], BIG[4]]]
    theirs = _search(ref_search, BIG, patterns).optimize(BIG)
    for _ in range(rounds):
        search = _search(fast_search, BIG, patterns)
        ids = sorted({tid for block in search.blocks
                      for tid in block.read() + block.produced()})
        assert ids == sorted({t.id for o in BIG for t in (*o.inputs(), *o.outputs())})
        assert search.optimize(BIG) == theirs
        del search
        junk = [object() for _ in range(200)]  # reuse what was freed, if anything was
        del junk
