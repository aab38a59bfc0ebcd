"""Streams the fuzzer (``fuselab fuzz``) found wrong and that are not fixed yet.

Each is a strict xfail: it fails today, and the day a fix makes it pass the test fails too,
so the fix moves it to the pinned examples of the property that should have drawn it.
"""

import numpy as np
import pytest

from refimpl.eager import run_stream
from refimpl.interpreter import run_planned
from tests.differential.helpers import pinned


@pytest.mark.xfail(strict=True, reason="interp differs from eager: Clamp written in place "
                   "into a swapped view of an input an earlier block read broadcast "
                   "(fuselab fuzz --count 2000 --seed 0, stream 1586)")
def test_clamp_in_place_into_swapped_broadcast_input():
    stream = pinned("clamp_inplace_into_swapped_broadcast")
    expected, got = run_stream(stream), run_planned(stream)
    for tid, want in expected.items():
        np.testing.assert_array_equal(got[tid], want)


@pytest.mark.xfail(strict=True, reason="interp differs from eager: an input transposed but "
                   "for a trailing size-1 dim ([8, 8, 1], strides [1, 8, 1]) read plainly and "
                   "through swap_dims(0, 1) in one block (fuselab fuzz --count 1000 --seed 0, "
                   "stream 920)")
def test_swap_view_of_transposed_input_with_trailing_unit_dim():
    stream = pinned("swap_view_of_transposed_trailing_unit")
    expected, got = run_stream(stream), run_planned(stream)
    for tid, want in expected.items():
        np.testing.assert_array_equal(got[tid], want)
