"""Queueing an op on a warm planner must show what refimpl shows.

``StreamPlanner.run`` hands each op its stream position as an int it made on an earlier pass
(a warm planner keeps them), the queue finds a dim in ``[0, 256)`` where it last put it (a
hint, checked against the segment's dims and stale after every drain), and the read-ahead
reads an op's tensor fields by the offsets its struct lists. These tests drive the twins
through passes of other lengths, positions past 256, dims inside and outside the hint's
range (stale hints, more dims than the queue's C list holds, dims that are not exact ints)
and any op the stream strategy makes.

burn counterpart: ``crates/burn-fusion/src/stream/queue/{base,execution}.rs``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import fastplan
from refimpl.ir import OperationIr
from refimpl.strategies import streams
from refimpl.stream import Stream, stream_to_json
from tests.fastplan.helpers import check_segments, planners

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

if fastplan.COMPILED:
    from fuselab.workloads import build, shifted


def test_passes_of_other_lengths_give_refimpls_steps():
    """A short pass, a longer one (positions past 256, some made on this pass), then the short
    one again: each pass's steps are refimpl's, their op positions included."""
    twin, reference = planners()
    short = build("mixed", 40)
    long = shifted(build("mixed", 400), 10 * (len(short.items) + 1))
    assert len(long.items) > 300
    for stream in (short, long, shifted(short, 20 * (len(long.items) + 1)), long):
        steps = twin.run(stream)
        assert steps == reference.run(stream)
        assert max(i for step in steps for i in step.ops) == max(
            i for i, item in enumerate(stream.items) if isinstance(item, OperationIr))


_SHAPES = [
    ((1, 5, 8), (8, 5), (5, 1)),  # dim 8 at shape id 2
    ((6, 7, 8), (8, 6)),  # after the drain: 8 at shape id 3, its hint (2) holds 7
    ((8,), (0, 8), (255, 256), (256, 255)),  # 8 at 1; both ends of the hint's range
    ((-1, 2**40), (2**70, 3), (True, 1)),  # outside the hint's range; not an exact int
    (tuple(range(2, 80)), (79, 2, 40)),  # more dims than the C list holds: the dict
    ((40, 2), (2, 40)),  # back to the C list after the drain
]


@pytest.mark.parametrize("drain_after", [1, 2, 3])
def test_dims_found_again_after_drains_match_refimpl(drain_after):
    """Segments whose dims meet the hints of earlier segments, stale or at another dim: the
    relative ops (the keys' shape ids) and the steps are refimpl's."""
    check_segments(_SHAPES, drain_after)



@settings(max_examples=60)
@given(stream=streams(max_ops=14), passes=st.integers(2, 3))
def test_any_stream_planned_again_matches_refimpl(stream, passes):
    """Any stream the strategy makes, planned several times by one warm planner (the read-ahead
    reads every operand struct's tensor fields; later passes take the positions made before)."""
    note(stream_to_json(stream))
    twin, reference = planners()
    for _ in range(passes):
        assert twin.run(stream) == reference.run(stream)


def test_a_stream_that_is_no_tuple_matches_refimpl():
    """Items given as a list (no read-ahead) then as a tuple: refimpl's steps both times."""
    stream = build("mixed", 60)
    twin, reference = planners()
    as_list = Stream(stream.inputs, list(stream.items))
    assert twin.run(as_list) == reference.run(as_list)
    assert twin.run(stream) == reference.run(stream)
