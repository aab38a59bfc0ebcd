"""``bench.gpu_timing`` on the adapter found (lavapipe in CI): recording a run's dispatches,
replaying them in one pass timed by pass timestamps or by the wall clock, re-binding at another
workgroup size, first-run timing; and ``bench/elementwise.py --quick`` end to end. The
numbers are only checked for being positive and finite, never against a speed."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from refimpl.frontend import Session
from refimpl.interpreter import executed_steps
from refimpl.seed import mul_add_exp
from bench.gpu_timing import (
    first_run, has_timestamps, prepared, recording, time_dispatches, with_workgroup_size,
)
from gpu.runtime.executor import GpuExecutor, KernelCache

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _specialised(monkeypatch):
    """Recording and replay are checked on the specialised kernel (a first run may ask for
    its tier itself)."""
    monkeypatch.setenv("FUSELAB_TIERS", "specialised-only")


def _recorded(device, stream, fused: bool = True):
    profile, executed = executed_steps(stream, device.profile())
    with recording(device.runtime) as seen:
        executor = GpuExecutor(stream, device, profile, KernelCache())
        result = executor.run(executed) if fused else executor.run_unfused()
    return list(seen), result


def _sane(timing, reps: int) -> None:
    assert len(timing.reps) == reps
    assert all(math.isfinite(r) and r > 0 for r in timing.reps)
    assert timing.median_us > 0 and timing.wall_s > 0
    assert json.loads(json.dumps(timing.to_dict()))["timed_reps"] == reps


def test_timing_recording_collects_every_dispatch_then_detaches(gpu_device):
    fused, _ = _recorded(gpu_device, mul_add_exp((8, 8), a_moved=False))
    unfused, _ = _recorded(gpu_device, mul_add_exp((8, 8), a_moved=False), fused=False)
    assert len(fused) == 1 and len(unfused) == 3
    assert fused[0].grid[0] >= 1 and "elemwise_fuse" in fused[0].source
    assert gpu_device.runtime.observers == []


@pytest.mark.parametrize("passes", ["one", "each"])
def test_timing_timestamps_give_positive_seconds_per_iteration(gpu_device, passes):
    if not has_timestamps(gpu_device):
        pytest.skip("the adapter lacks timestamp-query")
    seen, _ = _recorded(gpu_device, mul_add_exp((16, 16), a_moved=False), fused=False)
    timing = time_dispatches(gpu_device, seen, iterations=2, reps=3, passes=passes,
                             method="timestamp")
    _sane(timing, 3)
    assert (timing.method, timing.passes, timing.dispatches) == ("timestamp", passes, 3)


def test_timing_wall_fallback_gives_positive_seconds(gpu_device):
    seen, _ = _recorded(gpu_device, mul_add_exp((16, 16), a_moved=False))
    timing = time_dispatches(gpu_device, seen, iterations=2, reps=2, warmup=0, method="wall")
    _sane(timing, 2)
    assert timing.method == "wall"


def test_timing_refuses_nothing_to_time(gpu_device):
    seen, _ = _recorded(gpu_device, mul_add_exp((4, 4), a_moved=False))
    with pytest.raises(ValueError):
        time_dispatches(gpu_device, [])
    with pytest.raises(ValueError, match="passes"):
        time_dispatches(gpu_device, seen, passes="some")


def test_timing_replay_at_another_workgroup_size_computes_the_same(gpu_device):
    """Replaying the fused kernel at WG_SIZE 32 and 128 rewrites its output identically (the
    output's elements: a pooled buffer may be larger than its tensor)."""
    seen, result = _recorded(gpu_device, mul_add_exp((33, 12), a_moved=False))
    (kernel,) = seen
    rt = gpu_device.runtime
    out, n = kernel.buffers[3], 33 * 12
    expected = np.frombuffer(gpu_device.queue.read_buffer(out), np.float32)[:n].copy()
    for size in (32, 128):
        rt.queue.write_buffer(out, 0, np.zeros(out.size // 4, np.float32))
        again = with_workgroup_size(rt, kernel, size)
        assert again.workgroup_size == size
        assert again.workgroups * size >= kernel.workgroups * kernel.workgroup_size
        time_dispatches(gpu_device, [again], iterations=1, reps=1, warmup=0)
        got = np.frombuffer(gpu_device.queue.read_buffer(out), np.float32)[:n]
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(expected.reshape(33, 12), result[max(result)])


def test_timing_prepared_kernel_is_not_submitted(gpu_device):
    rt = gpu_device.runtime
    buf = rt.upload(np.ones(8, np.float32)).buffer
    source = ("override WG_SIZE: u32 = 64u;\n@group(0) @binding(0) var<storage, read_write> "
              "x: array<f32>;\n@compute @workgroup_size(WG_SIZE)\nfn main(@builtin("
              "global_invocation_id) g: vec3<u32>) {\n    if (g.x < 8u) { x[g.x] = 2.0; }\n}\n")
    before = rt.dispatched
    kernel = prepared(rt, source, [buf], 1, 64)
    assert rt.dispatched == before
    assert np.frombuffer(gpu_device.queue.read_buffer(buf), np.float32).tolist() == [1.0] * 8
    time_dispatches(gpu_device, [kernel], iterations=1, reps=1, warmup=0)
    assert np.frombuffer(gpu_device.queue.read_buffer(buf), np.float32).tolist() == [2.0] * 8


def _odd_expression():
    s = Session(executor=None)
    x = s.random((4, 8), seed=3)
    s.sync(((x * x).sin() - 0.25).abs())
    return s.close()


def test_timing_first_run_counts_what_a_new_expression_compiles(gpu_adapter):
    from gpu.runtime.device import request_device

    device = request_device()  # its own pipeline cache: the expression is new to it
    first = first_run(_odd_expression, device, tiers="specialised-only")
    again = first_run(_odd_expression, device, tiers="specialised-only")
    unfused = first_run(_odd_expression, device, fused=False)
    assert first.seconds > 0 and set(first.phases) == {"record", "plan", "run"}
    assert (first.compiled, first.emitted, first.dispatches) == (1, 1, 1)
    assert first.tiers == ("tier 1",) and first.planner in ("fastplan", "refimpl")
    assert (again.compiled, again.emitted) == (0, 1)  # a fresh kernel cache; pipeline cached
    assert unfused.dispatches == 4 and unfused.emitted == 0 and "plan" not in unfused.phases
    assert json.loads(json.dumps(first.to_dict()))["pipelines_compiled"] == 1


def test_timing_first_run_on_tier0_compiles_only_the_generic_kernel(gpu_adapter):
    from gpu.runtime.device import request_device

    device = request_device()
    first = first_run(_odd_expression, device, tiers="both")
    again = first_run(_odd_expression, device, tiers="tier0-only")
    assert (first.compiled, first.emitted, first.dispatches, first.tiers) == \
        (1, 0, 1, ("tier 0",))  # the tier-0 kernel, once per device
    assert (again.compiled, again.emitted, again.tiers) == (0, 0, ("tier 0",))


@pytest.mark.slow
def test_timing_bench_quick_writes_its_report(gpu_adapter, tmp_path):
    command = [sys.executable, "bench/elementwise.py", "--quick", "--no-torch", "--iterations",
               "1", "--out", str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "elementwise.json").read_text())
    assert set(report["workloads"]) == {"mul_add_exp", "gelu", "chain20"}
    for name, target in report["targets"].items():
        assert target["new_shape_ok"], name
        fl = report["workloads"][name]["fuselab"]
        assert fl["first_run_specialised"]["pipelines_compiled"] >= 1
        assert fl["first_run"]["tiers"] == ["tier 0"] and fl["tier0_tiers"] == ["tier 0"]
        assert fl["after_takeover_run"]["tiers"] == ["tier 1"]
        assert fl["fused_errors_vs_numpy"]["max_rel"] < 1e-5
        assert fl["tier0_errors_vs_numpy"]["max_rel"] < 1e-5
        assert all(row["median_us"] > 0 for row in fl["rows"].values())
        assert target["tier0_over_tier1"] > 0 and len(target["tier1_takeover_ms"]) == 1
    assert done.stdout.rstrip().splitlines()[-1].startswith("targets chain20:")
