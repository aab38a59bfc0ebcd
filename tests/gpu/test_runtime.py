"""The runtime: buffers (bool as u32, f16, strided), clear errors for what WGSL cannot hold,
the pipeline cache (keyed by source, LRU, counted), dispatch folding past 65 535 workgroups,
and the debug log."""

from __future__ import annotations

import numpy as np
import pytest

from refimpl import ir
from refimpl.dtypes import DType
from refimpl.ops import op_named
from gpu.codegen.movement import CopyKernel
from gpu.errors import GpuLimitError, UnsupportedDTypeError, UnsupportedOpError
from gpu.runtime.properties import DeviceProperties
from gpu.runtime.server import Runtime, fold_workgroups
from gpu.runtime.unfused import run_op
from tests.gpu.cases import device_input, tensor


@pytest.mark.parametrize("dtype", [DType.F32, DType.F16, DType.I32, DType.U32, DType.BOOL],
                         ids=lambda d: d.value)
def test_runtime_upload_download_round_trip(runtime, dtype):
    if not runtime.properties.supports(dtype):
        pytest.skip("no shader-f16")
    rng = np.random.default_rng(3)
    values = (rng.random((3, 5)) < 0.5) if dtype is DType.BOOL else \
        rng.integers(-50, 50, (3, 5)).astype(dtype.numpy)
    back = runtime.download(runtime.upload(values, dtype))
    assert back.dtype == values.dtype
    np.testing.assert_array_equal(back, values)


def test_runtime_bool_is_stored_as_u32(runtime):
    t = runtime.upload(np.array([True, False, True]))
    np.testing.assert_array_equal(runtime.read_flat(t)[:3], np.array([1, 0, 1], np.uint32))


def test_runtime_download_reads_through_strides(runtime):
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = device_input(runtime, values, DType.F32, perm=[1, 0], pad=1)
    assert t.strides == (1, 4)
    np.testing.assert_array_equal(runtime.download(t), values)


@pytest.mark.parametrize("dtype", [DType.F64, DType.I64, DType.U64, DType.I16, DType.U8])
def test_runtime_rejects_dtypes_wgsl_lacks(runtime, dtype):
    with pytest.raises(UnsupportedDTypeError, match=dtype.value):
        runtime.upload(np.zeros(4, dtype=dtype.numpy))


def test_run_op_rejects_f64_with_typed_error(gpu_device):
    op = ir.OperationIr(op_named("Float.Exp"),
                        ir.UnaryOpIr(tensor(0, (2,), DType.F64), tensor(1, (2,), DType.F64, True)))
    with pytest.raises(UnsupportedDTypeError, match="f64"):
        run_op(gpu_device, op, [np.zeros(2)])


def test_run_op_checks_inputs_against_the_snapshots(gpu_device):
    op = ir.OperationIr(op_named("Float.Exp"),
                        ir.UnaryOpIr(tensor(0, (2,), DType.F32), tensor(1, (2,), DType.F32, True)))
    with pytest.raises(ValueError, match="f32"):
        run_op(gpu_device, op, [np.zeros(3, np.float32)])
    with pytest.raises(ValueError, match="f32"):
        run_op(gpu_device, op, [np.zeros(2, np.int32)])


def test_runtime_refuses_buffers_past_the_binding_limit(runtime):
    with pytest.raises(GpuLimitError, match="max-storage-buffer-binding-size"):
        runtime.empty((2**30,), DType.F32)


def test_runtime_refuses_more_bindings_than_the_device_has(runtime):
    buffers = [runtime.upload(np.zeros(4, np.float32)).buffer
               for _ in range(runtime.properties.max_storage_buffers + 1)]
    with pytest.raises(GpuLimitError, match="storage buffers"):
        runtime.dispatch("unused", buffers, 1)


def test_runtime_checks_against_its_properties_not_the_device(gpu_device):
    """A runtime knows its wgpu device and the properties it was given, nothing else."""
    limits = dict(gpu_device.limits, **{"max-storage-buffers-per-shader-stage": 2})
    narrow = DeviceProperties("narrow", limits, gpu_device.features)
    rt = Runtime(gpu_device.wgpu_device, narrow)
    buffers = [rt.upload(np.zeros(4, np.float32)).buffer for _ in range(3)]
    with pytest.raises(GpuLimitError, match="narrow's 2 per shader stage"):
        rt.prepare(CopyKernel("u32", 1).source(), buffers, 1)


