"""The fuzzer finds injected bugs and writes repros that fail again on replay. Each mutant
runs in its own process (a mutant patches the process it runs in); the full table is
bench/fuzz_mutants.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fuselab.fuzz.mutants import MUTANTS, stale

ROOT = Path(__file__).resolve().parents[2]


def test_every_mutant_edits_code_that_exists():
    assert stale() == []
    assert len(MUTANTS) >= 20


def _fuzz(tmp_path: Path, name: str, count: int, *extra: str) -> dict:
    mutant = MUTANTS[name]
    done = subprocess.run(
        [sys.executable, "-m", "fuselab", "fuzz", "--mutant", name, "--count", str(count),
         "--stop-on-first", "--planner", "ref", "--json", "--shrink-time", "10", "--out",
         str(tmp_path), "--checks", *mutant.checks, "--device", *mutant.devices, *extra],
        capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 1, done.stderr
    return json.loads(done.stdout)


def _replays(directory: str) -> int:
    return subprocess.run([sys.executable, "-m", "fuselab", "fuzz", "--replay", directory],
                          capture_output=True, text=True, cwd=ROOT, timeout=120).returncode


def test_a_planner_mutant_is_found_shrunk_and_replayed(tmp_path):
    summary = _fuzz(tmp_path, "alias-readonly-input", 40)
    bucket = min(summary["buckets"].values(), key=lambda b: b["index"])
    assert bucket["repro"]["ops_after"] <= 5
    directory = Path(bucket["repro_dir"])
    assert {p.name for p in directory.iterdir()} == {
        "stream.json", "inputs.npz", "plan.json", "expected.npz", "meta.json"}
    meta = json.loads((directory / "meta.json").read_text())
    assert meta["mutant"] == "alias-readonly-input" and meta["seed"] == 0
    assert _replays(str(directory)) == 1


@pytest.mark.gpu
def test_the_reverted_broadcast_view_fix_is_found_on_the_gpu(gpu_adapter, tmp_path):
    summary = _fuzz(tmp_path, "broadcast-view-strides-reverted", 30)
    bucket = min(summary["buckets"].values(), key=lambda b: b["index"])
    assert bucket["failure"]["check"] == "gpu"
    assert bucket["repro"]["ops_after"] <= 5
    assert _replays(bucket["repro_dir"]) == 1
