"""fastplan's queue finds a dim by its hint (``fastplan.stream.queue``): the relative ops, shape
counts and steps are refimpl's whatever the hints say.

The queue looks a dim up first at the shape id it last gave a dim of the same hint byte (a
hash of the dim, for every exact int), checks it against the segment's dims, and scans where
it is stale or taken by another dim. These tests drive dims that share a hint byte, in one
segment and across drains, and dims that meet the hints of earlier segments (stale, at
another dim, both ends of the old ``[0, 256)`` range, not exact ints, more dims than the
queue's C list holds).

burn counterpart: ``crates/burn-fusion/src/stream/queue/{base,execution}.rs``.
"""

from __future__ import annotations

import pytest

import fastplan
from tests.fastplan.helpers import check_segments

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")


def _hint_byte(dim: int) -> int:
    """The hint byte of a dim, as ``_push_tensor`` hashes it."""
    return ((dim * 0x9E3779B97F4A7C15) % 2**64) >> 56


def test_dims_of_one_hint_byte_are_told_apart():
    """The dims the tests use share hint bytes as claimed (256 with 489, 1 with 234)."""
    assert _hint_byte(256) == _hint_byte(489) == _hint_byte(633)
    assert _hint_byte(1) == _hint_byte(234)
    assert _hint_byte(233) == _hint_byte(466)


_SHAPES = [
    ((256, 489), (489, 256), (256, 633, 489)),  # three dims of one byte, each hint replaced
    ((234, 1), (1, 234, 256)),  # 1 is shape id 0 from the start; 234 takes its byte
    ((466, 233), (233,), (466, 256, 489)),  # after the drain: hints of the last segment
    ((-1, 2**40, 256), (2**40, -1)),  # a negative dim and one past 2**31 are hashed too
    (tuple(range(256, 330)), (329, 256, 489)),  # more dims than the C list holds: the dict
    ((489, 256), (256, 489)),  # back to the C list and its hints after the drain
]


@pytest.mark.parametrize("drain_after", [1, 2, 3])
def test_dims_sharing_a_hint_byte_match_refimpl(drain_after):
    """Segments whose dims share hint bytes, within a segment and with earlier segments: the
    relative ops (the keys' shape ids), the assigned shape counts and the steps are
    refimpl's."""
    check_segments(_SHAPES, drain_after)


_SHAPES_AFTER_DRAINS = [
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
    check_segments(_SHAPES_AFTER_DRAINS, drain_after)
