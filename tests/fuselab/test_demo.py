"""``fuselab demo``: every fact of the seed page holds, and the command's exit code says so."""

from fuselab import demo
from fuselab.cli import main


def test_demo_every_fact_holds_and_the_command_says_so(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "[FAIL]" not in out and "65 and 35" in out and "demo:" in out
    assert out.count("    [ok]") >= 15
    assert "burn #6049 put back, found and shrunk" in out  # the fuzzer's section ran


def test_demo_failed_fact_fails_the_command(monkeypatch, capsys):
    def broken(report):
        report.check("a fact that does not hold", False)

    monkeypatch.setattr(demo, "SECTIONS", [broken])
    assert main(["demo"]) == 1
