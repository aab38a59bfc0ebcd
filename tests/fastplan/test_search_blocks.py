"""fastplan's search blocks (``fastplan.search.search``, ``fastplan.search.block``):

* the five fusers a drop closes on the spot are shared, frozen, by the next blocks a drop opens
  (``StreamOptimizer._opened``); a block's clone has fusers of its own, and fusers replaced
  (all of them, or one in place) are not shared with the blocks opened before; every fuser
  reads as refimpl's fuser does (that the blocks then take more ops, merge and are reset as
  refimpl's do is checked on both twins: tests/planner/test_search_optimize.py);
* searches over ops whose ids are past CPython's small-int cache, again and again: the tuples
  of ``op_flow`` own their ids (a freed id crashed the third or fourth search).
"""

from __future__ import annotations

import pytest

import fastplan
from refimpl.devices import profile_named
from refimpl.planner.fusers import registry as ref_registry
from refimpl.planner.search import search as ref_search
from refimpl.planner.log import NO_LOG
from tests.planner.burn_mocks import add, builders
from tests.planner.fuser_ops import drop, relative

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

from fastplan.fusers import registry as fast_registry  # noqa: E402
from fastplan.search import search as fast_search  # noqa: E402

S = (4, 6)


def _fuser_state(fuser):
    """What a fuser shows, as values (refimpl's and fastplan's compare equal)."""
    return (type(fuser).__name__, fuser.status(), fuser.properties(), fuser.len(),
            getattr(fuser, "closed_reason", None), getattr(fuser, "closed_log", None))


def _state(search):
    return [(block.start_pos, block.end_pos, [_fuser_state(f) for f in block.fusers])
            for block in search.blocks]


def test_drop_opened_blocks_share_frozen_fusers():
    ops = relative([drop(5, S), drop(6, S), drop(7, S)])
    fusers = fast_registry.FusionRegistry().fusers(profile_named("metal"))
    search = fast_search.StreamOptimizer(fusers, 5)
    for operation in ops:
        search.register(operation)
    first, second, third = search.blocks
    assert all(a is b for a, b in zip(second.fusers, third.fusers))
    assert all(a is b for a, b in zip(first.fusers, second.fusers))
    assert second.fusers is not third.fusers  # each block its own list
    assert not any(f.status().name == "Open" for f in first.fusers)
    # a block's clone is independent of the shared fusers
    clone = second.clone()
    assert all(a is not b for a, b in zip(clone.fusers, second.fusers))
    assert [_fuser_state(f) for f in clone.fusers] == [_fuser_state(f) for f in second.fusers]


def test_drop_opened_blocks_after_fusers_replaced():
    ops = relative([drop(5, S), drop(6, S)])
    profile = profile_named("metal")
    search = fast_search.StreamOptimizer(fast_registry.FusionRegistry().fusers(profile), 5)
    for operation in ops:
        search.register(operation)
    old = search.blocks[0].fusers
    search.reset()
    search.fusers = fast_registry.FusionRegistry().fusers(profile)
    for operation in ops:
        search.register(operation)
    assert all(a is not b for a, b in zip(search.blocks[0].fusers, old))
    reference = ref_search.StreamOptimizer(ref_registry.FusionRegistry().fusers(profile), 5)
    for operation in ops:
        reference.register(operation)
    assert _state(search) == _state(reference)


def test_drop_opened_blocks_after_one_fuser_replaced_in_place():
    ops = relative([drop(5, S), drop(6, S)])
    profile = profile_named("metal")
    search = fast_search.StreamOptimizer(fast_registry.FusionRegistry().fusers(profile), 5)
    search.reset()  # the fusers' one reset: the blocks below keep theirs through the next
    for operation in ops:
        search.register(operation)
    old = search.blocks[0].fusers
    search.reset()
    search.fusers[0] = fast_registry.FusionRegistry().fusers(profile)[0]
    for operation in ops:
        search.register(operation)
    assert search.blocks[0].fusers[0] is not old[0]
    assert search.blocks[1].fusers[0] is search.blocks[0].fusers[0]
    reference = ref_search.StreamOptimizer(ref_registry.FusionRegistry().fusers(profile), 5)
    for operation in ops:
        reference.register(operation)
    assert _state(search) == _state(reference)


def _search(module, ops, patterns, log=NO_LOG, max_blocks=5):
    search = module.StreamOptimizer(builders(*patterns), max_blocks, log)
    for operation in ops:
        search.register(operation)
    return search


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
