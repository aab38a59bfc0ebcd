"""Campaigns: clean streams pass every check, a count-mode run is reproducible whatever the
jobs, the summary reports speed and coverage; repros replay."""

from __future__ import annotations

import json

import pytest

from fuselab.cli import main
from fuselab.fuzz import Config, fuzz
from fuselab.fuzz.checks import CHECKS, Case, Harness, run_checks
from fuselab.fuzz.generate import draw_stream
from fuselab.fuzz.plans import VARIANTS, Planners


def test_generated_streams_pass_every_check_in_every_plan_variant():
    h = Harness(Planners("fast"))
    for index in range(6):
        case = Case(draw_stream(1, index).stream, "metal", VARIANTS)
        assert run_checks(case, h, ("plan", "launch", "interp", "plan-space", "cache")) is None


def test_a_count_campaign_is_reproducible_across_jobs():
    one = fuzz(Config(seed=5, count=12, jobs=1)).to_json()
    two = fuzz(Config(seed=5, count=12, jobs=2)).to_json()
    assert one["streams"] == two["streams"] == 12
    assert one["coverage"] == two["coverage"]
    assert one["findings"] == 0 and one["streams_per_s"] > 0


def test_cli_json_summary_and_exit_status(capsys):
    assert main(["fuzz", "--count", "4", "--json", "--device", "metal", "cuda"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["streams"] == 4 and summary["buckets"] == {}
    assert set(summary["check_seconds"]) == {"plan", "launch", "interp", "plan-space", "cache"}
    assert sum(summary["coverage"]["values"].values()) == 4


@pytest.mark.parametrize("argv, message", [
    (["--time", "3 weeks"], "expected a duration"),
    (["--checks", "nope"], "unknown check 'nope'"),
    (["--device", "tpu"], "unknown device profile 'tpu'"),
    (["--checks", "planner-cmd"], "needs --planner-cmd"),
])
def test_bad_options_are_usage_errors(capsys, argv, message):
    assert main(["fuzz", *argv]) == 2
    assert message in capsys.readouterr().err


def test_replay_of_a_directory_that_is_not_a_repro(tmp_path, capsys):
    assert main(["fuzz", "--replay", str(tmp_path)]) == 2
    assert "not a fuzz repro directory" in capsys.readouterr().err


def test_every_check_is_registered():
    assert {"plan", "launch", "interp", "gpu", "plan-space", "cache"} <= set(CHECKS)
