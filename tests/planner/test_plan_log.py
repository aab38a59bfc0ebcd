"""FUSELAB_LOG: the planning log on stderr (``refimpl/planner/log.py``).

The tests that take ``plan`` or ``planner_impl`` run on both twins: fastplan's log must be
refimpl's, line for line. Ops are named by stream index everywhere, and every op a step runs
unfused has an ``[unfused]`` line with its reason before that step.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

from refimpl.devices import profile_named
from refimpl.planner import log as plan_log
from refimpl.planner import plan as reference_plan
from refimpl.planner.log import (
    FusionLog,
    LogLevel,
    log_cached_plan,
    log_left_at_sync,
    remember_plan,
)
from refimpl.planner.search.strategy import BlockOptimization, Operations
from refimpl.seed import SEED_STREAMS
from refimpl.stream import Stream, load_stream

GOLDEN_STREAMS = Path(__file__).resolve().parents[1] / "golden" / "streams"
# golden streams whose logs hold cache hits, syncs mid-stream, merged and unfused blocks
COMPARED = ["search_six_independent", "search_softmax", "search_interleaved", "sync_between",
            "search_repeated_iteration", "search_incompatible_shapes", "cat_of_computed_input",
            "inplace_kv_cache", "file_sync_middle", "chain"]


@pytest.mark.parametrize("value, level", [
    ("", LogLevel.OFF), ("basic", LogLevel.BASIC), ("FULL", LogLevel.FULL),
    ("medium", LogLevel.BASIC), ("yes", LogLevel.BASIC), ("off", LogLevel.OFF)])
def test_plan_log_level_from_environment(value, level):
    assert FusionLog.from_env({"FUSELAB_LOG": value}).level is level
    assert FusionLog.from_env({}).level is LogLevel.OFF


def test_plan_log_silent_and_free_when_unset(monkeypatch, capsys):
    monkeypatch.delenv("FUSELAB_LOG", raising=False)

    def forbidden(*args):
        raise AssertionError("log text built while logging is off")

    monkeypatch.setattr(plan_log, "describe_fuser", forbidden)
    reference_plan(SEED_STREAMS["mul_add_exp"](), "metal")
    assert capsys.readouterr().err == ""


def test_plan_log_basic_lists_every_fuser_of_a_block(monkeypatch, capsys):
    monkeypatch.setenv("FUSELAB_LOG", "basic")
    reference_plan(SEED_STREAMS["mul_add_exp"](), "metal")
    err = capsys.readouterr().err
    assert "[block] 3 op(s)" in err
    for name in ("ElementWise", "Matmul", "Reduce", "ReduceBroadcasted", "NHWCRelayout"):
        assert f"  {name} " in err
    assert "est_bindings=5/28" in err  # 3 inputs + 1 output + metadata, metal's 28
    assert "closed (first op not a matmul)" in err
    assert "-> ElementWise (score 420)" in err
    assert "[step] fused ElementWise ops=[0, 1, 2]" in err
    assert "[stream]" not in err


def test_plan_log_full_adds_stream_events_and_cache_hits():
    out = io.StringIO()
    reference_plan(SEED_STREAMS["chain"](), "metal", log=FusionLog(LogLevel.FULL, out))
    text = out.getvalue()
    assert "[stream] op 0 NumericFloat.AddScalar -> new block (total: 1)" in text
    # the second segment starts at op 65: its ops are named by stream index too
    assert "[stream] op 65 NumericFloat.MulScalar -> new block (total: 1)" in text
    assert "[plan] exploration completed: Lazy, 65/66 ops optimized" in text
    assert "max_ops" in text  # why ElementWise closed at op 66


def test_plan_log_reports_cache_hits_on_repeated_iterations():
    out = io.StringIO()
    reference_plan(SEED_STREAMS["inplace_kv_cache"](), "metal",
                   log=FusionLog(LogLevel.FULL, out))
    assert "[plan] cache hit: execute plan #" in out.getvalue()


# --- stream indices and reasons, on both twins -------------------------------------------------


def _golden(name: str) -> Stream:
    return load_stream(GOLDEN_STREAMS / f"{name}.json")


def _with_holes() -> Stream:
    """A mixed stream whose search leaves holes (a hole search names ops by stream index)."""
    from fuselab.workloads import build

    return build("mixed", 40, seed=3)


def _logged(plan_fn, stream: Stream, level: LogLevel = LogLevel.FULL) -> str:
    out = io.StringIO()
    plan_fn(stream, "metal", log=FusionLog(level, out))
    return out.getvalue()


def _check_stream_indices(text: str, stream: Stream) -> None:
    """Every op a ``[block]``, ``[stream]`` or ``[unfused]`` line names is the stream item at
    the index it gives (a position relative to a segment would name another op)."""
    names = [getattr(item, "name", None) for item in stream.items]
    for line in text.splitlines():
        if found := re.search(r"\[block\] \d+ op\(s\) at \[([\d, ]*)\]: (.*)$", line):
            indices = [int(i) for i in found[1].split(", ")]
            assert [names[i] for i in indices] == found[2].split(", "), line
        elif found := re.search(r"\[stream\] op (\d+) (\S+) -> ", line):
            assert names[int(found[1])] == found[2], line
        elif found := re.search(r"\[unfused\] (\d+) ([^:]+): ", line):
            assert names[int(found[1])] == found[2], line


def _check_reasons(text: str) -> int:
    """Every op of an unfused step has an ``[unfused]`` line before it, that no earlier step
    used; how many unfused ops there were."""
    explained: set[int] = set()
    count = 0
    for line in text.splitlines():
        if found := re.search(r"\[unfused\] (\d+) ", line):
            explained.add(int(found[1]))
        elif found := re.search(r"\[step\] unfused +ops=\[([\d, ]*)\]", line):
            ops = {int(i) for i in found[1].split(", ")}
            assert ops <= explained, f"no reason for {sorted(ops - explained)}: {line}"
            explained -= ops
            count += len(ops)
    return count


@pytest.mark.parametrize("name", sorted(path.stem for path in GOLDEN_STREAMS.glob("*.json")))
def test_plan_log_names_ops_by_stream_index_and_explains_unfused_ops(plan, name):
    stream = _golden(name)
    text = _logged(plan, stream)
    _check_stream_indices(text, stream)
    _check_reasons(text)


def test_plan_log_hole_search_names_ops_by_stream_index(plan):
    stream = _with_holes()
    text = _logged(plan, stream)
    holes = re.findall(r"holes=\[(\d+)[,\]]", text)
    assert holes, "the stream no longer leaves holes"
    for first in holes:  # the hole search starts at the first hole
        after = text[text.index(f"holes=[{first}"):]
        assert re.search(r"\[stream\] op (\d+) ", after)[1] == first
    _check_stream_indices(text, stream)
    assert _check_reasons(text) > 0


def test_plan_log_second_segment_uses_stream_indices(plan):
    text = _logged(plan, _golden("search_six_independent"))
    assert "[stream] op 19 Drop -> new block (total: 1)" in text
    assert "[block] 1 op(s) at [19]: Drop" in text
    assert "[step] unfused  ops=[19]" in text
    text = _logged(plan, _golden("sync_between"), LogLevel.BASIC)
    assert "[block] 1 op(s) at [4]: Float.Exp" in text  # after the sync at item 3


def test_plan_log_reasons_of_unfused_ops(plan):
    text = _logged(plan, _golden("search_six_independent"), LogLevel.BASIC)
    drop = ("no fuser accepts it (ElementWise, Reduce, ReduceBroadcasted, NHWCRelayout: "
            "drop first; Matmul: first op not a matmul)")
    assert f"[unfused] 19 Drop: {drop}\n" in text
    # a cache hit runs plan #1 again: the reason found when it was explored
    assert f"[unfused] 20 Drop: {drop} (cached plan #1)\n" in text
    text = _logged(plan, _golden("sync_between"), LogLevel.BASIC)
    assert ("[unfused] 4 Float.Exp: ElementWise scores 0; Matmul not ready (closed: first op "
            "not a matmul); Reduce, ReduceBroadcasted, NHWCRelayout not ready (open)") in text
    text = _logged(plan, _golden("search_softmax"), LogLevel.BASIC)
    assert "  left over: [3, 4], ElementWise stopped at op 3 (unsupported op)" in text
    assert ("[unfused] 3 NumericFloat.SumDim: at the sync, not covered: its block's "
            "ElementWise stopped at op 3 (unsupported op)") in text
    text = _logged(plan, _golden("cat_of_computed_input"), LogLevel.BASIC)
    assert "[unfused] 1 BaseFloat.Cat: ElementWise refused it (shape); " in text


def test_plan_log_exploration_cap_reason(planner_impl):
    out = io.StringIO()
    fusers = planner_impl.fusers.registry.FusionRegistry().fusers(profile_named("metal"))
    planner = planner_impl.stream.processor.StreamPlanner(
        fusers, max_explorations=1, log=FusionLog(LogLevel.BASIC, out))
    planner.run(_golden("search_six_independent"))
    text = out.getvalue()
    assert "[unfused] 19 Drop: exploration cap reached (max_explorations=1)" in text
    assert _check_reasons(text) == 6


@pytest.mark.parametrize("name", COMPARED + ["holes"])
def test_plan_log_from_the_environment_is_refimpl_s(plan, name, monkeypatch, capsys):
    """``FUSELAB_LOG=full``: the twin prints refimpl's log, byte for byte."""
    stream = _with_holes() if name == "holes" else _golden(name)
    monkeypatch.setenv("FUSELAB_LOG", "full")
    capsys.readouterr()
    plan(stream, "metal")
    ours = capsys.readouterr().err
    reference_plan(stream, "metal")
    assert ours == capsys.readouterr().err
    assert "[block]" in ours and "[step]" in ours


