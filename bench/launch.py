"""Time launch planning: refimpl's ``plan_launch`` against fastplan's twin on the golden streams.

    .venv/bin/python bench/launch.py [--runs 9] [--device metal] [--json]

Every stream of ``tests/golden/streams`` is planned once by refimpl's planner; its launches
(every ``plan_launch`` call the interpreter makes: fused steps, matmul and reduce fallbacks,
dry runs) are recorded with the memory each one starts from. Each run then replays every
recorded launch on a fresh fork of its memory (forks made before the clock starts) with one
implementation. Times are the median of the runs (CPU time of the process), in microseconds
per fused step and per launch; "ratio" is refimpl / fastplan. The two are checked equal
(plan, handles, memory left behind) before timing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from refimpl import interpreter
from refimpl.devices import profile_named
from refimpl.planner.launch.launch import LaunchError
from refimpl.planner.launch.launch import plan_launch as reference_plan_launch
from refimpl.stream import load_stream


def record(device) -> tuple[list[tuple], int]:
    """Every launch refimpl plans for the golden streams, and the number of fused steps."""
    calls, fused = [], 0

    def recorder(trace, context, memory, device, operands=None):
        calls.append((trace, context, memory.fork(), device, operands))
        return reference_plan_launch(trace, context, memory, device, operands)

    saved = interpreter.plan_launch
    interpreter.plan_launch = recorder
    try:
        for path in sorted((ROOT / "tests" / "golden" / "streams").glob("*.json")):
            stream = load_stream(path)
            profile, executed = interpreter.executed_steps(stream, device)
            fused += sum(1 for item in executed if item.step.fused)
            interpreter.launch_plan_stream(stream, executed, profile)
    finally:
        interpreter.plan_launch = saved
    return calls, fused


def replay(plan_launch, calls, memories) -> list:
    out = []
    for (trace, context, _, device, operands), memory in zip(calls, memories):
        try:
            launch = plan_launch(trace, context, memory, device, operands)
            out.append((launch.plan, launch.input_handles, launch.output_handles))
        except LaunchError:
            out.append(LaunchError)
    return out


def timed(plan_launch, calls, runs: int) -> float:
    times = []
    for _ in range(runs):
        memories = [call[2].fork() for call in calls]
        start = time.process_time()
        replay(plan_launch, calls, memories)
        times.append(time.process_time() - start)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--device", default="metal")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from fastplan.launch.launch import plan_launch as fast_plan_launch

    calls, fused = record(profile_named(args.device))
    ref_mems = [c[2].fork() for c in calls]
    fast_mems = [c[2].fork() for c in calls]
    if replay(reference_plan_launch, calls, ref_mems) != \
            replay(fast_plan_launch, calls, fast_mems):
        print("refimpl and fastplan differ", file=sys.stderr)
        return 1
    ref = timed(reference_plan_launch, calls, args.runs)
    fast = timed(fast_plan_launch, calls, args.runs)
    result = {
        "streams": len(list((ROOT / "tests" / "golden" / "streams").glob("*.json"))),
        "fused_steps": fused, "launches": len(calls),
        "refimpl_us_per_step": 1e6 * ref / fused, "fastplan_us_per_step": 1e6 * fast / fused,
        "refimpl_us_per_launch": 1e6 * ref / len(calls),
        "fastplan_us_per_launch": 1e6 * fast / len(calls),
        "ratio": ref / fast,
    }
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{result['streams']} golden streams, {fused} fused steps, {len(calls)} launches "
          f"({args.device}, median of {args.runs} runs, CPU time)")
    print(f"{'':10} {'µs/step':>9} {'µs/launch':>10}")
    for name in ("refimpl", "fastplan"):
        print(f"{name:10} {result[name + '_us_per_step']:9.1f} "
              f"{result[name + '_us_per_launch']:10.1f}")
    print(f"ratio      {result['ratio']:9.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
