"""The fused reduce kernel on the adapter against the interpreter's emulation of it: every
reduction on every axis, both routines, the three vector modes, fuse-on-read outputs, golden
sources, the kernel cache, and the refusals that fall back.

Golden files: ``tests/gpu/golden/reduce/<name>.wgsl`` (the ``metal`` profile's plan). Regenerate
deliberately with ``FUSELAB_RECORD_GOLDEN=1 pytest tests/gpu/test_fused_reduce.py`` and review
the diff.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest

from refimpl.devices import profile_named
from refimpl.frontend import Session
from gpu.check.agreement import compare
from tests.gpu.helpers import broadcasted_stream, reduce_stream, run_both

pytestmark = pytest.mark.gpu

GOLDEN = Path(__file__).resolve().parent / "golden" / "reduce"
RECORD = os.environ.get("FUSELAB_RECORD_GOLDEN", "") not in ("", "0")
# AnyDim / AllDim: the planner never fuses them (their bool output), so no walk reaches the
# kernel's Any/All instructions.
REDUCTIONS = ("sum_dim", "mean_dim", "prod_dim", "max_dim", "min_dim", "argmax", "argmin")


@pytest.fixture(params=["unit", "cube", "plane"])
def routine(request, monkeypatch, gpu_device):
    if request.param == "plane" and "subgroup" not in gpu_device.features:
        pytest.skip("no subgroup feature on this adapter")
    monkeypatch.setenv("FUSELAB_REDUCE_ROUTINE", request.param)
    return request.param


@pytest.mark.parametrize("shape", [(3, 5, 8), (3, 5, 7), (2, 4, 12)])
@pytest.mark.parametrize("name", REDUCTIONS)
def test_fused_reduce_matches_interpreter_on_every_axis(gpu_device, routine, shape, name):
    for axis in range(len(shape)):
        stream = reduce_stream(shape, name, axis)
        expected, got, executor = run_both(gpu_device, stream)
        assert [r.path for r in executor.records] == ["fused"], (name, axis)
        agreement = compare(stream, expected, got)
        assert agreement.ok, agreement.summary()


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_fused_reduce_read_block_output_written_once(gpu_device, routine, axis):
    stream = reduce_stream((4, 6, 8), "sum_dim", axis, extra=True)
    expected, got, _ = run_both(gpu_device, stream)
    assert len(got) == 2
    agreement = compare(stream, expected, got)
    assert agreement.ok, agreement.summary()


def _edge_stream(kind: str, name: str, axis: int):
    s = Session(executor=None)
    if kind == "empty":  # an empty reduced axis: sum 0, argmax 0 (the oracle's)
        x = s.random((0, 5), seed=1) * 2
    elif kind == "permuted":
        x = s.random((4, 6, 8), seed=1).permute((2, 0, 1)) * 2
    else:  # a column-major input
        x = s.random((4, 6, 8), seed=1, strides=(1, 4, 24)) + 1
    y = getattr(x, name)(axis)
    s.sync(y + 1 if name.startswith("arg") else y.tanh())
    return s.stream


@pytest.mark.parametrize("kind, axes", [("empty", (0,)), ("permuted", (0, 1, 2)),
                                        ("strided", (0, 1, 2))])
@pytest.mark.parametrize("name", ["sum_dim", "max_dim", "argmax", "mean_dim"])
def test_fused_reduce_edge_layouts(gpu_device, routine, kind, axes, name):
    for axis in axes:
        stream = _edge_stream(kind, name, axis)
        expected, got, _ = run_both(gpu_device, stream)
        agreement = compare(stream, expected, got)
        assert agreement.ok, (kind, name, axis, agreement.summary())


def test_fused_reduce_modes_follow_the_plan(gpu_device, monkeypatch):
    """Innermost axis vectorised: parallel; another axis: perpendicular; odd dims: scalar."""
    monkeypatch.setenv("FUSELAB_REDUCE_ROUTINE", "unit")
    modes = {}
    for shape, axis in (((4, 6, 8), 2), ((4, 6, 8), 1), ((3, 5, 7), 2)):
        _, _, executor = run_both(gpu_device, reduce_stream(shape, "sum_dim", axis))
        modes[(shape, axis)] = executor.records[0].kernels[0].spec.mode
    assert modes == {((4, 6, 8), 2): "parallel", ((4, 6, 8), 1): "perpendicular",
                     ((3, 5, 7), 2): "scalar"}


def test_fused_reduce_max_abs_and_f16(gpu_device, routine):
    s = Session(executor=None)
    x = s.random((4, 16), seed=5)
    s.sync((x - 0.5).abs().max_dim(1) * 2)
    stream = s.stream
    expected, got, _ = run_both(gpu_device, stream)
    assert compare(stream, expected, got).ok
    if not gpu_device.has_f16:
        pytest.skip("no shader-f16 on this adapter")
    for axis in (0, 1):
        stream = reduce_stream((8, 64), "sum_dim", axis, dtype="f16")
        expected, got, executor = run_both(gpu_device, stream)
        assert executor.records[0].path == "fused"
        agreement = compare(stream, expected, got)
        assert agreement.ok, agreement.summary()


def test_fused_reduce_new_shape_of_a_known_config_compiles_nothing(gpu_device, monkeypatch):
    monkeypatch.setenv("FUSELAB_REDUCE_ROUTINE", "unit")
    from gpu.runtime.reduce_launch import REDUCE_KERNEL_CACHE

    run_both(gpu_device, reduce_stream((4, 6, 8), "sum_dim", 1))
    compiled, misses = gpu_device.runtime.compiled, REDUCE_KERNEL_CACHE.misses
    expected, got, _ = run_both(gpu_device, reduce_stream((8, 10, 16), "sum_dim", 1))
    assert gpu_device.runtime.compiled == compiled
    assert REDUCE_KERNEL_CACHE.misses == misses
    np.testing.assert_allclose(got[max(got)], expected[max(expected)], rtol=1e-5, atol=1e-5)


def test_fused_reduce_over_the_workgroup_storage_limit_falls_back(gpu_device, monkeypatch,
                                                                   capsys):
    """The cube routine's shared accumulators exceed a tighter limit: the step runs its
    fallback, says so in the debug log, and the values still agree."""
    monkeypatch.setenv("FUSELAB_REDUCE_ROUTINE", "cube")
    monkeypatch.setenv("FUSELAB_DEBUG_LOG", "stdout")
    rt = gpu_device.runtime
    limits = dict(rt.properties.limits, **{"max-compute-workgroup-storage-size": 64})
    monkeypatch.setattr(rt, "properties", dataclasses.replace(rt.properties, limits=limits))
    stream = reduce_stream((4, 6, 8), "argmax", 2)
    expected, got, executor = run_both(gpu_device, stream)
    assert [r.path for r in executor.records] == ["fallback"]
    assert "fused reduce (ArgMax) falls back" in capsys.readouterr().out
    assert compare(stream, expected, got).ok


# --- golden sources -----------------------------------------------------------------------------

GOLDEN_CASES = {
    "sum_parallel_unit": ((4, 6, 8), "sum_dim", 2, "unit"),
    "sum_perpendicular_cube": ((4, 6, 8), "sum_dim", 1, "cube"),
    "mean_scalar_unit": ((3, 5, 7), "mean_dim", 0, "unit"),
    "argmin_parallel_cube": ((4, 6, 8), "argmin", 2, "cube"),
    "argmax_perpendicular_unit": ((4, 6, 8), "argmax", 0, "unit"),
    "min_scalar_cube": ((3, 5, 7), "min_dim", 1, "cube"),
    "sum_parallel_plane": ((4, 6, 8), "sum_dim", 2, "plane"),
    "argmax_perpendicular_plane": ((4, 6, 8), "argmax", 1, "plane"),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_fused_reduce_golden_wgsl(gpu_device, monkeypatch, name):
    shape, reduction, axis, routine_name = GOLDEN_CASES[name]
    monkeypatch.setenv("FUSELAB_REDUCE_ROUTINE", routine_name)
    stream = reduce_stream(shape, reduction, axis)
    _, _, executor = run_both(gpu_device, stream, profile_named("metal"))
    [kernel] = executor.records[0].kernels
    path = GOLDEN / f"{name}.wgsl"
    if RECORD:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_text(kernel.source)
        pytest.skip("recorded")
    assert kernel.source == path.read_text(), f"{name}: the WGSL changed (see the docstring)"


# --- ReduceBroadcasted --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 3, 8), (2, 3, 7), (3, 1000), (4, 2, 12)])
@pytest.mark.parametrize("kind", ["softmax", "layer_norm"])
def test_reduce_broadcasted_one_launch_matches_interpreter(gpu_device, routine, shape, kind):
    stream = broadcasted_stream(shape, kind)
    expected, got, executor = run_both(gpu_device, stream)
    if routine == "plane":  # no plane form: the per-block fallbacks, their reductions plane
        assert [r.path for r in executor.records] == ["fallback"]
    else:
        assert [(r.path, r.dispatches) for r in executor.records] == [("fused", 1)]
    agreement = compare(stream, expected, got)
    assert agreement.ok, agreement.summary()


def test_reduce_broadcasted_fallback_is_burns_default(gpu_device, monkeypatch):
    monkeypatch.setenv("FUSELAB_REDUCE_ROUTINE", "fallback")
    stream = broadcasted_stream((2, 3, 8), "softmax")
    expected, got, executor = run_both(gpu_device, stream)
    assert [r.path for r in executor.records] == ["fallback"]
    assert executor.records[0].dispatches > 1
    assert compare(stream, expected, got).ok


@pytest.mark.parametrize("kind", ["softmax", "layer_norm"])
@pytest.mark.parametrize("routine_name", ["unit", "cube"])
def test_reduce_broadcasted_golden_wgsl(gpu_device, monkeypatch, kind, routine_name):
    monkeypatch.setenv("FUSELAB_REDUCE_ROUTINE", routine_name)
    _, _, executor = run_both(gpu_device, broadcasted_stream((4, 16), kind),
                              profile_named("metal"))
    [kernel] = executor.records[0].kernels
    path = GOLDEN / f"{kind}_{routine_name}.wgsl"
    if RECORD:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_text(kernel.source)
        pytest.skip("recorded")
    assert kernel.source == path.read_text(), f"{path.name}: the WGSL changed"


def test_reduce_broadcasted_new_shape_compiles_nothing(gpu_device, monkeypatch):
    monkeypatch.setenv("FUSELAB_REDUCE_ROUTINE", "cube")
    run_both(gpu_device, broadcasted_stream((2, 3, 8), "layer_norm"))
    compiled = gpu_device.runtime.compiled
    stream = broadcasted_stream((3, 5, 64), "layer_norm")
    expected, got, executor = run_both(gpu_device, stream)
    assert [r.path for r in executor.records] == ["fused"]
    assert gpu_device.runtime.compiled == compiled
    assert compare(stream, expected, got).ok
