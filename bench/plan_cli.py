"""Process time of ``fuselab plan STREAM --planner ref|fast``, start-up and imports included.

burn counterpart: none (times fuselab's command line end to end).

    .venv/bin/python bench/plan_cli.py [--sizes 10000] [--repeats 3] [--chains 20000]

writes each stream (the workloads of ``fuselab.workloads`` at each size, and the ``chains``
stream of ``fuselab.front_door``) to a temporary folder, runs ``python -m fuselab plan FILE
--planner P`` for both planners in turn, ``--repeats`` times, and prints the median user +
system CPU seconds of each process (``resource.getrusage(RUSAGE_CHILDREN)``), the ratio, and
whether both printed the same bytes. One more row: ``plan --batch`` of all the streams in one
process.

The packages' bytecode caches are written first (``compileall``): an installed fuselab has
them, and without them (``PYTHONDONTWRITEBYTECODE`` set, a fresh checkout) every process
would compile its sources again, a cost of the checkout rather than of the command.
"""

from __future__ import annotations

import argparse
import compileall
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fuselab.front_door import chains  # noqa: E402
from fuselab.workloads import WORKLOADS, build  # noqa: E402
from refimpl.frontend import Session  # noqa: E402
from refimpl.stream import save_stream  # noqa: E402


def _cpu(args: list[str]) -> tuple[float, bytes]:
    """User + system CPU seconds of one child process, and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-m", "fuselab", *args], capture_output=True,
                          check=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000", help="workload sizes (default 10000)")
    parser.add_argument("--chains", type=int, default=20_000, help="ops of the chains stream")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="metal")
    args = parser.parse_args()
    for package in ("fuselab", "refimpl", "fastplan"):
        compileall.compile_dir(ROOT / package, quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for name in WORKLOADS:
            for size in (int(s) for s in args.sizes.split(",") if s):
                stream = build(name, size)
                files.append((f"{name} {len(stream.items)}", Path(tmp) / f"{name}{size}.json"))
                save_stream(stream, files[-1][1])
        session = Session(executor=None)
        chains(session, args.chains, random.Random(0))
        stream = session.close()
        files.append((f"chains {len(stream.items)}", Path(tmp) / "chains.json"))
        save_stream(stream, files[-1][1])
        print(f"python {sys.version.split()[0]}; process CPU seconds (user + system), median of "
              f"{args.repeats}; fuselab plan FILE --device {args.device}")
        print("| stream | ref s | fast s | ratio | same output |\n|---|---:|---:|---:|---|")
        for label, path in files:
            runs: dict[str, list[float]] = {"ref": [], "fast": []}
            outputs = {}
            for _ in range(args.repeats):
                for planner in runs:
                    took, outputs[planner] = _cpu(["plan", str(path), "--planner", planner,
                                                   "--device", args.device])
                    runs[planner].append(took)
            ref, fast = (statistics.median(runs[p]) for p in ("ref", "fast"))
            print(f"| {label} | {ref:.3f} | {fast:.3f} | {ref / fast:.1f}× | "
                  f"{outputs['ref'] == outputs['fast']} |", flush=True)
        batch = {p: _cpu(["plan", "--batch", tmp, "--planner", p, "--device", args.device])[0]
                 for p in ("ref", "fast")}
        print(f"| all {len(files)} in one process (--batch) | {batch['ref']:.3f} | "
              f"{batch['fast']:.3f} | {batch['ref'] / batch['fast']:.1f}× | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
