"""Shrinking keeps the failure and cuts everything else."""

from __future__ import annotations

from fuselab.fuzz.checks import Failure
from fuselab.fuzz.generate import draw_stream
from fuselab.fuzz.shrink import shrink, size
from refimpl.eager import run_stream

FAILURE = Failure("interp", "mismatch")


def _has(name: str):
    def fails(stream):
        return FAILURE if any(op.op.name.endswith(name) for op in stream.ops) else None
    return fails


def _stream_with(name: str):
    for index in range(400):
        stream = draw_stream(0, index).stream
        if size(stream) >= 6 and _has(name)(stream):
            return stream
    raise AssertionError(f"no stream with {name}")


def test_shrinking_cuts_a_stream_to_the_one_op_that_fails():
    stream = _stream_with(".Add")
    small, failure, tries = shrink(stream, FAILURE, _has(".Add"), seconds=20)
    assert failure == FAILURE and tries > 0
    assert size(small) == 1 and small.ops[0].op.name.endswith(".Add")
    run_stream(small)  # still a valid stream


def test_a_candidate_that_fails_another_way_is_not_kept():
    stream = _stream_with(".Add")
    other = Failure("interp", "raised KernelError")
    small, failure, _ = shrink(stream, FAILURE,
                               lambda s: FAILURE if s is stream else other, seconds=5)
    assert small is stream and failure == FAILURE
