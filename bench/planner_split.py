"""Where fastplan's planning time goes: the search and launch planning, fresh and warm.

    .venv/bin/python bench/planner_split.py [--workload W] [--size 10000] [--repeats 5]

For each workload of ``fuselab.workloads`` (one stream of about ``--size`` items) and a fastplan
``StreamPlanner`` with a ``LaunchMemo`` kept beside it, as a runtime keeps them:

* ``search`` — ``StreamPlanner.run`` on iteration 1, from a fresh planner;
* ``launch`` — launch planning of iteration 1 (``fastplan.planner._launch_planned``), the
  memo filling as it goes (``hits``: fused steps met again inside the stream);
* ``cache`` — ``run`` on iteration 2 (every tensor id moved): the plan-cache hit path;
* ``launch-warm`` — launch planning of iteration 2, served from the memo;
* ``walk`` — the compiled walk alone on iteration 1's executed steps with the warm memo
  (``fastplan.launch.execute.launch_plan_stream``, without building the executed steps).

µs of planning-thread CPU time per stream item, median of ``--repeats`` (the garbage
collector on and charged as in ``bench/planner.py``). Needs fastplan compiled.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuselab import bench, workloads  # noqa: E402
from refimpl.devices import profile_named  # noqa: E402

PARTS = ("search", "launch", "cache", "launch-warm", "walk")


def measure(workload: str, size: int, repeats: int, device: str) -> dict[str, float]:
    """Median µs per item of every part, and the memo's hits on iteration 1."""
    from fastplan.fusers.registry import FusionRegistry
    from fastplan.launch.execute import launch_plan_stream
    from fastplan.launch.launch_memo import LaunchMemo
    from fastplan.planner import _launch_planned
    from fastplan.stream.processor import StreamPlanner

    profile = profile_named(device)
    stream = workloads.build(workload, size)
    n = len(stream.items)
    nxt = workloads.shifted(stream, 10 * (max(stream.inputs, default=0) + n + 1))
    times: dict[str, list[float]] = {part: [] for part in PARTS}
    hits = 0
    for _ in range(repeats):
        planner, memo = StreamPlanner(FusionRegistry().fusers(profile)), LaunchMemo()
        times["search"].append(bench._timed(lambda: planner.run(stream)))
        times["launch"].append(
            bench._timed(lambda: _launch_planned(stream, planner, 0, profile, memo)))
        hits = memo.hits
        start = len(planner.queue.steps)
        times["cache"].append(bench._timed(lambda: planner.run(nxt)))
        times["launch-warm"].append(
            bench._timed(lambda: _launch_planned(nxt, planner, start, profile, memo)))
        executed = planner.queue.executed[:start]
        times["walk"].append(
            bench._timed(lambda: launch_plan_stream(stream, executed, profile, memo)))
    result = {part: statistics.median(values) / n * 1e6 for part, values in times.items()}
    result["items"], result["hits"] = n, hits
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", action="append", choices=list(workloads.WORKLOADS))
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="metal")
    args = parser.parse_args()
    print("| workload | items | " + " | ".join(PARTS) + " | memo hits (iteration 1) |")
    print("|---|---:|" + "---:|" * (len(PARTS) + 1))
    for workload in args.workload or list(workloads.WORKLOADS):
        r = measure(workload, args.size, args.repeats, args.device)
        cells = " | ".join(f"{r[part]:.2f}" for part in PARTS)
        print(f"| {workload} | {r['items']} | {cells} | {r['hits']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
