"""Instructions per op of one planner path, counted by callgrind: an A/B that does not move.

burn counterpart: none. On a shared machine the same code's timing moves from one process
to the next; valgrind's callgrind counts the instructions executed inside the measured call,
the same to the instruction on a repeat. Usage:

    python bench/planner_instructions.py --workload mixed --path launch [--size 10000] [ROOT ...]
    python bench/planner_instructions.py --path cache --keep /tmp/cg     # and where they go

Each ROOT is a checkout with fastplan built in place (default: this one); give two to compare
a change with the tree before it. A root runs twice under callgrind, with the measured call
and without it (the same setup otherwise): the difference over the stream's items is the
figure. Paths: ``plan`` (``plan()`` from a fresh planner), ``cache`` (a warm planner's next
iteration), ``launch`` (that iteration's launch planning from the memo) and ``launch-cold``
(the first iteration's launch planning with a fresh memo, as ``plan()`` does it). Instruction counts
leave out what time also holds (cache misses, branch mispredictions): they decide between two
versions of the same code, they are not a speed.

``--keep DIR`` keeps each root's measured callgrind file in ``DIR`` and prints the
``callgrind_annotate`` commands that show where the instructions went, per function with
(``--inclusive=yes``) or without what it calls. The costs are the measured call's alone; the
call counts (``(12,345x)``) are the whole process's, setup included, so a function the setup
runs too shows more calls than the measured call made.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATHS = ("plan", "cache", "launch", "launch-cold")


def _child(root: str, workload: str, size: int, path: str, measured: bool) -> None:
    """The process callgrind watches: everything is set up, then only ``eval`` is counted."""
    sys.path.insert(0, root)
    try:
        from fuselab import workloads
    except ImportError:  # a checkout from before fuselab/: the workloads were fastplan.bench's
        from fastplan import bench as workloads
    from fastplan.fusers.registry import FusionRegistry
    try:
        from fastplan.launch.launch_memo import LaunchMemo
    except ImportError:  # a checkout from before the memo had its module
        from fastplan.launch.launch_stream import LaunchMemo
    from fastplan.planner import _launch_planned, plan
    from fastplan.stream.processor import StreamPlanner
    from refimpl.devices import profile_named

    profile = profile_named("metal")
    stream = workloads.build(workload, size)
    nxt = workloads.shifted(stream, 10 * (max(stream.inputs, default=0) + len(stream.items) + 1))
    plan(stream, profile)
    planner, memo = StreamPlanner(FusionRegistry().fusers(profile)), LaunchMemo()
    planner.run(stream)
    _launch_planned(stream, planner, 0, profile, memo)
    start = len(planner.queue.steps)
    cold = LaunchMemo()
    if path == "launch":
        planner.run(nxt)
    calls = {
        "plan": lambda: plan(stream, profile),
        "cache": lambda: planner.run(nxt),
        "launch": lambda: _launch_planned(nxt, planner, start, profile, memo),
        "launch-cold": lambda: _launch_planned(stream, planner, 0, profile, cold),
    }
    call = calls[path] if measured else (lambda: None)
    eval("call()", {"call": call})  # callgrind counts inside builtin_eval only
    print(len(stream.items))


def _instructions(root: str, workload: str, size: int, path: str, measured: bool,
                  keep: Path | None = None) -> tuple:
    """(instructions counted, stream items) of one callgrind run; its file is copied to
    ``keep`` when given."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                   "--collect-atstart=no", "--toggle-collect=builtin_eval", sys.executable,
                   __file__, "--child", root, "--workload", workload, "--size", str(size),
                   "--path", path] + ([] if measured else ["--unmeasured"])
        done = subprocess.run(command, capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": "0"})
        if keep is not None:
            shutil.copyfile(out, keep)
        for line in out.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1]), int(done.stdout.split()[-1])
    raise RuntimeError(f"no instruction total in callgrind's output for {root}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*", default=[str(ROOT)], metavar="ROOT")
    parser.add_argument("--workload", default="mixed", choices=("elementwise", "transformer",
                                                                "mixed"))
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--path", default="plan", choices=PATHS)
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep each root's measured callgrind file in DIR")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--unmeasured", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.workload, args.size, args.path, not args.unmeasured)
        return 0
    if shutil.which("valgrind") is None:
        print("planner_instructions: valgrind is not installed", file=sys.stderr)
        return 2
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    for number, root in enumerate(args.roots):
        kept = None
        if args.keep is not None:
            kept = args.keep / f"callgrind.{args.workload}.{args.path}.{number}.out"
        with_call, items = _instructions(root, args.workload, args.size, args.path, True, kept)
        without, _ = _instructions(root, args.workload, args.size, args.path, False)
        print(f"{root}  {args.workload} {items} items  {args.path}: "
              f"{(with_call - without) / items:.0f} instructions per op")
        if kept is not None:
            print(f"    callgrind_annotate --inclusive=yes {kept} | less")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