def test_plan_log_repaired_and_unsearched_ops_have_reasons():
    """The reasons no golden stream shows: ops a sync runs that the search never registered,
    and ops the repair ran unfused after their block chose a fuser."""
    stream = _golden("search_six_independent")
    ops = [item for item in stream.items if hasattr(item, "name")]
    out = io.StringIO()
    log = FusionLog(LogLevel.BASIC, out).at([10, 11, 12])
    log_left_at_sync(log, ops[:3], 1, 2, True)
    log_left_at_sync(log, ops[:3], 2, 2, False)
    lines = out.getvalue().splitlines()
    assert lines == [
        "[fuselab] [unfused] 11 NumericFloat.Add: at the sync, not covered by the search's "
        "result",
        "[fuselab] [unfused] 12 Float.Exp: at the sync, not searched: the search stopped at "
        "op 12 (block cap or dependency cycle)",
        "[fuselab] [unfused] 12 Float.Exp: at the sync, not searched: every fuser had closed "
        "after op 11"]
    out.truncate(0)
    out.seek(0)
    log.notes.unfused.clear()
    remember_plan(log, 7, BlockOptimization(Operations((0, 1)), (0, 1)), ops)
    assert log.notes.unfused == {}
    log_cached_plan(log.at([20, 21]), 7)
    repaired = ("no order of the fused chunks keeps every tensor alive: the search's result "
                "runs unfused in stream order")
    assert out.getvalue().splitlines() == [
        f"[fuselab] [unfused] 10 NumericFloat.Mul: {repaired}",
        f"[fuselab] [unfused] 11 NumericFloat.Add: {repaired}",
        f"[fuselab] [unfused] 20 NumericFloat.Mul: {repaired} (cached plan #7)",
        f"[fuselab] [unfused] 21 NumericFloat.Add: {repaired} (cached plan #7)"]


