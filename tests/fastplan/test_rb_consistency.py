"""fastplan's ReduceBroadcasted consistency check and the trace's sorted reads/writes against
refimpl: the ``FullFuserAnalyzer`` that tracks only the reduce write sides (refimpl's unused
full-shape dict is not kept) and copies ``last_single`` for the last block only, the dry run
that registers blocks through ``register_c``, and ``_sorted_ops``' single-op groups."""

from __future__ import annotations

import pytest

import fastplan.fusers.reduce_broadcasted as frb
import refimpl.planner.fusers.reduce_broadcasted as rrb
from tests.fastplan.helpers import WORKFLOWS
from tests.planner.fuser_ops import NI, RO, RW, op, t

pytestmark = pytest.mark.skipif(not frb.__file__.endswith((".so", ".pyd")),
                                reason="fastplan is not compiled")

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
def test_analyzer_and_consistency_match_refimpl_after_every_op(steps):
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


def test_crossing_stream_receives_from_two_blocks_back():
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


def test_analyzer_of_no_blocks_raises_like_refimpl():
    with pytest.raises(IndexError):
        rrb.FullFuserAnalyzer([])
    with pytest.raises(IndexError):
        frb.FullFuserAnalyzer([])
