"""The gpu package on the command line: a clean stderr (no Wayland probe noise, no numpy
warnings), the device buffer check before a run, ``run --check`` and ``compare --tolerance
gpu`` (``gpu.check.agreement.judge``, with and without the stream)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from fuselab import cli
from refimpl.eager import run_stream
from refimpl.stream import load_stream
from gpu.errors import GpuLimitError

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "tests" / "streams" / "seed_mul_add_exp.json"


def _stream_doc(shape: list[int], dtype: str = "f32", scalar: float = 2.0) -> dict:
    def t(tid, status):
        return {"id": tid, "shape": shape, "dtype": dtype, "status": status}
    return {"version": 1, "inputs": {"0": {"shape": shape, "dtype": dtype, "random": 1}},
            "ops": [{"op": "NumericFloat.AddScalar", "lhs": t(0, "ReadOnly"), "rhs": scalar,
                     "out": t(1, "NotInit")}, {"op": "Sync", "tensors": [1]}]}


def write(tmp_path: Path, doc: dict, name: str = "s.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


# --- a clean stderr ---------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_run_prints_nothing_on_stderr(gpu_device, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    run = subprocess.run([sys.executable, "-m", "fuselab", "run", str(SEED), "--backend", "gpu"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "XDG_RUNTIME_DIR" not in run.stderr and run.stderr == ""


def test_private_runtime_dir_only_when_missing_or_invalid(monkeypatch):
    from gpu.runtime import device

    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1234")
    device._private_runtime_dir()
    assert os.environ["XDG_RUNTIME_DIR"] == "/run/user/1234"
    for value in (None, "relative/dir"):
        if value is None:
            monkeypatch.delenv("XDG_RUNTIME_DIR")
        else:
            monkeypatch.setenv("XDG_RUNTIME_DIR", value)
        device._private_runtime_dir()
        made = os.environ["XDG_RUNTIME_DIR"]
        assert os.path.isabs(made) and stat.S_IMODE(os.stat(made).st_mode) == 0o700
        device._remove_empty_dir(made)
        assert not os.path.exists(made)


@pytest.mark.gpu
def test_f16_scalar_overflow_gives_inf_without_a_warning(gpu_device, tmp_path):
    from gpu.runtime.executor import run_planned

    if not gpu_device.has_f16:
        pytest.skip("the adapter lacks shader-f16")
    stream = load_stream(write(tmp_path, _stream_doc([2, 3], "f16", 1e10)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = run_planned(stream, gpu_device)
    assert np.isposinf(got[1]).all() and got[1].dtype == np.float16


# --- the device's buffer limit, before anything is allocated ----------------------------------


def test_check_buffers_names_the_tensor_too_big_for_the_device(tmp_path):
    from fuselab.gpu_commands import check_buffers

    stream = load_stream(write(tmp_path, _stream_doc([4, 8])))
    device = SimpleNamespace(name="tiny", max_buffer_bytes=4 * 32)
    check_buffers(stream, device)
    device.max_buffer_bytes = 4 * 32 - 1
    with pytest.raises(GpuLimitError, match=r"^input 0: \[4, 8\] f32 needs a buffer of "
                                            r"128 bytes; tiny binds at most 127 bytes"):
        check_buffers(stream, device)


@pytest.mark.gpu
def test_run_gpu_refuses_a_tensor_beyond_the_binding_limit(gpu_device, tmp_path, capsys):
    count = gpu_device.max_buffer_bytes // 4 + 1
    if count * 4 * 3 > (1 << 33):
        pytest.skip("the device binds buffers too large to test cheaply")
    path = write(tmp_path, _stream_doc([count]))
    assert cli.main(["run", path, "--backend", "gpu"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: input 0: [{count}] f32 needs a buffer")


# --- run --check and compare --tolerance gpu --------------------------------------------------


@pytest.mark.gpu
def test_run_check_gpu_within_the_chain_bounds(gpu_device, capsys):
    assert cli.main(["run", str(SEED), "--backend", "gpu", "--check"]) == 0
    out = capsys.readouterr().out
    assert "check: gpu against the eager oracle, tolerance gpu" in out
    assert out.splitlines()[-1] == "gpu: 1 of 1 tensors within, 0 not"


def _ulps_away(values: np.ndarray, ulps: int) -> np.ndarray:
    """Positive f32 values moved ``ulps`` representable steps up."""
    assert values.dtype == np.float32 and (values > 0).all()
    return (values.view(np.int32) + np.int32(ulps)).view(np.float32)


@pytest.mark.parametrize("ulps,code", [(3, 0), (4096, 1)])
def test_compare_tolerance_gpu_with_the_stream_uses_the_chain_bounds(tmp_path, capsys, ulps,
                                                                     code):
    expected = run_stream(load_stream(SEED))
    actual = {tid: _ulps_away(v, ulps) for tid, v in expected.items()}
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    np.savez(a, **{f"t{i}": v for i, v in expected.items()})
    np.savez(b, **{f"t{i}": v for i, v in actual.items()})
    assert cli.main(["compare", str(a), str(b), "--tolerance", "gpu", "--stream", str(SEED),
                     "--json"]) == code
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is (code == 0) and report["tensors"][0]["max_ulp"] == ulps
    if code:
        assert "outside the chain bound" in report["tensors"][0]["detail"]


@pytest.mark.parametrize("value,ulps,code", [
    (1e6, 7, 0), (1e6, 8, 1),        # the ULP allowance: 7
    (1e-3, 4000, 0), (1e-3, 5_000_000, 1),  # the absolute one: 2^-11
])
def test_compare_tolerance_gpu_without_the_stream_uses_the_loosest_allowance(
        tmp_path, capsys, value, ulps, code):
    want = np.full(4, value, dtype=np.float32)
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    np.savez(a, t0=want)
    np.savez(b, t0=_ulps_away(want, ulps))
    assert cli.main(["compare", str(a), str(b), "--tolerance", "gpu", "--json"]) == code
    row = json.loads(capsys.readouterr().out)["tensors"][0]
    assert row["ok"] is (code == 0) and row["max_ulp"] == ulps


def test_compare_tolerance_gpu_with_a_stream_of_other_shapes_exits_2(tmp_path, capsys):
    a = tmp_path / "a.npz"
    np.savez(a, t5=np.zeros((2, 2), np.float32))
    assert cli.main(["compare", str(a), str(a), "--tolerance", "gpu", "--stream",
                     str(SEED)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the results do not come from this stream")
