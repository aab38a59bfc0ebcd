"""The planner fuzzer (``tools/fuzz_planners.py``) at CI size: a few hundred generated inputs
plan alike in refimpl and fastplan, and its worker pool counts every index exactly once, even
when a worker exits, segfaults, hangs past its alarm or times out.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from dataclasses import dataclass

import pytest

import fastplan
from refimpl.ir import OperationIr
from refimpl.validate import validate_stream
from tools.fuzz_inputs import (GENERATORS, SMALL_INTS, FuzzInput, _many_dims, _relabelled,
                               build_pool, make_input)
from tools.fuzz_planners import Checker, count_fallbacks, evaluate, main, summarize
from tools.fuzz_workers import Config, run_checks

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

POOL_DRAWS = 20


@pytest.fixture(scope="module")
def pool():
    return build_pool(0, POOL_DRAWS)


@pytest.fixture
def fallbacks_counted(monkeypatch):
    """``count_fallbacks`` for the test only (the original is put back afterwards)."""
    import fastplan.planner

    monkeypatch.setattr(fastplan.planner, "_reference_plan", fastplan.planner._reference_plan)
    monkeypatch.setattr(fastplan.planner, "_reference_launch",
                        fastplan.planner._reference_launch)
    count_fallbacks()


def test_fuzz_planners_small_run_plans_alike_and_accounts_every_index(pool, fallbacks_counted):
    count, found = 200, {}
    counts, accounted = run_checks(Config(count, jobs=2, chunk=40), Checker(0, pool), lambda
                                   index, result: found.setdefault(index, result.key))
    summary = summarize(counts, accounted)
    assert summary["all_accounted"] and summary["accounted"] == count
    assert found == {}, (f"replay: python3 tools/fuzz_planners.py --pool-draws {POOL_DRAWS} "
                         f"--reproduce INDEX")
    assert summary["findings"] == 0
    # most inputs reach fastplan's compiled planner; the boundary's hand-overs are seen too
    assert summary["reach"]["compiled"] >= count // 2
    assert summary["reach"]["fallback"] > 0 and summary["reach"]["loader"] > 0


def test_fuzz_planners_inputs_depend_on_seed_and_index_only(pool):
    again = build_pool(0, POOL_DRAWS)
    for index in range(0, 3000, 3):
        assert repr(make_input(0, index, pool)) == repr(make_input(0, index, again))
    assert repr(make_input(1, 5, pool)) != repr(make_input(0, 5, pool))
    kinds = Counter(make_input(0, index, pool).kind for index in range(3000))
    assert set(kinds) == set(GENERATORS)


def _ids_and_dims(stream) -> tuple[set[int], set[int]]:
    ids, dims = set(stream.inputs), set()
    for item in stream.items:
        if isinstance(item, OperationIr):
            for tensor in (*item.inputs(), *item.outputs()):
                ids.add(tensor.id)
                dims.update(tensor.shape)
        else:
            ids.update(item.tensors)
    return ids, dims


def test_fuzz_planners_wide_inputs_reach_past_the_small_int_cache(pool):
    """The ``wide`` generator's streams: a pool stream relabelled one to one onto ids past 256
    (its items and inputs otherwise the same), and one valid segment of over 256 distinct
    dimensions; both planners plan them alike (use-after-free bugs of ids and dims stay
    hidden below 256, in CPython's small-int cache)."""
    import random

    from refimpl.stream import stream_from_json

    rng = random.Random(0)
    for index in range(12):
        text = _relabelled(rng, pool)
        stream = stream_from_json(text, validate=False)
        ids, _ = _ids_and_dims(stream)
        assert min(ids) > SMALL_INTS
        assert len(stream.items) in {len(s.items) for s in pool.streams}
        result = evaluate(FuzzInput(index, "wide", "webgpu-default", text))
        assert result.outcome in ("equal-plan", "same-error"), result
    stream = _many_dims(rng)
    validate_stream(stream)
    ids, dims = _ids_and_dims(stream)
    assert min(ids) > SMALL_INTS and len(dims - {1}) > SMALL_INTS
    assert evaluate(FuzzInput(99, "wide", "webgpu-default", stream)).outcome == "equal-plan"


@dataclass(frozen=True)
class _Record:
    key: tuple
    finding: bool


class _Misbehaving:
    """Checks whose input 5 exits, 11 segfaults, 17 blocks the alarm and hangs, 23 times
    out; every other input is fine."""

    def __call__(self, index: int) -> _Record:
        if index == 5:
            os._exit(3)
        if index == 11:
            os.kill(os.getpid(), signal.SIGSEGV)
        if index == 17:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            time.sleep(60)
        if index == 23:
            time.sleep(60)
        return _Record(("fine",), False)

    def lost(self, index: int, outcome: str, detail: str) -> _Record:
        return _Record((outcome, detail), True)


def test_fuzz_planners_workers_count_crashes_hangs_and_timeouts_once():
    found = {}
    config = Config(40, jobs=2, timeout_s=0.5, hang_s=1.5, chunk=8)
    counts, accounted = run_checks(config, _Misbehaving(),
                                   lambda index, record: found.setdefault(index, record.key))
    assert found == {5: ("crash", "exit 3"), 11: ("crash", "SIGSEGV"),
                     17: ("hang", "no progress for 1.5 s"), 23: ("timeout", "")}
    assert counts == Counter({("fine",): 36, **{key: 1 for key in found.values()}})
    assert accounted == bytearray(b"\x01" * 40)


def test_fuzz_planners_command_writes_summary(tmp_path, fallbacks_counted, capsys):
    status = main(["--count", "40", "--jobs", "1", "--pool-draws", "5", "--progress", "none",
                   "--out", str(tmp_path)])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["count"] == 40 and summary["all_accounted"]
    assert sum(summary["reach"].values()) == 40
    assert status == (1 if summary["findings"] else 0)
    assert len(list((tmp_path / "findings").glob("*.txt"))) == min(summary["findings"], 200)
    assert "all" in capsys.readouterr().out
