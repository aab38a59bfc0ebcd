"""``fuselab/agreement_run.py``: a short run end to end, and how one stream's outcome is classed
(agree, a GPU exception, a mismatch named by the op that produced the tensor)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from refimpl.seed import mul_add_exp
from fuselab import agreement_run
from fuselab.agreement_run import run_one

pytestmark = pytest.mark.gpu


def test_agreement_run_main_writes_a_report(gpu_device, tmp_path, capsys):
    code = agreement_run.main(["--streams", "6", "--out", str(tmp_path), "--seed", "3"])
    report = json.loads((tmp_path / "agreement.json").read_text())
    assert report["streams_run"] == 6 and report["not_run"] == 0
    assert sum(report["outcomes"].values()) == 6
    assert code == (0 if report["disagreeing"] == 0 else 1)
    assert report["adapter"]["name"] == gpu_device.name
    assert "6 streams" in capsys.readouterr().out


def test_agreement_run_time_limit_counts_streams_not_run(gpu_device, tmp_path):
    agreement_run.main(["--streams", "4", "--out", str(tmp_path), "--time-limit", "1e-9"])
    report = json.loads((tmp_path / "agreement.json").read_text())
    assert (report["streams_run"], report["not_run"]) == (0, 4)


def test_agreement_run_classes_one_stream(gpu_device, monkeypatch):
    from gpu.runtime.executor import GpuExecutor

    stream = mul_add_exp((4, 8), a_moved=False)
    assert run_one(stream, gpu_device)[0] == "agree"

    def boom(self, executed, read=True):
        raise RuntimeError("device lost: details")
    monkeypatch.setattr(GpuExecutor, "run", boom)
    assert run_one(stream, gpu_device)[:2] == ("gpu error", "RuntimeError: device lost")

    monkeypatch.undo()
    real = GpuExecutor.run

    def off(self, executed, read=True):
        return {tid: np.asarray(v) + np.float32(1.0) for tid, v in real(self, executed).items()}
    monkeypatch.setattr(GpuExecutor, "run", off)
    outcome, cls, tallies = run_one(stream, gpu_device)
    assert outcome == "mismatch" and cls == "Float.Exp -> f32"
    assert tallies["mismatched"] == 32
