"""Autotune of the fused reduce and ReduceBroadcasted launches: burn's defaults with it off,
one JSON line per decision, the anchored key, the disk cache (reused by a second process;
corrupted or foreign files rebuilt), and the generic candidate API."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu.runtime import autotune
from gpu.runtime.autotune import TUNER, Candidate, Tuner, anchor, cache_dir
from tests.gpu.helpers import broadcasted_stream, reduce_stream, run_both

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """Autotune on, an empty disk cache and in-memory cache, no forced routine."""
    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FUSELAB_AUTOTUNE", "on")
    monkeypatch.delenv("FUSELAB_REDUCE_ROUTINE", raising=False)
    monkeypatch.setattr(autotune, "TUNER", Tuner())
    import gpu.runtime.autotune_reduce as reduce_tuning

    monkeypatch.setattr(reduce_tuning, "TUNER", autotune.TUNER)
    return tmp_path


def test_anchor_rounds_up_to_powers_of_two():
    assert [anchor(n) for n in (0, 1, 2, 3, 5, 4096, 4097)] == [0, 1, 2, 4, 8, 4096, 8192]


def test_autotune_off_gives_burns_defaults(gpu_device, fresh, monkeypatch):
    monkeypatch.setenv("FUSELAB_AUTOTUNE", "off")
    _, _, executor = run_both(gpu_device, reduce_stream((4, 6, 8), "sum_dim", 1))
    assert executor.records[0].path == "fused"
    assert executor.records[0].kernels[0].spec.routine == "unit"
    _, _, executor = run_both(gpu_device, broadcasted_stream((2, 3, 8), "softmax"))
    assert executor.records[0].path == "fallback"
    assert autotune.TUNER.tuning_runs == 0
    assert not (fresh / "autotune.json").exists()


def test_autotune_logs_one_json_line_per_decision(gpu_device, fresh, monkeypatch, capsys):
    monkeypatch.setenv("FUSELAB_AUTOTUNE_LOG", "stdout")
    stream = broadcasted_stream((2, 3, 8), "softmax")
    expected, got, _ = run_both(gpu_device, stream)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()
             if line.startswith("{")]
    fusers = [line["fuser"] for line in lines]
    assert "ReduceBroadcasted" in fusers
    decision = lines[fusers.index("ReduceBroadcasted")]
    assert set(decision) == {"fuser", "key", "candidates", "winner"}
    assert set(decision["candidates"]) == {"fallback", "fused_unit", "fused_cube"}
    assert decision["winner"] == min(decision["candidates"], key=decision["candidates"].get)
    assert decision["key"]["reduce_axis"] == 8 and decision["key"]["inst"] == "Max"
    # the same key again: a cached decision, no timing
    run_both(gpu_device, broadcasted_stream((2, 4, 8), "softmax"))
    again = [json.loads(line) for line in capsys.readouterr().out.splitlines()
             if line.startswith("{") and '"ReduceBroadcasted"' in line]
    assert again and again[0]["cached"] and again[0]["winner"] == decision["winner"]


def test_autotune_key_anchors_shapes(gpu_device, fresh, monkeypatch, capsys):
    """[4, 6, 5] and [4, 7, 7] along axis 1 share a key (6, 7 → 8): one tuning run."""
    monkeypatch.setenv("FUSELAB_AUTOTUNE_LOG", "stdout")
    run_both(gpu_device, reduce_stream((4, 6, 5), "max_dim", 1))
    run_both(gpu_device, reduce_stream((4, 7, 7), "max_dim", 1))
    assert autotune.TUNER.tuning_runs == 1
    cached = [json.loads(line) for line in capsys.readouterr().out.splitlines()
              if line.startswith("{")]
    assert [line.get("cached", False) for line in cached] == [False, True]


_SECOND = """
import json
from gpu.runtime import autotune
from gpu.runtime.device import default_device
from tests.gpu.helpers import reduce_stream, run_both
run_both(default_device(), reduce_stream((4, 6, 8), "sum_dim", 2))
print(json.dumps({"tuning_runs": autotune.TUNER.tuning_runs}))
"""


def test_autotune_disk_cache_is_reused_by_a_second_process(gpu_device, fresh):
    env = dict(os.environ, PYTHONPATH=str(ROOT), FUSELAB_CACHE_DIR=str(fresh),
               FUSELAB_AUTOTUNE="on")
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", _SECOND], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=300, check=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1])["tuning_runs"])
    assert runs == [1, 0]
    data = json.loads((fresh / "autotune.json").read_text())
    assert data["format"] == "fuselab-autotune" and data["version"] == 1


@pytest.mark.parametrize("content", ["{not json", json.dumps({"format": "fuselab-autotune",
                                                               "version": 999, "entries": {}}),
                                     json.dumps({"format": "other", "entries": []})])
def test_autotune_corrupted_or_foreign_cache_is_rebuilt(gpu_device, fresh, content):
    (fresh / "autotune.json").write_text(content)
    run_both(gpu_device, reduce_stream((4, 6, 8), "sum_dim", 0))
    assert autotune.TUNER.tuning_runs == 1
    data = json.loads((fresh / "autotune.json").read_text())
    assert data["version"] == 1 and len(data["entries"]) == 1


def test_autotune_generic_candidates_pick_the_faster(gpu_device, fresh):
    """The API matmul and others plug into: a key, named candidates, the fastest wins."""
    rt = gpu_device.runtime
    source = """
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
override WG_SIZE: u32 = 64u;
@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var x = f32(gid.x);
    for (var i = 0u; i < 64u; i = i + 1u) { x = x * 1.0001 + 0.5; }
    out[gid.x] = x;
}
"""
    buffer = rt.empty((1 << 16,), __import__("refimpl").dtypes.DType.F32).buffer

    def dispatches(count):
        return lambda: [rt.prepare(source, [buffer], 1024, workgroup_size=64)] * count

    candidates = [Candidate("slow", dispatches(16)), Candidate("fast", dispatches(1))]
    winner = autotune.TUNER.choose(gpu_device, "Test", {"n": anchor(1 << 16)}, candidates,
                                   "slow")
    assert winner == "fast"
    assert autotune.TUNER.choose(gpu_device, "Test", {"n": 65536}, candidates, "slow") == "fast"
    assert autotune.TUNER.tuning_runs == 1
    assert cache_dir() == fresh
    assert TUNER is not autotune.TUNER  # the fixture's tuner, not the process-wide one


@pytest.mark.slow
def test_bench_reduce_quick_writes_its_report(gpu_adapter, tmp_path):
    command = [sys.executable, "bench/reduce.py", "--quick", "--no-torch", "--reps", "3",
               "--iterations", "1", "--out", str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "reduce.json").read_text())
    assert len(report["workloads"]) == 12
    for name, result in report["workloads"].items():
        fl = result["fuselab"]
        assert all(row["median_us"] > 0 for row in fl["rows"].values()), name
        for routine, errors in fl["errors_vs_numpy"].items():
            assert errors["max_rel"] < 1e-3 or errors["max_abs"] < 1e-4, (name, routine)
        if not name.startswith("argmin a="):  # a trailing reduction stays unfused
            assert report["targets"][name]["fused_dispatches"] == 1, name
    has_matplotlib = importlib.util.find_spec("matplotlib") is not None
    for table in ("reductions", "broadcasted"):
        png = tmp_path / f"reduce_{table}.png"
        if has_matplotlib:
            assert report["plots"][table] == str(png) and png.exists()
        else:  # the report says why there is no plot; no PNG is pretended
            assert "matplotlib is not installed" in report["plots"][table]
            assert not png.exists()
