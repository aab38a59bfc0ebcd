"""``fuselab bench planner`` says how far it is (stderr) and how long its streams really are.

A workload records whole iterations until its stream holds the size asked for, so the stream
is longer than asked: the header prints each size asked and the length it gave.
"""

from __future__ import annotations

import io

from fuselab import cli


def test_cli_bench_planner_header_gives_the_real_sizes(capsys):
    from fuselab.workloads import build

    ops = len(build("transformer", 30).items)  # one whole transformer block and its sync
    assert ops > 30
    assert cli.main(["bench", "planner", "--workload", "transformer", "--sizes", "30",
                     "--repeats", "1"]) == 0
    captured = capsys.readouterr()
    header = captured.out.splitlines()[1]
    assert header.startswith(f"transformer: size 30 → {ops} ops (whole iterations, ")
    assert f"| transformer | {ops} |" in captured.out
    # not a terminal: plain progress lines, one per stream and one per measurement
    lines = captured.err.splitlines()
    assert lines[0] == f"transformer: size 30 → {ops} ops; 5 runs of refimpl and fastplan"
    assert lines[1].startswith(f"transformer {ops} plan: ")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bench_progress_is_rich_on_a_terminal_and_plain_lines_elsewhere():
    from fuselab import bench

    plain = io.StringIO()
    with bench.progress_on(plain) as progress:
        assert type(progress) is bench.Progress
        progress.stream("mixed", 10, 21, 3, False)
        progress.ran()
        progress.measured("mixed 21 plan: 0.0/1.00")
    assert plain.getvalue() == ("mixed: size 10 → 21 ops; 3 runs of fastplan only\n"
                                "mixed 21 plan: 0.0/1.00\n")
    terminal = _Terminal()
    with bench.progress_on(terminal) as progress:
        assert type(progress) is not bench.Progress
        progress.begin(1)
        progress.stream("mixed", 10, 21, 3, True)
        for _ in range(6):
            progress.ran()
        progress.measured("mixed 21 plan: 2.0/1.00")
    shown = terminal.getvalue()
    assert "mixed 10 → 21 ops" in shown and "6/6" in shown
    assert "mixed 21 plan: 2.0/1.00" in shown
