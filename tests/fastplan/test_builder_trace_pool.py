"""The exploration's trace engine: traces dropped by the search are kept, cleared, in a pool
(``fastplan.engine.builder``: ``trace_new`` and ``trace_clone`` take them back); a fuser built on a
reused trace must equal refimpl's, whatever the dropped trace held.

Each case makes and drops many fusers (filling the pool past its 64 traces, and dropping
traces too large to keep), then builds fresh fusers and clones of them, and compares every
one with refimpl's fuser fed the same ops (status, length, properties, finish).
"""

from __future__ import annotations

import gc
import importlib

import pytest

import fastplan
from tests.planner.fuser_ops import NI, RO, RW, feed, op, t, unary_chain

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

FUSERS = (("fusers.elemwise", "ElementWiseFuser"), ("fusers.matmul", "MatmulFuser"), ("fusers.reduce", "ReduceFuser"),
          ("fusers.reduce_broadcasted", "ReduceBroadcastedFuser"), ("fusers.nhwc", "NHWCRelayoutFuser"))

SOFTMAX = [
    op("BaseFloat.Ones", out=t(0, (1, 2), NI)),
    op("NumericFloat.Add", lhs=t(0, (1, 2), RO), rhs=t(2, (1, 2), RO), out=t(3, (1, 2), NI)),
    op("NumericFloat.SumDim", input=t(3, (1, 2), RO), out=t(1, (1, 0), NI), axis=1),
    op("NumericFloat.Sub", lhs=t(3, (1, 2), RW), rhs=t(1, (1, 0), RO), out=t(4, (1, 2), NI)),
    op("Float.Exp", input=t(4, (1, 2), RW), out=t(5, (1, 2), NI)),
    op("NumericFloat.SumDim", input=t(5, (1, 2), RO), out=t(6, (1, 0), NI), axis=1),
    op("NumericFloat.Div", lhs=t(5, (1, 2), RW), rhs=t(6, (1, 0), RW), out=t(7, (1, 2), NI)),
]


def make(package: str, module: str, name: str, max_bindings: int = 28):
    return getattr(importlib.import_module(f"{package}.{module}"), name)(max_bindings)


def state(fuser):
    properties = fuser.properties()
    return (fuser.status(), fuser.len(), properties, fuser.closed_reason,
            fuser.finish() if properties.ready else None)


def both(module, name, ops):
    """The fastplan and refimpl fusers fed ``ops``."""
    ours = feed(make("fastplan", module, name), ops)
    theirs = feed(make("refimpl.planner", module, name), ops)
    return ours, theirs


def churn(module, name):
    """Make and drop fusers and clones holding traces of every size, the largest one too large
    to be kept: the next traces come from the pool (cleared) or from a fresh allocation."""
    kept = []
    for k in range(90):
        fuser = feed(make("fastplan", module, name), unary_chain(k % 9, first=100))
        kept.append(fuser)
        kept.append(fuser.clone())
    kept.append(feed(make("fastplan", module, name), unary_chain(60, first=200)))
    del kept[:]
    gc.collect()


@pytest.mark.parametrize(("module", "name"), FUSERS)
@pytest.mark.parametrize("ops", [unary_chain(5), unary_chain(62), SOFTMAX],
                         ids=["chain5", "chain62", "softmax"])
def test_fusers_on_reused_traces_equal_refimpl(module, name, ops):
    for _ in range(3):
        churn(module, name)
        ours, theirs = both(module, name, ops[:3])
        assert state(ours) == state(theirs)
        our_clone, their_clone = ours.clone(), theirs.clone()
        feed(our_clone, ops[3:])
        feed(their_clone, ops[3:])
        assert state(our_clone) == state(their_clone)
        assert state(ours) == state(theirs)  # the clone's trace is its own
        del ours, theirs
        churn(module, name)
        assert state(our_clone) == state(their_clone)


@pytest.mark.parametrize(("module", "name"), FUSERS)
def test_reset_after_reuse_equals_fresh(module, name):
    fresh = state(feed(make("refimpl.planner", module, name), SOFTMAX))
    fuser = feed(make("fastplan", module, name), unary_chain(30, first=50))
    churn(module, name)
    fuser.reset()
    assert state(feed(fuser, SOFTMAX)) == fresh


@pytest.mark.parametrize(("module", "name"), FUSERS)
def test_clone_of_a_fuser_with_no_shape_equals_refimpl(module, name):
    """A copy made before any op (no output shape: its shape arena left unallocated) takes
    ops as a new fuser does."""
    ours, theirs = make("fastplan", module, name).clone(), \
        make("refimpl.planner", module, name).clone()
    churn(module, name)
    for k in range(1, len(SOFTMAX) + 1):
        feed(ours, SOFTMAX[k - 1:k])
        feed(theirs, SOFTMAX[k - 1:k])
        assert state(ours) == state(theirs)
