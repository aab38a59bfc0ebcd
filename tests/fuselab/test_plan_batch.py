"""``fuselab plan --batch`` (``fuselab.plan_batch``): one JSON line per stream, plan or error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuselab import cli
from refimpl.devices import profile_named
from refimpl.planner import plan, plan_to_json
from refimpl.stream import load_stream

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "streams"
STREAMS = sorted(GOLDEN.glob("*.json"))[:4]
BAD = '{"version": 1, "inputs": {}, "ops": [{"op": "Float.Exq"}]}'


def _expected(path: Path, device: str = "metal") -> dict:
    return json.loads(plan_to_json(plan(load_stream(path), profile_named(device))))


def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize("planner", ["ref", "fast"])
def test_plan_batch_directory_gives_a_line_per_stream(tmp_path, capsys, planner):
    for path in STREAMS:
        (tmp_path / path.name).write_bytes(path.read_bytes())
    (tmp_path / "zz_bad.json").write_text(BAD)
    (tmp_path / "ignored.txt").write_text("not a stream")
    assert cli.main(["plan", "--batch", str(tmp_path), "--planner", planner]) == 0
    lines = _lines(capsys.readouterr().out)
    assert [line["stream"] for line in lines] == [p.name for p in STREAMS] + ["zz_bad.json"]
    for line, path in zip(lines, STREAMS):
        assert line["plan"] == _expected(path)
    assert lines[-1]["error"]["class"] == "UnknownOpError"
    assert (lines[-1]["error"]["op_index"], lines[-1]["error"]["field"]) == (0, "op")


def test_plan_batch_jsonl_same_output_for_both_planners(tmp_path, capsys):
    docs = [json.dumps(json.loads(p.read_text())) for p in STREAMS] + ["", BAD]
    source = tmp_path / "streams.jsonl"
    source.write_text("\n".join(docs) + "\n")
    outputs = []
    for planner in ("ref", "fast"):
        assert cli.main(["plan", "--batch", str(source), "--planner", planner,
                         "--device", "webgpu-default"]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    lines = _lines(outputs[0])
    assert [line["stream"] for line in lines] == [f"streams.jsonl:{n}" for n in
                                                  (1, 2, 3, 4, 6)]
    assert lines[0]["plan"] == _expected(STREAMS[0], "webgpu-default")
    assert lines[-1]["error"]["class"] == "UnknownOpError"


def test_plan_batch_needs_one_source(tmp_path, capsys):
    assert cli.main(["plan"]) == 2
    assert cli.main(["plan", str(STREAMS[0]), "--batch", str(tmp_path)]) == 2
    assert "--batch" in capsys.readouterr().err


def test_plan_batch_missing_source_exits_2(tmp_path, capsys):
    assert cli.main(["plan", "--batch", str(tmp_path / "none.jsonl")]) == 2
    assert capsys.readouterr().err.startswith("error: cannot access")
