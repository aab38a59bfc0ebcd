"""Where a machine spends fastplan's ``plan()`` time outside the planner's code: OS work and
cold caches.

burn counterpart: none. The same planner code measures differently from one machine to the
next; this script tells a slow machine's causes apart, fastplan alone, per workload at 1k and
10k:

* ``python bench/planner_faults.py``: ``plan()`` repeated in one process, before each call
  the full collection that bench/planner.py runs (``collect``), that collection and then
  an untimed ``plan()`` of another workload's short stream (``collect+warm``: fastplan's
  code and tables warm again, the timed stream's objects not), or nothing (``none``); per
  op the thread's CPU time, its user and system parts, and the minor page faults of the
  call (``getrusage``). System time or faults would mean the allocator returning memory to
  the OS between calls; ``collect`` slower than ``none`` is the call paying for cold caches,
  and ``collect+warm`` tells fastplan's own code and data from the stream's. Two more rows
  tell what in the full collection costs the call: ``collect(1)`` (the two younger
  generations only, which leave the interpreter's free lists alone) and ``collect frozen``
  (``gc.freeze()`` first: the full collection empties the free lists but visits no object);
* ``python bench/planner_faults.py interleaved [WORKLOAD ...]``: fastplan's four paths as
  bench/planner.py times them (``fuselab.bench._run_once``), alone, then each after a run of
  refimpl's four paths (the benchmark's turn-taking: refimpl's long run evicts fastplan's
  code and data from the caches), then alone again.

It reports; it asserts nothing.
"""

from __future__ import annotations

import gc
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fastplan  # noqa: E402
from fuselab import bench  # noqa: E402
from fuselab.workloads import build, shifted  # noqa: E402

PATHS = ("plan", "search", "cache", "launch")


# what runs before each timed call: (label, collection, plan() of the workload's WARM_WITH
# stream, untimed); the collection is gc.collect() ("full"), gc.collect(1) ("young": the
# interpreter's free lists are emptied by a full collection only) or gc.collect() over a
# frozen heap ("frozen": the free lists emptied, no object visited), or none
BEFORE = (("collect", "full", False), ("collect(1)", "young", False),
          ("collect frozen", "frozen", False), ("collect+warm", "full", True),
          ("none", None, False))


def _collect(kind) -> None:
    if kind == "full":
        gc.collect()
    elif kind == "young":
        gc.collect(1)
    elif kind == "frozen":
        gc.freeze()
        try:
            gc.collect()
        finally:
            gc.unfreeze()


# the short stream planned to warm fastplan's code: another workload's, so that no object of
# the timed stream is touched before the call
WARM_WITH = {"mixed": ("transformer", 50), "transformer": ("mixed", 200),
             "elementwise": ("mixed", 200)}


def _one_plan(stream, collect, warm=None) -> tuple:
    """(CPU s, user s, system s, minor faults) of one ``plan()`` after the collection
    ``collect`` (a kind of ``_collect``); ``warm``: a stream planned (untimed) right before
    it."""
    _collect(collect)
    if warm is not None:
        fastplan.plan(warm, "metal")
    before = resource.getrusage(resource.RUSAGE_THREAD)
    start = time.thread_time()
    result = fastplan.plan(stream, "metal")
    cpu = time.thread_time() - start
    after = resource.getrusage(resource.RUSAGE_THREAD)
    del result
    return (cpu, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime,
            after.ru_minflt - before.ru_minflt)


def repeated() -> None:
    print(f"python {sys.version.split()[0]}, fastplan compiled: {fastplan.COMPILED}; "
          "us per op, medians")
    for workload, size in (("mixed", 1000), ("transformer", 1000), ("elementwise", 1000),
                           ("mixed", 10000), ("transformer", 10000)):
        stream = build(workload, size)
        warm = build(*WARM_WITH[workload])
        n = len(stream.items)
        for label, collect, warmed in BEFORE:
            rows = [_one_plan(stream, collect, warm if warmed else None)
                    for _ in range(15 if size < 5000 else 5)]
            cpu, user, system, faults = (statistics.median(r[i] for r in rows) for i in range(4))
            print(f"{workload:12s} {n:6d} before: {label:14s}  cpu "
                  f"{cpu / n * 1e6:7.2f} (fastest {min(r[0] for r in rows) / n * 1e6:7.2f})  "
                  f"user {user / n * 1e6:7.2f}  system {system / n * 1e6:5.2f}  "
                  f"minor faults {faults:6.0f}", flush=True)


def interleaved(workloads: list[str]) -> None:
    """bench.measure's turn-taking, fastplan's calls timed by ``bench._timed`` with their
    system time and faults."""
    calls: list[tuple] = []
    timed_by_bench = bench._timed

    def timed(call) -> float:  # bench._timed, with getrusage around the call itself
        found = []

        def measured() -> None:
            before = resource.getrusage(resource.RUSAGE_THREAD)
            call()
            after = resource.getrusage(resource.RUSAGE_THREAD)
            found.append((after.ru_stime - before.ru_stime, after.ru_minflt - before.ru_minflt))

        cpu = timed_by_bench(measured)
        calls.append((cpu, *found[0]))
        return cpu

    bench._timed = timed
    for workload in workloads:
        stream = build(workload, 1000)
        n = len(stream.items)
        nxt = shifted(stream, 10 * (max(stream.inputs, default=0) + n + 1))
        for after_refimpl in (False, True, False):
            runs = []
            for _ in range(7):
                if after_refimpl:
                    bench._run_once("refimpl", stream, nxt, "metal")
                calls.clear()
                bench._run_once("fastplan", stream, nxt, "metal")
                runs.append(list(calls))  # plan, search, cache, launch (after the cache)
            for k, path in enumerate(PATHS):
                rows = [run[k] for run in runs]
                print(f"{workload:12s} after refimpl: {after_refimpl!s:5s} {path:7s} cpu "
                      f"{statistics.median(r[0] for r in rows) / n * 1e6:7.2f} us/op  system "
                      f"{statistics.median(r[1] for r in rows) / n * 1e6:5.2f}  minor faults "
                      f"{statistics.median(r[2] for r in rows):6.0f}", flush=True)


def main(argv: list[str]) -> int:
    if argv and argv[0] == "interleaved":
        interleaved(argv[1:] or ["mixed", "transformer"])
    elif argv:
        print(__doc__, file=sys.stderr)
        return 2
    else:
        repeated()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
