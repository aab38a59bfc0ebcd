"""fuselab.cli: the ``fuselab`` command's tables, ``validate`` and ``run``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fuselab import cli
from refimpl.eager import run_stream
from refimpl.stream import load_stream

ROOT = Path(__file__).resolve().parents[2]
SPEC_MINIMUM = ROOT / "tests" / "streams" / "spec_minimum.json"


def write(tmp_path: Path, text: str, name: str = "s.json") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_validate_reports_size(capsys):
    assert cli.main(["validate", str(SPEC_MINIMUM)]) == 0
    stream = load_stream(SPEC_MINIMUM)
    assert capsys.readouterr().out == f"ok: {len(stream.items)} ops, 3 inputs\n"


@pytest.mark.parametrize("text,needle", [
    ("{not json", "bad JSON"),
    ('{"version": 1, "ops": [{"op": "Float.Exq"}]}', "unknown op"),
    ('{"version": 2, "ops": []}', "version"),
    ('{"version": 1, "ops": [{"op": "Sync", "tensors": [3]}]}', "op 0"),
])
def test_validate_bad_stream_exits_2_with_one_line(tmp_path, capsys, text, needle):
    assert cli.main(["validate", str(write(tmp_path, text))]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0]


def test_missing_file_exits_2(tmp_path, capsys):
    assert cli.main(["run", str(tmp_path / "absent.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "absent.json" in err and err.count("\n") == 1


def test_run_saves_synced_tensors(tmp_path, capsys):
    out = tmp_path / "out.npz"
    assert cli.main(["run", str(SPEC_MINIMUM), "--backend", "eager", "--out", str(out)]) == 0
    expected = run_stream(load_stream(SPEC_MINIMUM))
    with np.load(out) as saved:
        assert sorted(saved.files) == sorted(f"t{i}" for i in expected)
        for tid, values in expected.items():
            assert saved[f"t{tid}"].dtype == values.dtype
            assert saved[f"t{tid}"].tobytes() == values.tobytes()
    table = capsys.readouterr().out.splitlines()
    assert table[0] == f"eager: 8 ops, {len(expected)} synced tensors"
    assert table[1].split()[:3] == ["tensor", "shape", "dtype"]
    assert [row.split()[0] for row in table[2:]] == [f"t{i}" for i in sorted(expected)]


def test_run_json_summary(capsys):
    assert cli.main(["run", str(SPEC_MINIMUM), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    expected = run_stream(load_stream(SPEC_MINIMUM))
    assert summary["backend"] == "eager" and summary["ops"] == 8 and summary["out"] is None
    assert [row["id"] for row in summary["synced"]] == sorted(expected)
    row = summary["synced"][0]
    values = expected[row["id"]]
    assert row["shape"] == list(values.shape) and row["dtype"] == "f32"
    assert row["min"] == pytest.approx(float(values.min()))


def test_run_unknown_backend_lists_available(capsys):
    assert cli.main(["run", str(SPEC_MINIMUM), "--backend", "warp"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown backend 'warp'") and "eager" in err


def test_no_subcommand_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main([])
    assert info.value.code == 2


def test_a_command_in_the_table_is_a_subcommand(monkeypatch, capsys):
    def add(parser):
        parser.add_argument("word")

    def handler(args):
        print(args.word.upper())
        return 3
    monkeypatch.setitem(cli.COMMANDS, "shout", cli.Command("say it loud", add, handler))
    assert cli.main(["shout", "hi"]) == 3
    assert capsys.readouterr().out == "HI\n"


def test_a_backend_in_the_table_is_used_by_run(monkeypatch, capsys):
    calls = []

    def runner(stream, args):
        calls.append(len(stream.items))
        return {42: np.arange(3, dtype=np.int32)}
    monkeypatch.setitem(cli.BACKENDS, "fake", cli.Backend(runner, "exact"))
    assert cli.main(["run", str(SPEC_MINIMUM), "--backend", "fake", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert calls == [8] and summary["synced"][0]["id"] == 42
    assert summary["synced"][0]["dtype"] == "i32"


def test_the_tables_list_every_backend_planner_and_tolerance():
    assert list(cli.BACKENDS) == ["eager", "interp", "gpu"]
    assert list(cli.PLANNERS) == ["ref", "fast"]
    assert list(cli.TOLERANCES) == ["exact", "gpu"]
    assert {b.tolerance for b in cli.BACKENDS.values()} <= set(cli.TOLERANCES)


def test_python_dash_m_exit_codes(tmp_path):
    bad = write(tmp_path, '{"version": 1, "ops": [{"op": "Nope"}]}')
    run = subprocess.run([sys.executable, "-m", "fuselab", "validate", str(bad)], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and run.stderr.startswith("error: ") and run.stdout == ""
    ok = subprocess.run([sys.executable, "-m", "fuselab", "validate", str(SPEC_MINIMUM)],
                        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and ok.stdout.startswith("ok: ")


def test_run_json_spells_non_finite_values(tmp_path, capsys):
    snap = '"shape": [2], "dtype": "f32"'
    text = ('{"version": 1, "inputs": {"0": {"shape": [2], "dtype": "f32", "data": [-1.0, 0.0]}},'
            ' "ops": [{"op": "Float.Log", "input": {"id": 0, ' + snap + ', "status": "ReadWrite"},'
            ' "out": {"id": 1, ' + snap + ', "status": "NotInit"}},'
            ' {"op": "Sync", "tensors": [1]}]}')
    assert cli.main(["run", str(write(tmp_path, text)), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["synced"][0]  # strict JSON: no bare NaN
    assert (row["min"], row["max"]) == ("nan", "nan")
