"""The fuzzer's streams: reproducible from the seed, inputs repaired (NNSmith), a share kept
non-finite on purpose, long chains that reach the op limit."""

from __future__ import annotations

import numpy as np

from fuselab.fuzz.generate import CHAIN_OPS, draw_stream, first_nonfinite_op, long_chain, repair
from refimpl.dtypes import DType
from refimpl.strategies import StreamBuilder


def test_a_stream_is_a_function_of_seed_and_index():
    assert draw_stream(7, 3).stream.to_json() == draw_stream(7, 3).stream.to_json()
    assert draw_stream(7, 3).stream.to_json() != draw_stream(8, 3).stream.to_json()
    assert draw_stream(7, 3).stream.to_json() != draw_stream(7, 4).stream.to_json()


def test_inputs_are_repaired_or_kept_nonfinite_on_purpose():
    kinds = {draw_stream(0, i).values for i in range(120)}
    assert {"finite", "kept non-finite"} <= kinds
    assert "repaired" in kinds


def _log_of_negatives():
    b = StreamBuilder()
    x = b.add_input((4,), DType.F32, data=[-1.0, -2.0, 3.0, -0.5])
    y = b.op("NumericFloat.MulScalar", (4,), DType.F32, lhs=x, rhs=2.0)
    z = b.op("Float.Log", (4,), DType.F32, input=y)
    b.sync((z,))
    return b.build()


def test_repair_redraws_the_inputs_of_the_first_op_making_nonfinite_values():
    stream = _log_of_negatives()
    assert first_nonfinite_op(stream) == 1
    repaired, rounds = repair(stream, np.random.default_rng(0))
    assert rounds == 1 and first_nonfinite_op(repaired) is None
    assert repaired.items == stream.items


def test_long_chains_cross_the_op_limit_of_a_block():
    stream = long_chain(np.random.default_rng(1))
    assert CHAIN_OPS[0] <= len(stream.ops) < CHAIN_OPS[1]
    assert max(CHAIN_OPS) > 65
