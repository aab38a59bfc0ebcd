"""fastplan's section of ``fuselab demo``: refimpl's plans from the compiled twin, and faster.

burn counterpart: none (the demo is the seed page run live; SPEC §7). ``fuselab.demo`` lists
``fastplan_section`` in its ``SECTIONS``. It shows, on the demo's device profile:

* every seed stream planned by ``fastplan.plan`` gives refimpl's plan, byte for byte;
* a transformer-like stream (``fuselab.workloads``) planned by both: the same plan, and the CPU
  time of each (one machine, one run: ``docs/benchmarks.md`` has the measured table);
* its next iteration (every tensor id moved, as a runtime's next step) planned by a warm
  planner: no search (the plan cache), every fused step replayed by the launch memo, and the
  launch-planned steps equal to refimpl's.
"""

from __future__ import annotations

import time
from typing import Any

import fastplan
from refimpl.devices import profile_named
from refimpl.planner import plan, plan_to_json
from refimpl.planner.fusers.registry import FusionRegistry as RefRegistry
from refimpl.planner.stream.processor import StreamPlanner as RefPlanner
from refimpl.seed import SEED_STREAMS
from fuselab import workloads

__all__ = ["fastplan_section"]

DEMO_ITEMS = 2_000  # the transformer-like stream's length (items)


def _cpu(call) -> tuple[float, Any]:
    start = time.thread_time()
    result = call()
    return time.thread_time() - start, result


def _seed_plans_equal(device: str) -> list[str]:
    """The seed streams whose fastplan plan differs from refimpl's (canonical JSON)."""
    return [name for name, build in SEED_STREAMS.items()
            if plan_to_json(fastplan.plan(build(), device)) != plan_to_json(plan(build(), device))]


def _next_iteration(stream: Any, nxt: Any, device: str) -> dict[str, Any]:
    """Plan ``stream`` then ``nxt`` with one warm planner per twin: what the second pass did."""
    # compiled modules only (the section is skipped when fastplan is not compiled)
    from fastplan.launch.launch_memo import LaunchMemo
    from fastplan.stream.processor import StreamPlanner
    from fastplan.fusers.registry import FusionRegistry

    profile = profile_named(device)
    planner, memo = StreamPlanner(FusionRegistry().fusers(profile)), LaunchMemo()
    planner.run(stream)
    planner.launch_planned(stream, 0, profile, memo)
    planner.forget_steps()
    searches, misses = planner.num_explorations, memo.misses
    planner.run(nxt)
    steps = planner.launch_planned(nxt, 0, profile, memo)
    reference = RefPlanner(RefRegistry().fusers(profile))
    reference.run(stream)
    reference.forget_steps()
    reference.run(nxt)
    expected = reference.launch_planned(nxt, 0, profile)
    return {"searches": planner.num_explorations - searches, "misses": memo.misses - misses,
            "fused": sum(1 for step in steps if step.fused), "equal": steps == expected}


def fastplan_section(report: Any) -> None:
    """The compiled planner on the demo's device profile (see the module docstring)."""
    report.section("fastplan: refimpl's plans from the compiled twin")
    if not fastplan.COMPILED:
        report.say("    [skip] fastplan is not compiled (`make build` builds it)")
        return
    device = report.device
    differ = _seed_plans_equal(device)
    report.check("every seed stream: fastplan's plan is refimpl's, byte for byte", not differ,
                 ", ".join(differ))
    stream = workloads.build("transformer", DEMO_ITEMS)
    n = len(stream.items)
    ref_s, expected = _cpu(lambda: plan(stream, device))
    fast_s, got = _cpu(lambda: fastplan.plan(stream, device))
    report.check(f"a {n}-item transformer-like stream: the same plan", got == expected,
                 f"{len(got.steps)} steps")
    report.say(f"  plan() with launch planning, CPU time on this machine: refimpl "
               f"{ref_s / n * 1e6:.1f} µs/item, fastplan {fast_s / n * 1e6:.2f} µs/item "
               f"({ref_s / fast_s:.0f}x; docs/benchmarks.md has the measured table)")
    nxt = workloads.shifted(stream, 10 * (max(stream.inputs, default=0) + n + 1))
    second = _next_iteration(stream, nxt, device)
    report.check("its next iteration (every id moved) runs no search: the plan cache serves it",
                 second["searches"] == 0, f"{second['searches']} searches")
    report.check("and the launch memo replays every fused step of it",
                 second["misses"] == 0 and second["fused"] > 0,
                 f"{second['fused']} fused steps, {second['misses']} planned again")
    report.check("the launch-planned steps of the next iteration are refimpl's", second["equal"])
