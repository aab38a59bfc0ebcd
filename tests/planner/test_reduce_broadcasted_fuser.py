"""The ReduceBroadcasted fuser (``reduce_broadcasted``), on refimpl and on fastplan (the
``planner_impl`` fixture), against refimpl after every op: its consistency check and
``FullFuserAnalyzer``, its ``finish`` (equal to one from a fresh full fuser, and again when
finished twice), ``Block``'s tensor ids over its ops, and the status it closes with in every
state.

fastplan's analyzer tracks only the reduce write sides (refimpl's unused full-shape dict is
not kept) and copies ``last_single`` for the last block only, its dry run registers blocks
through ``register_c``, ``_sorted_ops`` makes single-op groups, ``finish`` starts from the full
fuser cached by the last consistency check, ``Block.ids`` is computed from the id dicts, and
the two closing statuses a fuser closes with are shared objects (found by identity)."""

from __future__ import annotations

import pytest

import refimpl.planner.search.block as rblock
import refimpl.planner.fusers.reduce_broadcasted as rrb
from refimpl.planner.fusers import reduce_broadcasted as ref_rb
from refimpl.planner.fusers.reduce_broadcasted import ReduceBroadcastedState, ReduceBroadcastedStatus
from tests.planner.fuser_ops import NI, RO, RW, op, t
from tests.planner.helpers import WORKFLOWS

# Three reductions; the third block reads values of the first and second reduce's write
# sides (received across two boundaries) and a full-shape value of the first block (never
# received: it lives in another reduction loop).
CROSSING = [
    op("BaseFloat.Ones", out=t(0, (1, 2), NI)),
    op("NumericFloat.SumDim", input=t(0, (1, 2), RO), out=t(1, (1, 0), NI), axis=1),
    op("NumericFloat.Add", lhs=t(1, (1, 0), RO), rhs=t(2, (1, 0), RO), out=t(3, (1, 0), NI)),
    op("NumericFloat.Sub", lhs=t(0, (1, 2), RO), rhs=t(3, (1, 0), RO), out=t(4, (1, 2), NI)),
    op("NumericFloat.SumDim", input=t(4, (1, 2), RO), out=t(5, (1, 0), NI), axis=1),
    op("NumericFloat.Mul", lhs=t(5, (1, 0), RO), rhs=t(3, (1, 0), RO), out=t(6, (1, 0), NI)),
    op("NumericFloat.Add", lhs=t(4, (1, 2), RO), rhs=t(6, (1, 0), RO), out=t(7, (1, 2), NI)),
    op("NumericFloat.SumDim", input=t(7, (1, 2), RO), out=t(8, (1, 0), NI), axis=1),
    op("NumericFloat.Div", lhs=t(8, (1, 0), RO), rhs=t(1, (1, 0), RO), out=t(9, (1, 0), NI)),
    op("NumericFloat.Add", lhs=t(0, (1, 2), RW), rhs=t(9, (1, 0), RW), out=t(10, (1, 2), NI)),
    op("NumericFloat.Mul", lhs=t(10, (1, 2), RW), rhs=t(3, (1, 0), RW), out=t(11, (1, 2), NI)),
]
STREAMS = [*WORKFLOWS, CROSSING]


def _analyses(analyzer, boundaries):
    return [analyzer.retrieve_next() for _ in range(boundaries)]


@pytest.mark.parametrize("steps", STREAMS)
def test_analyzer_and_consistency_match_refimpl_after_every_op(planner_impl, steps):
    frb = planner_impl.fusers.reduce_broadcasted
    fast, ref = frb.ReduceBroadcastedFuser(28), rrb.ReduceBroadcastedFuser(28)
    for step in steps:
        fast.fuse(step)
        ref.fuse(step)
        assert (fast.len(), fast.status()) == (ref.len(), ref.status())
        assert fast.properties() == ref.properties()
        assert fast.is_consistent() == ref.is_consistent()
        boundaries = sum(1 if b.kind.is_elemwise else 2 for b in ref.blocks) - 1
        got = _analyses(frb.FullFuserAnalyzer(fast.blocks), boundaries)
        want = _analyses(rrb.FullFuserAnalyzer(ref.blocks), boundaries)
        assert got == want
        # a tuple of blocks (not a list) is read the same
        assert _analyses(frb.FullFuserAnalyzer(tuple(fast.blocks)), boundaries) == want
        if ref.properties().ready:
            assert fast.finish() == ref.finish()


