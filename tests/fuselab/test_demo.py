"""``fuselab demo``: every fact of the seed page holds, and the command's exit code says so."""

from fuselab import demo
from fuselab.cli import main


def test_demo_every_fact_holds(capsys):
    report = demo.run_demo("metal")
    assert report.failures == []
    assert sum(line.startswith("    [ok]") for line in report.lines) >= 15


def test_demo_command_exit_code(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "65 and 35" in out and "demo:" in out


def test_demo_failed_fact_fails_the_command(monkeypatch, capsys):
    def broken(report):
        report.check("a fact that does not hold", False)

    monkeypatch.setattr(demo, "SECTIONS", [broken])
    assert main(["demo"]) == 1
