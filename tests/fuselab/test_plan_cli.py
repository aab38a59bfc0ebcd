"""``fuselab plan`` (``fuselab.cli``, its ``PLANNERS``)."""

from __future__ import annotations

from pathlib import Path

from fuselab import cli
from refimpl.planner import plan_from_json

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
STREAM = GOLDEN / "streams" / "mul_add_exp.json"


def test_plan_cli_prints_the_golden_plan(capsys):
    assert cli.main(["plan", str(STREAM)]) == 0
    assert capsys.readouterr().out == (GOLDEN / "plans" / "metal" / STREAM.name).read_text()


def test_plan_cli_device_and_planner_options(capsys):
    assert cli.main(["plan", str(STREAM), "--device", "webgpu-default", "--planner", "ref"]) == 0
    assert plan_from_json(capsys.readouterr().out).device == "webgpu-default"


def test_plan_cli_unknown_planner_exits_2_with_one_line(capsys):
    assert cli.main(["plan", str(STREAM), "--planner", "nope"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: unknown planner 'nope'")
    assert captured.err.count("\n") == 1


def test_plan_cli_bad_stream_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "ops": [{"op": "Float.Exq"}]}')
    assert cli.main(["plan", str(bad)]) == 2
    assert "unknown op" in capsys.readouterr().err
