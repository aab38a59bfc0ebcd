"""fastplan's planner timed in two or more built checkouts, the builds taking turns.

burn counterpart: none. ``bench/planner_instructions.py`` compares two versions of the code by
instructions, which do not move; a change of build (compiler flags, the profile-guided build)
changes what instructions cannot show (code layout, cache misses), so it needs time, and time
moves between processes on a shared machine. Here each round runs one process
per checkout, in turn, each measuring fastplan's four paths the way ``bench/planner.py`` does
(``fuselab.bench.measure``, fastplan alone), all pinned to one CPU; the figure per
checkout is the median over the rounds, with the fastest and slowest process beside it, and
the ratio to the first checkout is of those medians. Usage:

    python bench/planner_ab.py --workload mixed --size 1000 --rounds 7 ROOT_A ROOT_B

Each ROOT is a checkout with fastplan built in place (``fastplan.COMPILED`` is checked: a
root whose build did not import fails the run). ``--json`` prints the medians as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

PATHS = ("plan", "search", "cache", "cache+launch")

_CHILD = r"""
import json, os, sys
if int(sys.argv[5]) >= 0:
    os.sched_setaffinity(0, {int(sys.argv[5])})
sys.path.insert(0, sys.argv[1])
import fastplan
try:
    from fuselab import bench, workloads
except ImportError:  # a checkout from before fuselab/: the benchmark was fastplan.bench
    from fastplan import bench
    workloads = bench
if not fastplan.COMPILED:
    raise SystemExit(f"fastplan is not compiled in {sys.argv[1]}")
stream = workloads.build(sys.argv[2], int(sys.argv[3]))
n = len(stream.items)
found = bench.measure(stream, "metal", bench.runs_for(n, int(sys.argv[4])), with_refimpl=False)
print(json.dumps({"items": n, "us": {p: found["fastplan"][p][0] / n * 1e6 for p in bench.PATHS},
                  "module": fastplan.planner_module("stream.processor").__file__}))
"""


def _one(root: str, workload: str, size: int, repeats: int, cpu: int) -> dict:
    env = {**os.environ, "PYTHONPATH": root, "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", _CHILD, root, workload, str(size),
                           str(repeats), str(cpu)], capture_output=True, text=True, env=env,
                          cwd=root, check=False)
    if done.returncode:
        raise SystemExit(f"planner_ab: {root}: {done.stderr.strip()}")
    found = json.loads(done.stdout)
    if not os.path.realpath(found["module"]).startswith(os.path.realpath(root)):
        raise SystemExit(f"planner_ab: {root} imported fastplan from {found['module']}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+", metavar="ROOT")
    parser.add_argument("--workload", action="append",
                        choices=("elementwise", "transformer", "mixed"))
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7, help="processes per root (default 7)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs per measurement inside a process, as bench/planner.py's")
    parser.add_argument("--cpu", type=int, default=None,
                        help="the CPU every process runs on (default: the last this process "
                             "may use; -1: not pinned), so that no process lands on another "
                             "core, cache or node than its rival")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    cpu = args.cpu
    if cpu is None:
        cpu = max(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else -1
    roots = [os.path.abspath(root) for root in args.roots]
    results = {}
    for workload in args.workload or ["transformer", "mixed"]:
        runs: dict[str, list[dict]] = {root: [] for root in roots}
        for _ in range(args.rounds):
            for root in roots:
                runs[root].append(_one(root, workload, args.size, args.repeats, cpu))
        results[workload] = {
            "items": runs[roots[0]][0]["items"],
            "us": {root: {p: statistics.median(run["us"][p] for run in runs[root])
                          for p in PATHS} for root in roots},
            "runs": {root: [run["us"] for run in runs[root]] for root in roots}}
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    print(f"µs of planning-thread CPU time per op, median of {args.rounds} processes per root "
          f"(each the median of bench.runs_for runs), on CPU {cpu}; ratio: to the first root; "
          f"[spread: the fastest and slowest process]")
    print("| workload | ops | path | " + " | ".join(roots) + " |")
    print("|---|---:|---|" + "---:|" * len(roots))
    for workload, found in results.items():
        for path in PATHS:
            base = found["us"][roots[0]][path]
            cells = []
            for root in roots:
                values = [run[path] for run in found["runs"][root]]
                ratio = "" if root == roots[0] else f" ({found['us'][root][path] / base:.2f})"
                cells.append(f"{found['us'][root][path]:.2f}{ratio} "
                             f"[{min(values):.2f}–{max(values):.2f}]")
            print(f"| {workload} | {found['items']} | {path} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
