"""``--planner-cmd``: a conforming port passes; every way an external planner can go wrong is a
finding with a clear message, never a crash of the fuzzer."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fuselab.fuzz.checks import Case, Harness
from fuselab.fuzz.external import ExternalPlanner, check_planner_cmd, golden_corpus

ROOT = Path(__file__).resolve().parents[2]
PORT = f"{sys.executable} {ROOT / 'docs' / 'examples' / 'fastplan_port.py'}"


def _check(command: str, name: str = "chain", timeout: float = 20.0):
    stream = dict(golden_corpus())[name]
    return check_planner_cmd(Case(stream, "metal"), Harness(external=ExternalPlanner(
        command, timeout)))


def test_the_fastplan_port_conforms():
    assert _check(PORT) is None
    assert _check(PORT, "search_softmax") is None


@pytest.mark.parametrize("command, symptom, detail", [
    ("sh -c 'cat >/dev/null; echo hello'", "not JSON", "stdout is not JSON"),
    ("sh -c 'cat >/dev/null; echo \"[1, 2]\"'", "wrong schema", "not a plan document"),
    ("sh -c 'cat >/dev/null; echo oops >&2; exit 3'", "crash", "exit status 3: oops"),
    ("sh -c 'sleep 30'", "hang", "no plan within 0.5 s"),
    ("/nonexistent/planner", "crash", "cannot start"),
])
def test_a_broken_external_planner_is_a_finding(command, symptom, detail):
    failure = _check(command, timeout=0.5 if "sleep" in command else 20.0)
    assert failure is not None and failure.check == "planner-cmd"
    assert failure.symptom == symptom and detail in failure.detail


def test_a_port_that_skips_ops_is_named():
    failure = _check(f"{PORT} --bug skip-last", "search_softmax")
    assert failure.symptom == "skips ops" and "are in no step" in failure.detail
