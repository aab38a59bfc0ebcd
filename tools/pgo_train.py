"""The training run of fastplan's profile-guided build (``FASTPLAN_PGO=1``, setup.py).

burn counterpart: none (a build step; burn's planner is compiled Rust).

setup.py first builds fastplan instrumented (``-fprofile-generate``), runs this script against
that build, then builds it again with the counts it wrote (``-fprofile-use``): the C compiler
lays out each function for the branches the planner really takes, inlines where calls are
hot and keeps the rarely run code (error paths, the boundary fallbacks) out of the way.

The runs here are what a runtime does with the planner, on streams that are not the
benchmark's (``fuselab.bench`` measures seed 0; these are other seeds and lengths, and the
golden corpus), so that the benchmark does not grade the build on its own training set:

* ``plan(stream, device)`` on every golden stream for every device preset (all five fusers,
  every op family of the corpus), and on each benchmark workload at another seed;
* a ``StreamPlanner`` kept across iterations, each next iteration with every tensor id
  moved (the plan-cache hit path), and its launch planning with a ``LaunchMemo`` kept
  beside it;
* the incremental API: ops registered one by one, syncs and a final drain.

Exit status 2 when fastplan's compiled modules are not the ones imported: counts from the
pure-Python fallback would train nothing, and setup.py then builds without them.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# setup.py points PYTHONPATH at the tree that holds the instrumented build
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

import fastplan
from refimpl.devices import PRESETS, profile_named
from refimpl.ir import Sync
from refimpl.stream import load_stream

GOLDEN_STREAMS = ROOT / "tests" / "golden" / "streams"
WORKLOADS = {"elementwise": 2500, "transformer": 2500, "mixed": 1500}
SEED = 7  # the benchmark's streams are seed 0
ITERATIONS = 3


def _golden() -> int:
    """``plan`` on every golden stream for every device preset; how many plans."""
    count = 0
    for path in sorted(GOLDEN_STREAMS.glob("*.json")):
        stream = load_stream(path)
        for device in PRESETS:
            fastplan.plan(stream, device)
            count += 1
    return count


def _runtime(stream, profile) -> None:
    """A runtime's loop: a planner and a launch memo kept across iterations of ``stream``."""
    from fuselab import workloads
    from fastplan.launch.launch_memo import LaunchMemo
    from fastplan.stream.processor import StreamPlanner
    from fastplan.fusers.registry import FusionRegistry

    planner, memo = StreamPlanner(FusionRegistry().fusers(profile)), LaunchMemo()
    span = 10 * (max(stream.inputs, default=0) + len(stream.items) + 1)
    for iteration in range(ITERATIONS):
        current = workloads.shifted(stream, iteration * span) if iteration else stream
        start = len(planner.queue.steps)
        planner.run(current)
        planner.launch_planned(current, start, profile, memo)
        planner.forget_steps()


def _incremental(stream, profile) -> None:
    """The incremental API: each op registered as it comes, syncs, then a drain (the loop of
    refimpl's ``StreamPlanner.run``, which fastplan's ``run`` runs in C instead)."""
    from fastplan.stream.processor import StreamPlanner
    from fastplan.fusers.registry import FusionRegistry

    planner = StreamPlanner(FusionRegistry().fusers(profile))
    for index, item in enumerate(stream.items):
        if isinstance(item, Sync):
            planner.sync(item.tensors)
        else:
            planner.register(index, item)
    planner.drain()


def main() -> int:
    if not fastplan.COMPILED:
        print("pgo_train: fastplan's compiled modules are not loaded; nothing to train",
              file=sys.stderr)
        return 2
    from fuselab import workloads

    profile = profile_named("metal")
    plans = _golden() if GOLDEN_STREAMS.is_dir() else 0
    for workload, size in WORKLOADS.items():
        stream = workloads.build(workload, size, seed=SEED)
        fastplan.plan(stream, profile)
        _runtime(stream, profile)
        _incremental(stream, profile)
    print(f"pgo_train: {plans} golden plans, {len(WORKLOADS)} workloads "
          f"(plan, {ITERATIONS} iterations of a runtime, the incremental API)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
