"""fastplan's ReduceBroadcasted ``finish`` from the cached full fuser of its last consistency
check, and ``Block.ids`` computed from the id dicts: both equal refimpl's after every op."""

from __future__ import annotations

import pytest

import fastplan.fusers.reduce_broadcasted as frb
import fastplan.search.block as fblock
import refimpl.planner.fusers.reduce_broadcasted as rrb
import refimpl.planner.search.block as rblock
from tests.fastplan.helpers import WORKFLOWS

pytestmark = pytest.mark.skipif(not frb.__file__.endswith((".so", ".pyd")),
                                reason="fastplan is not compiled")

@pytest.mark.parametrize("steps", WORKFLOWS)
def test_reduce_broadcasted_finish_matches_refimpl_after_every_op(steps):
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
def test_block_ids_match_refimpl(steps):
    fast = fblock.Block([frb.ReduceBroadcastedFuser(28)])
    ref = rblock.Block([rrb.ReduceBroadcastedFuser(28)])
    for pos, step in enumerate(steps):
        assert fast.register(step, pos, False) == ref.register(step, pos, False)
        assert fast.ids == ref.ids
        assert (fast.produced(), fast.read(), fast.freed()) == \
            (ref.produced(), ref.read(), ref.freed())
        assert fast.contains_tensors(step.nodes()) == ref.contains_tensors(step.nodes())
