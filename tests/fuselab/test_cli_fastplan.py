"""fastplan on the command line: ``fuselab plan --planner fast`` and ``fuselab bench planner``
(``fuselab.cli.PLANNERS`` and ``BENCHMARKS``; the benchmark is ``fuselab.bench``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fuselab import cli
from refimpl.planner import plan_from_json

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
STREAMS = ["mul_add_exp", "chain", "independent", "matmul_add_exp", "search_softmax"]


@pytest.mark.parametrize("name", STREAMS)
@pytest.mark.parametrize("device", ["metal", "webgpu-default"])
def test_cli_plan_fast_prints_the_same_bytes_as_ref(name, device, capsys):
    path = str(GOLDEN / "streams" / f"{name}.json")
    assert cli.main(["plan", path, "--device", device, "--planner", "ref"]) == 0
    expected = capsys.readouterr().out
    assert cli.main(["plan", path, "--device", device, "--planner", "fast"]) == 0
    assert capsys.readouterr().out == expected
    assert expected == (GOLDEN / "plans" / device / f"{name}.json").read_text()


def test_cli_plan_fast_bad_stream_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "ops": [{"op": "Float.Exq"}]}')
    assert cli.main(["plan", str(bad), "--planner", "fast"]) == 2
    assert "unknown op" in capsys.readouterr().err


def test_cli_bench_planner_prints_a_table(capsys):
    assert cli.main(["bench", "planner", "--workload", "transformer", "--sizes", "150",
                     "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "| workload | ops | path | refimpl µs/op | fastplan µs/op | ratio | searches |" in out
    assert out.count("| transformer |") == 5  # plan(), search, launch, cache hit, + launch
    from fuselab.bench import interpreter_build

    assert f"({interpreter_build()})" in out.splitlines()[0]  # the header names the build


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux's /proc")
def test_bench_interpreter_build_agrees_with_the_memory_map():
    """``interpreter_build`` asks the dynamic loader where ``Py_IncRef`` lives; the process's
    memory map says independently whether a shared libpython is mapped at all."""
    from fuselab.bench import interpreter_build

    mapped = {Path(line.split()[-1]).resolve()
              for line in Path("/proc/self/maps").read_text().splitlines()
              if "libpython" in line.rsplit("/", 1)[-1]}
    found = interpreter_build()
    if mapped:  # the loader may name the library by a link to the file the map shows
        assert found.startswith("shared libpython (") and found.endswith(")")
        assert Path(found[len("shared libpython ("):-1]).resolve() in mapped
    else:
        assert found == "libpython linked into the executable"


def test_cli_bench_planner_json(capsys):
    import json

    assert cli.main(["bench", "planner", "--workload", "elementwise", "--sizes", "120",
                     "--repeats", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {row["path"] for row in rows} == {"plan", "search", "launch", "cache",
                                                 "cache+launch"}
    assert all(row["refimpl_us"] > 0 and row["fastplan_us"] > 0 for row in rows)


def test_cli_plan_fast_output_parses(capsys):
    path = str(GOLDEN / "streams" / "chain.json")
    assert cli.main(["plan", path, "--planner", "fast"]) == 0
    assert plan_from_json(capsys.readouterr().out).device == "metal"


def test_bench_runs_for_gives_short_streams_more_runs():
    from fuselab.bench import runs_for

    assert runs_for(1056, 3) == 15  # a 1k pass lasts about a millisecond
    assert runs_for(2051, 3) == 12
    assert runs_for(10007, 3) == 3
    assert runs_for(100006, 5) == 3 and runs_for(100006, 1) == 1
    assert runs_for(0, 2) == 10


def test_bench_planners_take_turns(monkeypatch):
    """``measure`` alternates the planners run by run (a slow spell of a shared machine then
    falls on both sides of a ratio) and reports the median of each planner's own runs."""
    from fuselab import bench, workloads

    calls = []
    times = {"refimpl": iter([5.0, 1.0, 3.0]), "fastplan": iter([0.2, 0.6, 0.4])}

    def run_once(name, stream, nxt, device):
        calls.append(name)
        t = next(times[name])
        return {path: (t, 7) for path in bench.PATHS}

    monkeypatch.setattr(bench, "_run_once", run_once)
    found = bench.measure(workloads.build("elementwise", 50), "metal", 3)
    assert calls == ["refimpl", "fastplan"] * 3
    assert found["refimpl"]["plan"] == (3.0, 7) and found["fastplan"]["cache"] == (0.4, 7)
    calls.clear()
    times["fastplan"] = iter([0.3, 0.5])
    bench.measure(workloads.build("elementwise", 50), "metal", 2, with_refimpl=False)
    assert calls == ["fastplan", "fastplan"]


def test_cli_bench_planner_front_door_table(capsys):
    assert cli.main(["bench", "planner", "--front-door-only", "--workload", "elementwise",
                     "--sizes", "30", "--chains", "40", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    for name in ("elementwise", "chains"):
        for stage in ("load + validate", "record", "plan", "to JSON", "total", "incremental"):
            assert re.search(rf"^\| {name} \| \d+ \| {re.escape(stage)} \|", out, re.MULTILINE)


_LOADED_BY_PLAN = r"""
import contextlib, io, json, sys
from fuselab import cli
with contextlib.redirect_stdout(io.StringIO()):
    code = cli.main(["plan", sys.argv[1], "--planner", sys.argv[2]])
print(json.dumps({"code": code, "loaded": sorted(sys.modules)}))
"""


def _loaded_by_plan(planner: str) -> set[str]:
    """The modules a fresh ``fuselab plan --planner PLANNER`` process has loaded at the end."""
    import json
    import subprocess
    import sys

    stream = str(GOLDEN / "streams" / "search_softmax.json")
    done = subprocess.run([sys.executable, "-c", _LOADED_BY_PLAN, stream, planner],
                          capture_output=True, text=True, check=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["code"] == 0
    return set(found["loaded"])


def test_cli_plan_fast_loads_no_numpy():
    """The compiled path plans without numpy, the interpreter or the ops' numpy semantics:
    what it imports is its start-up cost, and planning needs no values."""
    import fastplan

    if not fastplan.COMPILED:
        pytest.skip("fastplan is not compiled: its path is refimpl's")
    fast = _loaded_by_plan("fast")
    assert {"numpy", "refimpl.interpreter", "refimpl.semantics"} & fast == set()
    assert "fastplan.planner" in fast
