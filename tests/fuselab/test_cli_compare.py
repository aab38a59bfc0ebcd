"""``fuselab compare`` and ``fuselab run --check``: per-tensor verdicts within a tolerance."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fuselab import cli
from fuselab.compare import load_results
from refimpl.compare import compare_results, exact, ulp_distance
from refimpl.errors import ResultsFileError

ROOT = Path(__file__).resolve().parents[2]
SPEC_MINIMUM = ROOT / "tests" / "streams" / "spec_minimum.json"


def save(path: Path, **arrays: np.ndarray) -> str:
    np.savez(path, **arrays)
    return str(path)


def table_rows(out: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in out.splitlines()[1:-1]}


def test_compare_identical_files_pass(tmp_path, capsys):
    a = save(tmp_path / "a.npz", t1=np.float32([1, 2, np.nan]), t4=np.int32([7]))
    assert cli.main(["compare", a, a]) == 0
    out = capsys.readouterr().out
    rows = table_rows(out)
    assert rows["t1"][1:] == ["[3]", "f32", "0", "0", "ok"]
    assert rows["t4"][1:] == ["[1]", "i32", "0", "-", "ok"]
    assert out.splitlines()[-1] == "exact: 2 of 2 tensors within, 0 not"


def test_compare_exact_reports_ulp_and_abs_and_exits_1(tmp_path, capsys):
    one = np.float32(1)
    a = save(tmp_path / "a.npz", t2=np.float32([1, 2]))
    b = save(tmp_path / "b.npz", t2=np.float32([np.nextafter(one, np.float32(3)), 2]))
    assert cli.main(["compare", a, b]) == 1
    row = table_rows(capsys.readouterr().out)["t2"]
    assert row[3] == f"{float(np.spacing(one)):.3g}" and row[4] == "1"
    assert row[5] == "MISMATCH:" and "1 of 2 elements differ" in " ".join(row)


def test_compare_exact_is_bitwise_but_nan_equals_nan(tmp_path):
    quiet, payload = np.float32(np.nan), np.uint32(0x7FC00001).view(np.float32)
    same_nan = compare_results({0: np.float32([quiet])}, {0: np.float32([payload])}, exact)
    signed_zero = compare_results({0: np.float32([0.0])}, {0: np.float32([-0.0])}, exact)
    assert same_nan[0].ok and not signed_zero[0].ok
    assert signed_zero[0].max_abs == 0 and signed_zero[0].max_ulp == 0


def test_compare_missing_and_mismatched_tensors_fail(tmp_path, capsys):
    a = save(tmp_path / "a.npz", t1=np.float32([1]), t2=np.float32([1, 2]))
    b = save(tmp_path / "b.npz", t2=np.float64([1, 2]), t3=np.int32([0]))
    assert cli.main(["compare", a, b, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    details = {t["id"]: (t["ok"], t["detail"]) for t in report["tensors"]}
    assert details == {1: (False, "missing from B"), 2: (False, "A is f32[2], B is f64[2]"),
                       3: (False, "missing from A")}
    assert report["ok"] is False and report["tolerance"] == "exact"


def test_compare_json_keeps_nan_error_json_safe(tmp_path, capsys):
    a = save(tmp_path / "a.npz", t0=np.float32([1.0]))
    b = save(tmp_path / "b.npz", t0=np.float32([np.nan]))
    assert cli.main(["compare", a, b, "--json"]) == 1
    row = json.loads(capsys.readouterr().out)["tensors"][0]
    assert row["max_abs"] == "nan" and row["ok"] is False


@pytest.mark.parametrize("content,needle", [
    (b"not a zip", "not an .npz archive"),
    (None, "array 'x' is not named t<id>"),
])
def test_compare_bad_file_exits_2_with_one_line(tmp_path, capsys, content, needle):
    bad = tmp_path / "bad.npz"
    if content is None:
        np.savez(bad, x=np.zeros(2))
    else:
        bad.write_bytes(content)
    good = save(tmp_path / "a.npz", t0=np.zeros(2))
    assert cli.main(["compare", good, str(bad)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0]
    with pytest.raises(ResultsFileError):
        load_results(str(bad))


def test_ulp_distance_is_shared_with_the_gpu_tolerance():
    from gpu.check import tolerance

    assert tolerance.ulp_distance is ulp_distance


def test_run_check_passes_for_eager_and_interp(tmp_path, capsys):
    for backend in ("eager", "interp"):
        assert cli.main(["run", str(SPEC_MINIMUM), "--backend", backend, "--check"]) == 0
        out = capsys.readouterr().out
        assert f"check: {backend} against the eager oracle, tolerance exact" in out
        assert out.splitlines()[-1].endswith(" 0 not")


def _off_by_one(stream, args):
    from refimpl.eager import run_stream

    return {tid: values + 1 if values.dtype.kind in "fiu" else values
            for tid, values in run_stream(stream).items()}


def test_run_check_exits_1_when_the_backend_disagrees(monkeypatch, capsys):
    monkeypatch.setitem(cli.BACKENDS, "off", cli.Backend(_off_by_one, "exact"))
    assert cli.main(["run", str(SPEC_MINIMUM), "--backend", "off", "--check", "--json"]) == 1
    check = json.loads(capsys.readouterr().out)["check"]
    assert check["tolerance"] == "exact" and check["ok"] is False
    assert all(not t["ok"] and t["max_abs"] == pytest.approx(1, abs=1e-3)
               for t in check["tensors"])


def test_run_check_judges_by_the_backend_tolerance(monkeypatch, capsys):
    seen = []

    def lenient(expected, actual, stream):
        seen.append(stream is not None)
        return {tid: (True, "") for tid in expected}
    monkeypatch.setitem(cli.TOLERANCES, "lenient", cli.Tolerance("anything goes", lenient))
    monkeypatch.setitem(cli.BACKENDS, "off", cli.Backend(_off_by_one, "lenient"))
    assert cli.main(["run", str(SPEC_MINIMUM), "--backend", "off", "--check"]) == 0
    out = capsys.readouterr().out
    assert "check: off against the eager oracle, tolerance lenient" in out
    assert seen == [True] and out.splitlines()[-1].endswith(" 0 not")