# --- plan() without a log: FusionLog.from_env's, under every form of the environment ---------


def _plan_and_log(planner):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        result = planner(SEED_STREAMS["mul_add_exp"](), "metal")
    return result, err.getvalue()


@pytest.mark.parametrize("value", [None, "", "basic", "FULL", "off", "yes"])
def test_plan_log_from_the_environment_matches_refimpl(plan, monkeypatch, value):
    """``FUSELAB_LOG`` unset or set to any value: the plan and the log are refimpl's."""
    if value is None:
        monkeypatch.delenv("FUSELAB_LOG", raising=False)
    else:
        monkeypatch.setenv("FUSELAB_LOG", value)
    ours, theirs = _plan_and_log(plan), _plan_and_log(reference_plan)
    assert ours == theirs
    assert (ours[1] == "") == (value in (None, "", "off"))


@pytest.mark.parametrize("environ", [{}, {"FUSELAB_LOG": "basic"}])
def test_plan_log_from_a_replaced_environ_matches_refimpl(plan, monkeypatch, environ):
    """``os.environ`` replaced by a plain mapping (no ``_data`` of its own): the log is read
    as refimpl reads it, from that mapping."""
    monkeypatch.setenv("FUSELAB_LOG", "full")  # the process's own: not the one to read
    monkeypatch.setattr(os, "environ", dict(environ))
    ours, theirs = _plan_and_log(plan), _plan_and_log(reference_plan)
    assert ours == theirs
    assert (ours[1] == "") == (not environ)
