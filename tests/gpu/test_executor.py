"""``GpuExecutor``: whole planned streams on the adapter, against the interpreter within the
chained WGSL accuracy bounds (``gpu.check.agreement``); in-place writes that really alias, strided /
broadcast / view inputs, dispatch and compilation counts, the CLI and the demo section."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import numpy as np
import pytest

from refimpl.dtypes import DType
from refimpl.frontend import Session
from refimpl.interpreter import Interpreter, executed_steps
from refimpl.planner.engine.trace import InputSwapDims
from refimpl.seed import SEED_STREAMS, mul_add_exp
from refimpl.strategies import StreamBuilder
from refimpl.stream import Stream
from gpu.check.agreement import compare
from gpu.errors import UnsupportedDTypeError
from gpu.runtime.buffers import DeviceTensor
from gpu.runtime.executor import GpuExecutor, KernelCache, run_unfused


@pytest.fixture(autouse=True)
def _specialised(monkeypatch):
    """These tests inspect the specialised kernel (tier 1); tier 0: tests/gpu/test_tier0.py."""
    monkeypatch.setenv("FUSELAB_TIERS", "specialised-only")


def _run(device, stream: Stream, profile=None):
    profile, executed = executed_steps(stream, profile or device.profile())
    expected = Interpreter(stream, profile).run(executed)
    executor = GpuExecutor(stream, device, profile)
    return expected, executor.run(executed), executor


def _agree(stream: Stream, expected, got) -> None:
    agreement = compare(stream, expected, got)
    assert agreement.ok, agreement.summary()
    assert sorted(got) == sorted(expected)


@pytest.mark.parametrize("name", sorted(SEED_STREAMS))
def test_executor_seed_stream_matches_interpreter(gpu_device, name):
    stream = SEED_STREAMS[name]()
    expected, got, executor = _run(gpu_device, stream)
    _agree(stream, expected, got)
    for record in executor.records:
        if record.path == "fused":
            assert record.dispatches == len(record.kernels) == 1


def test_executor_seed_streams_on_the_seed_profile(gpu_device):
    """Planned for metal (28 bindings, the seed page), run on this adapter."""
    for name in ("independent", "chain", "cat_three_middle_dim"):
        stream = SEED_STREAMS[name]()
        expected, got, _ = _run(gpu_device, stream, "metal")
        _agree(stream, expected, got)


# --- in place -------------------------------------------------------------------------------


def test_executor_inplace_output_is_the_input_buffer(gpu_device):
    stream = mul_add_exp((4, 6))
    profile, executed = executed_steps(stream, gpu_device.profile())
    executor = GpuExecutor(stream, gpu_device, profile)
    a_buffer = executor.buffers[executor.memory.handles[0].buffer]
    got = executor.run(executed)
    assert executor.records[0].aliases() == ((5, 0),)
    out = executor.memory.handles[5]
    assert executor.buffers[out.buffer] is a_buffer
    raw = gpu_device.runtime.download(DeviceTensor(a_buffer, DType.F32, (4, 6), (6, 1)))
    np.testing.assert_array_equal(raw, got[5])  # a's own buffer holds the result


def test_executor_held_input_keeps_its_values(gpu_device):
    stream = SEED_STREAMS["mul_add_exp_held"]()
    profile, executed = executed_steps(stream, gpu_device.profile())
    executor = GpuExecutor(stream, gpu_device, profile)
    a_buffer = executor.buffers[executor.memory.handles[0].buffer]
    executor.run(executed)
    assert executor.records[0].aliases() == ()
    a = gpu_device.runtime.download(DeviceTensor(a_buffer, DType.F32, (4, 6), (6, 1)))
    from refimpl.data import logical_values
    np.testing.assert_array_equal(a, logical_values(stream.inputs[0], 0))


def test_executor_synced_value_survives_a_later_inplace_write(gpu_device):
    """acc is read, then consumed in place by the next step: the read keeps its value."""
    stream = SEED_STREAMS["inplace_kv_cache"]()
    expected, got, executor = _run(gpu_device, stream)
    assert [r.aliases() for r in executor.records] == [((3, 0),), ((6, 3),), ((9, 6),)]
    np.testing.assert_array_equal(got[3], np.full(32, 2.0, np.float32))
    np.testing.assert_array_equal(got[6], np.full(32, 5.0, np.float32))
    np.testing.assert_array_equal(got[9], np.full(32, 9.0, np.float32))
    _agree(stream, expected, got)


# --- layouts --------------------------------------------------------------------------------


def _strided_stream(a_strides, b_shape, b_strides=None, c_shape=(4, 1)) -> Stream:
    builder = StreamBuilder()
    a = builder.add_input((4, 8), DType.F32, a_strides, seed=1)
    b = builder.add_input(b_shape, DType.F32, b_strides, seed=2)
    c = builder.add_input(c_shape, DType.F32, seed=3)
    m = builder.op("NumericFloat.Mul", (4, 8), DType.F32, lhs=a, rhs=b)
    s = builder.op("NumericFloat.Add", (4, 8), DType.F32, lhs=m, rhs=c)
    e = builder.op("Float.Tanh", (4, 8), DType.F32, input=s)
    builder.sync((e,))
    return builder.build()


@pytest.mark.parametrize("a_strides, b_shape, b_strides", [
    ((1, 4), (4, 8), None),  # transposed a
    ((10, 1), (4, 8), (1, 5)),  # padded a, transposed and padded b
    (None, (1, 8), None),  # broadcast row (and a broadcast column c)
    ((1, 4), (1, 8), (8, 1)),
], ids=["transposed", "padded", "broadcast", "transposed-broadcast"])
def test_executor_strided_and_broadcast_inputs(gpu_device, a_strides, b_shape, b_strides):
    stream = _strided_stream(a_strides, b_shape, b_strides)
    expected, got, executor = _run(gpu_device, stream)
    _agree(stream, expected, got)
    assert [r.path for r in executor.records] == ["fused"]


def test_executor_fused_swap_dims_view(gpu_device):
    """``a.exp() + a.swap_dims(0, 1)``: the view is read inside the kernel (InputSwapDims)."""
    s = Session(executor=None)
    a = s.random((4, 4), seed=1)
    s.sync(a.exp() + a.swap_dims(0, 1))
    stream = s.close()
    expected, got, executor = _run(gpu_device, stream)
    _agree(stream, expected, got)
    (kernel,) = executor.records[0].kernels
    assert any(isinstance(op.args.input, InputSwapDims) for op in kernel.config.ops
               if op.name == "Assign")


def test_executor_unfused_view_is_metadata_only(gpu_device):
    """A lone swap_dims launches nothing; the fused kernel reads the swapped strides."""
    stream = SEED_STREAMS["lone_view"]()
    expected, got, executor = _run(gpu_device, stream)
    assert [(r.path, r.dispatches) for r in executor.records] == [("unfused", 0), ("fused", 1)]
    _agree(stream, expected, got)


# --- counts ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name, counts", [
    ("mul_add_exp", [("fused", 1)]),
    ("chain", [("fused", 1), ("fused", 1)]),
    ("matmul_add_exp", [("fused", 1)]),  # the matmul and its epilogue, one kernel
    ("mul_sum_dim_exp", [("fused", 1)]),  # fuse-on-read, the reduction, fuse-on-write
    ("full_sum_plus_one", [("unfused", 1), ("unfused", 1)]),
])
def test_executor_counts_dispatches_per_step(gpu_device, name, counts, monkeypatch):
    monkeypatch.setenv("FUSELAB_AUTOTUNE", "off")  # burn's default routine, no timing runs
    _, _, executor = _run(gpu_device, SEED_STREAMS[name]())
    assert [(r.path, r.dispatches) for r in executor.records] == counts


def test_executor_unfused_runs_one_kernel_per_op(gpu_device):
    stream = mul_add_exp((4, 6))
    executor = GpuExecutor(stream, gpu_device)
    got = executor.run_unfused()
    assert [r.dispatches for r in executor.records] == [1, 1, 1]
    _agree(stream, executed_interpreter(stream, gpu_device), got)
    np.testing.assert_array_equal(run_unfused(stream, gpu_device)[5], got[5])


def executed_interpreter(stream: Stream, device) -> dict:
    profile, executed = executed_steps(stream, device.profile())
    return Interpreter(stream, profile).run(executed)


def test_executor_new_shape_of_a_known_config_compiles_nothing(gpu_device):
    rt = gpu_device.runtime
    _run(gpu_device, mul_add_exp((4, 6)))
    before = rt.compiled
    for shape in ((2, 2), (6, 10), (128, 2)):
        stream = mul_add_exp(shape)
        expected, got, executor = _run(gpu_device, stream)
        _agree(stream, expected, got)
        assert executor.records[0].compiled == 0
    assert rt.compiled == before


def test_executor_rejects_dtypes_wgsl_lacks(gpu_device):
    builder = StreamBuilder()
    a = builder.add_input((2, 3), DType.F64, seed=1)
    builder.sync((builder.op("Float.Exp", (2, 3), DType.F64, input=a),))
    with pytest.raises(UnsupportedDTypeError, match="f64"):
        GpuExecutor(builder.build(), gpu_device)


def test_executor_debug_log_prints_config_and_source(monkeypatch, capsys):
    from gpu.runtime.device import request_device

    device = request_device()  # fresh pipeline cache: the kernel compiles here
    monkeypatch.setenv("FUSELAB_DEBUG_LOG", "stdout")
    stream = mul_add_exp((4, 6))
    profile, executed = executed_steps(stream, device.profile())
    GpuExecutor(stream, device, profile, kernels=KernelCache()).run(executed)
    out = capsys.readouterr().out
    assert "[fuselab] fused kernel" in out and "config: FuseBlockConfig(rank=2" in out
    assert "// fuselab elemwise_fuse: rank 2, width 2" in out


# --- command line and demo --------------------------------------------------------------------


def _cli(args: list[str]) -> tuple[int, str]:
    from fuselab.cli import main

    buffer = io.StringIO()
    with redirect_stdout(buffer):
        code = main(args)
    return code, buffer.getvalue()


def test_cli_run_backend_gpu_and_wgsl(gpu_device, tmp_path):
    path = tmp_path / "s.json"
    path.write_text(mul_add_exp((4, 6)).to_json())
    code, _ = _cli(["run", str(path), "--backend", "gpu", "--out", str(tmp_path / "o.npz")])
    assert code == 0
    saved = np.load(tmp_path / "o.npz")
    _agree(mul_add_exp((4, 6)), executed_interpreter(mul_add_exp((4, 6)), gpu_device),
           {5: saved["t5"]})
    code, text = _cli(["wgsl", str(path), "--json"])
    (kernel,) = json.loads(text)["kernels"]
    assert code == 0 and kernel["width"] == 2 and "exp(t4)" in kernel["source"]
    code, text = _cli(["wgsl", str(path)])
    assert text.startswith("// step 0: ElementWise ops [0, 1, 2], kernel ")


def test_demo_gpu_section_shows_the_seed_counts(gpu_device):
    from fuselab.demo import Report
    from fuselab.demo_gpu import gpu_section

    report = Report("metal")
    with redirect_stdout(io.StringIO()):
        gpu_section(report)
    assert report.failures == []
    text = "\n".join(report.lines)
    assert "one dispatch for the whole expression" in text and "unfused" in text
