"""The launch walk's extents guard (``fastplan.launch.launch._extents_fit``): a fused step goes to the
C layout cores only while every extent it reads fits int64 arithmetic; each answer is the rule's,
in Python ints.

* the verdict is kept on a live handle (``_Live.extent_fits``): a handle registered later for
  the same tensor is checked again, and one put back by ``undo_trial`` is the one checked
  before;
* at the bounds of the rule and of C long long arithmetic, and for drawn dims, strides and
  offsets (values that are no exact int, tensors or handles of another class included).
"""

from __future__ import annotations

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import fastplan
from refimpl.dtypes import DType
from refimpl.ir import TensorIr, TensorStatus

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")


def _context(tid: int, shape: tuple):
    from fastplan.launch.launch import FusedContext

    return FusedContext({0: TensorIr(tid, shape, DType.F32, TensorStatus.ReadOnly)}, {}, ())


def test_extents_verdict_follows_the_live_handle() -> None:
    """A handle found to fit is not checked again; the next handle of the tensor is."""
    from fastplan.launch.handles import Memory
    from fastplan.launch.launch import _extents_fit

    memory = Memory()
    memory.register(7, memory.alloc((2, 3), DType.F32))
    context = _context(7, (2, 3))
    assert _extents_fit(context, memory) is True
    assert _extents_fit(context, memory) is True  # the kept verdict
    memory.register(7, memory.alloc((2, 3), DType.F32, (2**61, 1)))  # 2**61 * 2 = 2**62
    assert _extents_fit(context, memory) is False
    memory.register(7, memory.alloc((2, 3), DType.F32, (3, 1)))
    assert _extents_fit(context, memory) is True
    memory.remove(7)
    assert _extents_fit(context, memory) is True  # no live handle: the dims alone


def test_extents_verdict_survives_a_trial_rolled_back() -> None:
    """An entry put back by ``undo_trial`` is the one checked before; a trial's own entries
    are gone with it."""
    from fastplan.launch.handles import Memory
    from fastplan.launch.launch import _extents_fit

    memory = Memory()
    memory.register(4, memory.alloc((5,), DType.F32))
    context = _context(4, (5,))
    assert _extents_fit(context, memory) is True
    memory.begin_trial()
    memory.register(4, memory.alloc((5,), DType.F32, (2**62,)))
    assert _extents_fit(context, memory) is False
    memory.undo_trial()
    assert _extents_fit(context, memory) is True


def _extents_fit_rule(tensors, handles):
    """The int64 extent rule, in Python ints: each tensor under 2**62 elements (in
    magnitude), its live handle's ``offset + sum(|dim * stride|)`` under 2**62."""
    for tensor in tensors.values():
        numel = 1
        for d in tensor.shape:
            numel *= d
        if not -(2**62) < numel < 2**62:
            return False
        h = handles.get(tensor.id)
        if h is not None and not h.offset + sum(
                abs(d * s) for d, s in zip(h.shape, h.strides)) < 2**62:
            return False
    return True


# dims and strides near the edges of a C long long, where the C arithmetic must step aside
_EDGE = st.sampled_from((0, 1, -1, 2**31, 2**31 - 1, 2**62, 2**62 - 1, -(2**62), 2**63 - 1,
                         -(2**63), 2**63, 2**64, 3 * 2**61)) | st.integers(-(2**20), 2**20)
_INTS = st.lists(_EDGE, max_size=4).map(tuple)
_ANY = st.lists(_EDGE | st.sampled_from((True, 2.0)), max_size=4).map(tuple)


def _extents_case(shape, handle=None):
    """A one-tensor context and a memory whose handle of it is ``(shape, strides, offset)``."""
    from fastplan.launch.launch import FusedContext
    from refimpl.planner.launch.handles import Handle
    from refimpl.ir import TensorIr, TensorStatus

    handles = {} if handle is None else {7: Handle(0, *handle, DType.F32)}
    tensors = {0: TensorIr(7, shape, DType.F32, TensorStatus.ReadOnly)}
    return FusedContext(tensors, {}, ()), type("Memory", (), {"handles": handles})()


@pytest.mark.parametrize("shape, handle, fits", [
    ((2**31, 2**31 - 1), None, True),
    ((2**31, 2**31), None, False),  # 2**62 elements exactly
    ((-(2**31), 2**31 - 1), None, True),
    ((-(2**31), 2**31), None, False),
    ((2**40, 2**40, 0), None, True),  # the product passes a long long, then is 0
    ((2**63,), None, False),  # a dim past a long long
    ((2,), ((2,), (1,), 2**62 - 3), True),
    ((2,), ((2,), (1,), 2**62 - 2), False),
    ((2,), ((2**61, 2), (2, -1), 0), False),  # |2**61 * 2| = 2**62
    ((2,), ((2**62, 2), (-2, 1), -(2**63)), True),  # |d * stride| = 2**63: no long long
    ((2,), ((2,), (1, 5, 9), -(2**70)), True),  # zip's pairs; an offset past a long long
    ((2,), ((2**62, 2**62), (2, 2), -(2**63) + 1), False),  # a sum past a long long
])
def test_extents_fit_at_the_edges(shape, handle, fits):
    """``_extents_fit`` at the bounds of the rule and of C long long arithmetic."""
    from fastplan.launch.launch import _extents_fit

    context, memory = _extents_case(shape, handle)
    assert _extents_fit_rule(context.tensors, memory.handles) is fits
    assert _extents_fit(context, memory) is fits


@given(data=st.data())
def test_extents_fit_follows_the_rule_in_python_ints(data):
    """``fastplan.launch.launch._extents_fit`` decides in C arithmetic where it can and steps aside
    to Python ints where it cannot (a product or sum past a long long, a value that is no
    exact int, a tensor or handle of another class): the answer is the rule's either way."""
    from fastplan.launch.launch import FusedContext, _extents_fit
    from refimpl.planner.launch.handles import Handle
    from refimpl.ir import TensorIr, TensorStatus

    dims = _INTS if data.draw(st.integers(0, 4), label="kind") else _ANY
    tensors, handles = {}, {}
    for rid in range(data.draw(st.integers(1, 3), label="tensors")):
        tid = data.draw(st.integers(0, 5), label="id")
        tensors[rid] = TensorIr(tid, data.draw(dims, label="shape"), DType.F32,
                                TensorStatus.ReadOnly)
        if data.draw(st.booleans(), label="live handle"):
            shape = data.draw(dims, label="handle shape")
            handles[tid] = Handle(0, shape, data.draw(dims, label="strides"),
                                  data.draw(_EDGE, label="offset"), DType.F32)
    context = FusedContext(tensors, {}, ())
    memory = type("Memory", (), {"handles": handles})()
    expected = _extents_fit_rule(tensors, handles)
    event(f"fits: {expected}")
    assert _extents_fit(context, memory) is expected
