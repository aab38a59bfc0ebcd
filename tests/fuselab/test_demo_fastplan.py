"""fastplan's section of ``fuselab demo``: its facts hold, and ``fuselab demo`` runs it."""

from __future__ import annotations

import pytest

import fastplan
from fuselab import demo
from fuselab.cli import main

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")


def test_demo_section_facts_hold(capsys):
    from fuselab.demo_fastplan import fastplan_section

    report = demo.Report("webgpu-default")
    fastplan_section(report)
    assert report.failures == []
    assert report.passed == 5
    assert report.lines[0] == "1. fastplan: refimpl's plans from the compiled twin"


def test_demo_section_runs_after_refimpl_s_sections(capsys):
    assert main(["demo"]) == 0
    titles = [line for line in capsys.readouterr().out.splitlines()
              if line[:1].isdigit() and ". " in line[:4]]
    numbers = [int(line.split(".")[0]) for line in titles]
    assert numbers == list(range(1, len(titles) + 1))
    assert any("fastplan: refimpl's plans" in line for line in titles[8:])
