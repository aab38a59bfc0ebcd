"""The interpreter (``refimpl.interpreter``, ``refimpl.fused_kernel``,
``refimpl.planner.launch.handles``): seed streams and burn's in-place tests (notes §10.1 item 8) by
value, real in-place overwrites, the kernel's refusals, unfused layouts, and ``fuselab run --backend
interp``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fuselab.cli import main
from refimpl.dtypes import DType
from refimpl.eager import run_stream
from refimpl.fused_kernel import KernelError
from refimpl.interpreter import Interpreter, executed_steps, run_planned
from refimpl.planner.launch.handles import Memory
from refimpl.seed import SEED_STREAMS
from refimpl.strategies import StreamBuilder
from refimpl.stream import Stream, save_stream


def interpret(stream: Stream, device: str = "metal") -> Interpreter:
    profile, executed = executed_steps(stream, device)
    interp = Interpreter(stream, profile)
    interp.run(executed)
    return interp


def aliases(interp: Interpreter) -> list[tuple[int, int]]:
    return [pair for record in interp.records for pair in record.aliases()]


def synced(stream: Stream) -> dict[int, np.ndarray]:
    return run_planned(stream)


@pytest.mark.parametrize("name", sorted(SEED_STREAMS))
def test_interpreter_seed_streams_equal_eager(name):
    stream = SEED_STREAMS[name]()
    expected, got = run_stream(stream), run_planned(stream)
    assert sorted(expected) == sorted(got)
    for tid, values in expected.items():
        assert got[tid].dtype == values.dtype
        assert np.array_equal(got[tid], values, equal_nan=True)


# --- burn's in-place tests (values) -------------------------------------------------------------


def test_interpreter_inplace_consuming_chain():
    stream = SEED_STREAMS["inplace_consuming_chain"]()
    interp = interpret(stream)
    last = max(interp.synced)
    assert np.array_equal(interp.synced[last], [[46.0, 62.0], [78.0, 94.0]])
    assert len(aliases(interp)) >= 4


def test_interpreter_inplace_with_a_broadcast_input():
    stream = SEED_STREAMS["inplace_broadcast"]()
    interp = interpret(stream)
    [value] = interp.synced.values()
    assert np.array_equal(value, [[22, 44, 66, 88], [30, 52, 74, 96]])
    assert len(aliases(interp)) == 1


def test_interpreter_inplace_zero_stride_singleton():
    b = StreamBuilder()
    t = b.add_input((2, 4, 1), DType.F32, strides=(4, 1, 0),
                   data=[[[1.0], [2.0], [3.0], [4.0]], [[5.0], [6.0], [7.0], [8.0]]])
    bias = b.add_input((1, 4, 1), DType.F32, data=[[[10.0], [20.0], [30.0], [40.0]]])
    out = b.op("NumericFloat.MulScalar", (2, 4, 1), DType.F32, rhs=2.0,
               lhs=b.op("NumericFloat.Add", (2, 4, 1), DType.F32, lhs=t, rhs=bias))
    b.sync((out,))
    values = synced(b.build())[out]
    assert np.array_equal(values[..., 0], [[22, 44, 66, 88], [30, 52, 74, 96]])


def test_interpreter_inplace_leaves_a_held_input_alone():
    stream = SEED_STREAMS["inplace_read_only"]()
    interp = interpret(stream)
    t = stream.ops[0].desc.lhs.id
    assert np.array_equal(interp.synced[t], [[1, 2], [3, 4]])
    assert np.array_equal(interp.memory.value(t), [[1, 2], [3, 4]])
    assert aliases(interp) == []


def test_interpreter_inplace_feeding_a_fused_reduce():
    stream = SEED_STREAMS["inplace_reduce"]()
    interp = interpret(stream)
    out, res = sorted(interp.synced)
    assert np.array_equal(interp.synced[out], [[4, 6, 8, 10], [12, 14, 16, 18]])
    assert np.array_equal(interp.synced[res], [[85], [181]])
    assert [r.step.fuser for r in interp.records if r.step.fused] == ["Reduce"]
    assert len(aliases(interp)) == 1


def test_interpreter_inplace_kv_cache():
    interp = interpret(SEED_STREAMS["inplace_kv_cache"]())
    assert np.array_equal(interp.synced[max(interp.synced)], np.full(32, 9.0))
    assert len(aliases(interp)) >= 3


def test_interpreter_inplace_output_really_takes_the_input_buffer():
    stream = SEED_STREAMS["mul_add_exp"]()
    a = stream.ops[0].desc.lhs.id
    before = Memory()
    before.load_inputs(stream)
    interp = interpret(stream)
    [(out, source)] = aliases(interp)
    assert source == a
    assert interp.memory.handles[out].buffer == before.handles[a].buffer
    assert a not in interp.memory.handles
    assert np.array_equal(interp.memory.data[before.handles[a].buffer],
                          interp.synced[out].reshape(-1))


# --- layouts of unfused ops -------------------------------------------------------------------


def test_interpreter_unfused_views_share_their_buffer():
    b = StreamBuilder()
    x = b.add_input((4, 6), DType.F32, seed=3)
    y = b.op("BaseFloat.SwapDims", (6, 4), DType.F32, input=x, dim1=0, dim2=1)
    z = b.op("BaseFloat.Reshape", (24,), DType.F32, input=y)
    b.sync((y, z))
    stream = b.build()
    interp = interpret(stream)
    y_handle = interp.memory.handles[y]
    assert y_handle.strides == (1, 6)
    assert interp.memory.handles[z].buffer != y_handle.buffer  # a transposed reshape copies
    assert np.array_equal(interp.synced[z], run_stream(stream)[z])


def test_interpreter_slice_views_only_at_aligned_offsets():
    b = StreamBuilder()
    x = b.add_input((4, 64), DType.F32, seed=3)
    rows = b.op("BaseFloat.Slice", (2, 64), DType.F32, tensor=x, ranges=((1, 3), (0, 64)))
    cols = b.op("BaseFloat.Slice", (4, 2), DType.F32, tensor=x, ranges=((0, 4), (1, 3)))
    b.sync((rows, cols))
    stream = b.build()
    interp = interpret(stream)
    source = Memory()
    source.load_inputs(stream)
    assert interp.memory.handles[rows].buffer == source.handles[x].buffer
    assert interp.memory.handles[rows].offset == 64
    assert interp.memory.handles[cols].buffer != source.handles[x].buffer
    expected = run_stream(stream)
    assert all(np.array_equal(interp.synced[t], expected[t]) for t in (rows, cols))


# --- what the kernel emulation refuses --------------------------------------------------------


@pytest.mark.parametrize("shape, strides", [((2, 2, 2), (5, 2, 1)), ((4, 1, 8), (9, 8, 1))])
def test_interpreter_refuses_misaligned_vectors_from_an_unpitched_pad(shape, strides):
    """burn sizes a vector on the smallest other stride only (seed page): these pads get
    width 2 / 4 although a row starts inside a vector. The emulation refuses to load it."""
    b = StreamBuilder()
    x = b.add_input(shape, DType.F32, strides=strides, seed=1)
    out = b.op("Float.Exp", shape, DType.F32,
               input=b.op("Float.Log", shape, DType.F32, input=x))
    b.sync((out,))
    stream = b.build()
    with pytest.raises(KernelError, match="misaligned"):
        run_planned(stream)


# --- the CLI ------------------------------------------------------------------------------------


def test_interpreter_cli_backend_matches_eager(tmp_path, capsys):
    path = tmp_path / "seed.json"
    save_stream(SEED_STREAMS["mul_add_exp"](), path)
    rows = {}
    for backend in ("eager", "interp"):
        assert main(["run", str(path), "--backend", backend, "--json"]) == 0
        rows[backend] = json.loads(capsys.readouterr().out)["synced"]
    assert rows["eager"] == rows["interp"]
