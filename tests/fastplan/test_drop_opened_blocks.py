"""Blocks a drop opens, against refimpl: the five fusers a drop closes on the spot are shared
by the next blocks a drop opens (``StreamOptimizer._opened``), and the blocks then take more
ops, merge, and are reset like any other; every fuser reads as refimpl's fuser does.
"""

from __future__ import annotations

import pytest

import fastplan
from refimpl.devices import profile_named
from refimpl.planner.fusers import registry as ref_registry
from refimpl.planner.search import search as ref_search
from tests.planner.fuser_ops import NI, RO, drop, op, relative, t

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

from fastplan.fusers import registry as fast_registry  # noqa: E402
from fastplan.search import search as fast_search  # noqa: E402

S = (4, 6)


def _exp(a, out, status=RO):
    return op("Float.Exp", input=t(a, S, status), out=t(out, S, NI))


def _add(a, b, out):
    return op("NumericFloat.Add", lhs=t(a, S), rhs=t(b, S), out=t(out, S, NI))


# (ops, max_blocks): drops opening blocks, then ops touching the dropped ids' blocks, merges
# once the cap is reached, a drop as the first op of all, and drops only
CASES = [
    ([_exp(0, 1), drop(5, S), drop(6, S), _exp(1, 2)], 5),
    ([drop(5, S), drop(6, S), drop(7, S), _add(5, 6, 8), _exp(8, 9)], 5),
    ([_exp(0, 1), drop(5, S), drop(6, S), drop(7, S), _exp(20, 21), _add(5, 1, 9)], 3),
    ([drop(5, S), _exp(0, 1), drop(6, S), _add(6, 1, 2), drop(7, S), _exp(2, 3)], 2),
    ([drop(5, S), drop(6, S), drop(7, S), drop(8, S)], 5),
    ([drop(5, S), drop(6, S), drop(7, S), drop(8, S), drop(9, S), drop(10, S)], 4),
]


def _fuser_state(fuser):
    """What a fuser shows, as values (refimpl's and fastplan's compare equal)."""
    return (type(fuser).__name__, fuser.status(), fuser.properties(), fuser.len(),
            getattr(fuser, "closed_reason", None), getattr(fuser, "closed_log", None))


def _state(search):
    return [(block.start_pos, block.end_pos, [_fuser_state(f) for f in block.fusers])
            for block in search.blocks]


def _run(search_module, registry_module, ops, max_blocks, rounds):
    fusers = registry_module.FusionRegistry().fusers(profile_named("metal"))
    search = search_module.StreamOptimizer(fusers, max_blocks)
    found = []
    for _ in range(rounds):  # a reset between rounds: the fusers are reset once
        for operation in ops:
            search.register(operation)
        found.append((_state(search), search.optimize(ops)))
        search.reset()
    return found


@pytest.mark.parametrize(("ops", "max_blocks"), CASES)
def test_drop_opened_blocks_match_refimpl(ops, max_blocks):
    ops = relative(ops)
    ours = _run(fast_search, fast_registry, ops, max_blocks, 3)
    theirs = _run(ref_search, ref_registry, ops, max_blocks, 3)
    assert ours == theirs


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
