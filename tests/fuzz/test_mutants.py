"""The fuzzer finds injected bugs and writes repros that fail again on replay. Each mutant
runs in its own process (a mutant patches the process it runs in); the full table is
bench/fuzz_mutants.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import fastplan
from fuselab.fuzz.mutants import MUTANTS, stale

ROOT = Path(__file__).resolve().parents[2]


def test_every_mutant_edits_code_that_exists():
    assert stale() == []
    assert len(MUTANTS) >= 20


def _fuzz(tmp_path: Path, name: str, count: int, *extra: str) -> dict:
    mutant = MUTANTS[name]
    done = subprocess.run(
        [sys.executable, "-m", "fuselab", "fuzz", "--mutant", name, "--count", str(count),
         "--stop-on-first", "--planner", "ref", "--json", "--shrink-time", "60", "--out",
         str(tmp_path), "--checks", *mutant.checks, "--device", *mutant.devices, *extra],
        capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 1, done.stderr
    return json.loads(done.stdout)


def _replays(directory: str) -> int:
    return subprocess.run([sys.executable, "-m", "fuselab", "fuzz", "--replay", directory],
                          capture_output=True, text=True, cwd=ROOT, timeout=120).returncode


# the compiled twin is the independent planner the plan check holds the mutated refimpl to
# (without it fastplan runs refimpl's own modules, the mutant included)
@pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled (make build)")
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


# a binding's vector size shows in its launch plan only: the launch check holds refimpl's
# (mutated) launch planner to the compiled twin's
@pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled (make build)")
@pytest.mark.parametrize("name", ["multi-read-width-kept", "swap-view-vector-unchecked"])
def test_a_vector_size_mutant_is_found_by_the_launch_check(tmp_path, name):
    assert "launch" in MUTANTS[name].checks
    summary = _fuzz(tmp_path, name, 200, "--checks", "launch")
    bucket = min(summary["buckets"].values(), key=lambda b: b["index"])
    assert bucket["failure"]["check"] == "launch"
    assert bucket["failure"]["symptom"].endswith("vector size differs")
    assert "vector size refimpl" in bucket["repro"]["failure"]["detail"]
    assert bucket["repro"]["ops_after"] <= 5
    assert _replays(bucket["repro_dir"]) == 1


@pytest.mark.gpu
def test_the_reverted_broadcast_view_fix_is_found_on_the_gpu(gpu_adapter, tmp_path):
    summary = _fuzz(tmp_path, "broadcast-view-strides-reverted", 60)
    bucket = min(summary["buckets"].values(), key=lambda b: b["index"])
    assert bucket["failure"]["check"] == "gpu"
    assert bucket["repro"]["ops_after"] <= 5
    assert _replays(bucket["repro_dir"]) == 1


_RESHAPE_VIEW = """
import sys
from fuselab.fuzz.checks import Case, Harness, check_gpu
from fuselab.fuzz.mutants import apply
from fuselab.fuzz.plans import Planners
from refimpl.dtypes import DType
from refimpl.strategies.builder import StreamBuilder

apply(sys.argv[1])
b = StreamBuilder()
x = b.add_input((1, 4, 6), DType.F32, seed=1)
y = b.add_input((6, 4, 6), DType.F32, seed=2)
t = b.op("NumericFloat.Add", (6, 4, 6), DType.F32,
         lhs=b.op("NumericFloat.MulScalar", (1, 4, 6), DType.F32, lhs=x, rhs=2.0), rhs=y)
view = b.op("BaseFloat.Reshape", (6, 4, 1), DType.F32, input=x)
b.sync((b.op("NumericFloat.Add", (6, 4, 6), DType.F32, lhs=t, rhs=view),))
failure = check_gpu(Case(b.build()), Harness(Planners("ref")))
print(failure.symptom if failure else "pass")
"""


@pytest.mark.gpu
def test_the_gpu_check_runs_the_specialised_kernel_a_first_run_skips(gpu_adapter):
    """A first run takes tier 0 for this block; a bug in the block's specialised kernel is
    still seen."""
    done = subprocess.run([sys.executable, "-c", _RESHAPE_VIEW, "reshape-remap-order"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.stdout.strip() == "mismatch (specialised kernel)", done.stderr