def test_runtime_copy_is_a_new_buffer_with_the_same_values(runtime):
    source = runtime.upload(np.arange(6, dtype=np.int32).reshape(2, 3))
    strided = source.view((3, 2), (1, 3))
    copy = runtime.copy(strided)
    assert copy.buffer is not source.buffer
    assert (copy.shape, copy.strides, copy.offset) == ((3, 2), (1, 3), 0)
    np.testing.assert_array_equal(runtime.download(copy), np.arange(6).reshape(2, 3).T)


def test_runtime_dispatch_is_prepare_then_submit(runtime):
    """A prepared kernel runs only when submitted; observers see it then."""
    data = runtime.upload(np.arange(8, dtype=np.uint32))
    out = runtime.empty((8,), DType.U32)
    kernel = CopyKernel("u32", 1)
    words = runtime.words(kernel.schema.pack(8, (8,), [(0, (1,)), (0, (1,))]))
    seen = []
    runtime.observers.append(seen.append)
    try:
        prepared = runtime.prepare(kernel.source(), [data.buffer, out.buffer, words], 1)
        assert seen == [] and not runtime.download(out).any()
        runtime.submit(prepared)
    finally:
        runtime.observers.remove(seen.append)
    assert seen == [prepared]
    np.testing.assert_array_equal(runtime.download(out), np.arange(8))


def test_fold_workgroups_stays_within_the_limit():
    assert fold_workgroups(65535, 65535) == (65535, 1, 1)
    assert fold_workgroups(65537, 65535) == (65535, 2, 1)
    x, y, z = fold_workgroups(65535**2 + 1, 65535)
    assert max(x, y, z) <= 65535 and x * y * z >= 65535**2 + 1
    with pytest.raises(GpuLimitError):
        fold_workgroups(65535**3 + 1, 65535)


def test_dispatch_folds_more_than_65535_workgroups(runtime):
    """65 536·64 + 5 u32 elements with workgroups of 64: 65 537 workgroups on a 2-D grid."""
    n = 65536 * 64 + 5
    values = np.arange(n, dtype=np.uint32) * np.uint32(2654435761)
    src = runtime.upload(values)
    dst = runtime.empty((n,), DType.U32)
    kernel = CopyKernel("u32", 1)
    words = kernel.schema.pack(n, (n,), [(0, (1,)), (0, (1,))])
    groups = -(-n // 64)
    assert groups > 65535 and runtime.grid(groups)[1] > 1
    runtime.dispatch(kernel.source(), [src.buffer, dst.buffer, runtime.words(words)], groups,
                     workgroup_size=64)
    np.testing.assert_array_equal(runtime.download(dst), values)


def _add_op(shape):
    return ir.OperationIr(op_named("NumericFloat.Add"),
                          ir.BinaryOpIr(tensor(0, shape, DType.F32), tensor(1, shape, DType.F32),
                                        tensor(2, shape, DType.F32, True)))


def test_pipeline_cache_reuses_the_kernel_for_another_shape(gpu_device, runtime):
    """Shapes and strides are runtime metadata: a second shape compiles nothing."""
    def run(shape, transposed):
        x = np.ones(shape, np.float32)
        perm = [1, 0, 2] if transposed else [0, 1, 2]
        inputs = [device_input(runtime, x, DType.F32, perm, 1 if transposed else 0), x]
        return run_op(gpu_device, _add_op(shape), inputs)

    for transposed in (True, False):
        run((2, 3, 4), transposed)  # strided rank 3 / dense width 4
        before = runtime.compiled
        out = run((5, 7, 8), transposed)
        assert runtime.compiled == before
        np.testing.assert_array_equal(out, np.full((5, 7, 8), 2, np.float32))


def test_pipeline_cache_is_an_lru(gpu_device):
    rt = Runtime(gpu_device.wgpu_device, gpu_device.properties, cache_size=2)
    sources = [CopyKernel("u32", rank).source() for rank in (1, 2, 3)]
    for source in sources:
        rt.pipeline_for(source)
    assert (rt.compiled, rt.cached) == (3, 2)
    rt.pipeline_for(sources[2])  # still cached
    assert rt.compiled == 3
    rt.pipeline_for(sources[0])  # evicted: compiled again
    assert rt.compiled == 4


def test_debug_log_prints_compiled_kernels(gpu_device, monkeypatch, capsys):
    monkeypatch.setenv("FUSELAB_DEBUG_LOG", "stdout")
    rt = Runtime(gpu_device.wgpu_device, gpu_device.properties)
    rt.pipeline_for(CopyKernel("u32", 2).source())
    printed = capsys.readouterr().out
    assert "fuselab kernel: copy u32 rank 2" in printed and "@compute" in printed