def test_crossing_stream_receives_from_two_blocks_back(planner_impl):
    frb = planner_impl.fusers.reduce_broadcasted
    ref = rrb.ReduceBroadcastedFuser(28)
    fast = frb.ReduceBroadcastedFuser(28)
    for step in CROSSING:
        ref.fuse(step)
        fast.fuse(step)
    assert len(ref.blocks) >= 3
    boundaries = sum(1 if b.kind.is_elemwise else 2 for b in ref.blocks) - 1
    got = _analyses(frb.FullFuserAnalyzer(fast.blocks), boundaries)
    positions = {pos for boundary in got for _, pos in boundary}
    assert len(positions) >= 2  # values from more than one earlier block
    assert got == _analyses(rrb.FullFuserAnalyzer(ref.blocks), boundaries)
    assert fast.finish() == ref.finish()


def test_analyzer_of_no_blocks_raises_like_refimpl(planner_impl):
    frb = planner_impl.fusers.reduce_broadcasted
    with pytest.raises(IndexError):
        rrb.FullFuserAnalyzer([])
    with pytest.raises(IndexError):
        frb.FullFuserAnalyzer([])


@pytest.mark.parametrize("steps", WORKFLOWS)
def test_reduce_broadcasted_finish_matches_refimpl_after_every_op(planner_impl, steps):
    frb = planner_impl.fusers.reduce_broadcasted
    fast, ref = frb.ReduceBroadcastedFuser(28), rrb.ReduceBroadcastedFuser(28)
    finished = 0
    for step in steps:
        fast.fuse(step)
        ref.fuse(step)
        assert (fast.len(), fast.status()) == (ref.len(), ref.status())
        assert fast.properties() == ref.properties()
        if ref.properties().ready:
            optimization = fast.finish()
            assert optimization == ref.finish()
            # the fresh path (the full fuser built again) gives the same optimization
            fallbacks, full, num_ops = frb._finish_blocks(fast.blocks, fast.max_bindings)
            assert (tuple(fallbacks), full.finish(), num_ops) == \
                (optimization.fallbacks, optimization.broadcasted, optimization.num_ops)
            # finishing again (a finished fuser is left as it was) gives it once more
            assert fast.finish() == optimization
            finished += 1
    assert finished > 0


@pytest.mark.parametrize("steps", WORKFLOWS)
def test_block_ids_match_refimpl(planner_impl, steps):
    frb, fblock = planner_impl.fusers.reduce_broadcasted, planner_impl.search.block
    fast = fblock.Block([frb.ReduceBroadcastedFuser(28)])
    ref = rblock.Block([rrb.ReduceBroadcastedFuser(28)])
    for pos, step in enumerate(steps):
        assert fast.register(step, pos, False) == ref.register(step, pos, False)
        assert fast.ids == ref.ids
        assert (fast.produced(), fast.read(), fast.freed()) == \
            (ref.produced(), ref.read(), ref.freed())
        assert fast.contains_tensors(step.nodes()) == ref.contains_tensors(step.nodes())


@pytest.mark.parametrize("state", list(ReduceBroadcastedState))
def test_closing_status(planner_impl, state):
    """``_set_closed`` leaves the status refimpl builds, for every state (the two a fuser
    closes with are shared objects)."""
    fast_rb = planner_impl.fusers.reduce_broadcasted
    ours = fast_rb.ReduceBroadcastedFuser(28)
    theirs = ref_rb.ReduceBroadcastedFuser(28)
    ours._set_closed(state, "why")
    theirs._set_closed(state, "why")
    assert ours.state == theirs.state == ReduceBroadcastedStatus(state)
    assert ours.closed_reason == theirs.closed_reason == "why"
    assert ours.status() == theirs.status()
    assert ours.properties() == theirs.properties()
