"""FUSELAB_LOG: the planning log on stderr (``refimpl/planner/log.py``)."""

from __future__ import annotations

import io

import pytest

from refimpl.planner import log as plan_log
from refimpl.planner import plan
from refimpl.planner.log import FusionLog, LogLevel
from refimpl.seed import SEED_STREAMS


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
    plan(SEED_STREAMS["mul_add_exp"](), "metal")
    assert capsys.readouterr().err == ""


def test_plan_log_basic_lists_every_fuser_of_a_block(monkeypatch, capsys):
    monkeypatch.setenv("FUSELAB_LOG", "basic")
    plan(SEED_STREAMS["mul_add_exp"](), "metal")
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
    plan(SEED_STREAMS["chain"](), "metal", log=FusionLog(LogLevel.FULL, out))
    text = out.getvalue()
    assert "[stream] op 0 NumericFloat.MulScalar -> new block (total: 1)" in text
    assert "[plan] exploration completed: Lazy, 65/66 ops optimized" in text
    assert "max_ops" in text  # why ElementWise closed at op 66


def test_plan_log_reports_cache_hits_on_repeated_iterations():
    out = io.StringIO()
    plan(SEED_STREAMS["inplace_kv_cache"](), "metal", log=FusionLog(LogLevel.FULL, out))
    assert "[plan] cache hit: execute plan #" in out.getvalue()
