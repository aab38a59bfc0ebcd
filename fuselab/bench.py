"""The planner benchmark: refimpl's planner vs fastplan's, on streams of realistic shape.

burn counterpart: none (burn has criterion benches for its kernels, not for the planner).
``bench/planner.py`` and ``fuselab bench planner`` run ``main``.

The streams are ``fuselab.workloads``'s. Each records whole iterations, so a stream is longer
than asked (``--sizes 200`` gives elementwise 251 ops): the header prints each size asked and
the length it gave.

Measures (median of ``repeats`` runs of planning-thread CPU time, µs per op; an op is a stream
item, syncs included; ``runs_for`` gives short streams more runs; refimpl and fastplan take
turns, one run of every path each), the same for refimpl and fastplan:

* ``plan`` — ``plan(stream, device)`` from a fresh planner: every search it needs, the cache
  hits inside the stream (repeated blocks), and launch planning (``aliases`` per step,
  ``width`` per block), which ``plan`` includes;
* ``search`` — a fresh ``StreamPlanner.run(stream)``: the same without launch planning;
* ``launch`` — that planner's launch planning of the steps it just executed (iteration 1):
  every fused step is planned in full the first time it is met; fastplan's ``LaunchMemo``
  starts empty, as in ``plan``, and serves the steps repeated inside the stream. This is
  ``plan`` less ``search``, timed on its own: what a runtime pays the first time it meets a
  fused step (after that the memo serves it, as in ``cache+launch``);
* ``cache`` — that planner, warm, planning the next iteration (every tensor id moved, as a
  runtime's next step allocates new ids): the plan-cache hit path;
* ``cache+launch`` — the same plus launch planning of its steps: the steady state of a
  runtime that repeats its iteration, i.e. the amortised cost per op. fastplan's launch
  planning (``fastplan.launch.execute``) keeps a ``LaunchMemo`` beside the planner, as a
  runtime would: it was filled by launch-planning iteration 1 (not timed), so iteration 2's
  fused steps are replayed from it; refimpl plans every launch again.

``plan`` and ``search`` start from nothing: every fused step fastplan's memo has not seen in
the same ``plan`` call is launch-planned in full.

With ``--front-door`` (or ``--front-door-only``) it also times a stream's whole way through
``fuselab plan``: reading and validating the JSON, recording with the lazy frontend, planning,
writing the plan (``fuselab.front_door``), for every workload at every size and for the
``chains`` stream of 20 000 ops.

``fuselab bench planner`` reports its progress on stderr (a ``rich`` progress display on a
terminal; one line per stream and per measurement otherwise): a
default run lasts minutes.
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import gc
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn,
)
from rich.progress import Progress as Display

import fastplan
import refimpl.planner as ref
import refimpl.planner.fusers.registry as ref_registry
from refimpl.devices import profile_named
from refimpl.planner.stream.processor import StreamPlanner as RefPlanner
from refimpl.stream import Stream
from fuselab.workloads import ITERATIONS, WORKLOADS, build, shifted

__all__ = ["SIZES", "PATHS", "Row", "Progress", "measure", "run", "table", "sizes_header",
           "progress_on", "interpreter_build", "add_arguments", "main"]

SIZES = (1_000, 10_000, 100_000)


# --- measuring --------------------------------------------------------------------------------

# The measured paths, in table order.
PATHS = {
    "plan": "plan() — fresh planner, launch planning included",
    "search": "search only — fresh StreamPlanner.run",
    "launch": "launch planning, iteration 1 — after the search, fresh memo",
    "cache": "cache hit — warm StreamPlanner.run, next iteration",
    "cache+launch": "cache hit + launch planning",
}


@dataclasses.dataclass(frozen=True)
class Row:
    """One measurement: µs of planning thread CPU time per op, median of the runs."""

    workload: str
    ops: int  # the stream's length (items), at least ``size``
    path: str  # a key of PATHS
    refimpl_us: float | None  # None: refimpl was not run at this size (--ref-budget)
    fastplan_us: float
    explorations: int  # searches fastplan ran on this path (cache paths: 0 means all hits)
    size: int | None = None  # the size asked for (``build``'s ``num_ops``)

    @property
    def ratio(self) -> float | None:
        return None if self.refimpl_us is None else self.refimpl_us / self.fastplan_us


def _no_memo() -> None:
    """refimpl keeps no launch memo: its ``launch_planned`` plans every step again."""


def _planners():
    """Per planner: ``(plan, StreamPlanner, FusionRegistry, memo)``, where ``memo()`` makes
    what a runtime keeps beside its planner across iterations for
    ``StreamPlanner.launch_planned`` (fastplan's ``LaunchMemo``; refimpl keeps nothing:
    ``None``). fastplan's are refimpl's when fastplan is not compiled
    (``fastplan.COMPILED``)."""
    fast_memo = _no_memo
    if fastplan.COMPILED:
        from fastplan.launch.launch_memo import LaunchMemo as fast_memo
    return {"refimpl": (ref.plan, RefPlanner, ref_registry.FusionRegistry, _no_memo),
            "fastplan": (fastplan.plan, fastplan.planner_module("stream.processor").StreamPlanner,
                         fastplan.planner_module("fusers.registry").FusionRegistry, fast_memo)}


def _timed(call: Callable[[], object]) -> float:
    """CPU seconds of this thread spent in ``call`` (the planner is single-threaded; CPU time
    is not inflated by other processes on a shared machine), and in the young-generation
    collection right after it: fastplan pauses the cyclic collector inside its calls, so the
    collection their allocations would trigger is charged here, to the call (for refimpl it
    finds the few objects made since its last collection)."""
    gc.collect()
    start = time.thread_time()
    call()
    gc.collect(0)
    return time.thread_time() - start


def _run_once(name: str, stream: Stream, nxt: Stream, device: str
              ) -> dict[str, tuple[float, int]]:
    """One run of every path for one planner: path -> (CPU seconds, explorations)."""
    plan, planner_cls, registry_cls, new_memo = _planners()[name]
    profile = profile_named(device)
    found = {"plan": (_timed(lambda: plan(stream, device)), 0)}
    planner = planner_cls(registry_cls().fusers(profile))
    found["search"] = (_timed(lambda: planner.run(stream)), planner.num_explorations)
    memo = new_memo()
    # the runtime's launch planning of iteration 1, which fills fastplan's memo
    found["launch"] = (_timed(lambda: planner.launch_planned(stream, 0, profile, memo)), 0)
    before, start = planner.num_explorations, len(planner.queue.steps)
    cache = _timed(lambda: planner.run(nxt))
    explored = planner.num_explorations - before
    launched = _timed(lambda: planner.launch_planned(nxt, start, profile, memo))
    found["cache"], found["cache+launch"] = (cache, explored), (cache + launched, explored)
    return found


def measure(stream: Stream, device: str, repeats: int, with_refimpl: bool = True,
            ran: Callable[[], None] = lambda: None) -> dict[str, dict[str, tuple[float, int]]]:
    """Per planner, per path: (median CPU seconds, explorations). The planners take turns,
    one run of every path each per repeat, so that a slower spell of a shared machine falls
    on both sides of a ratio rather than on one planner's runs. ``ran()`` is called after
    each planner's run."""
    nxt = shifted(stream, 10 * (max(stream.inputs, default=0) + len(stream.items) + 1))
    names = ("refimpl", "fastplan") if with_refimpl else ("fastplan",)
    runs: dict[str, list[dict[str, tuple[float, int]]]] = {name: [] for name in names}
    for _ in range(repeats):
        for name in names:
            runs[name].append(_run_once(name, stream, nxt, device))
            ran()
    return {name: {path: (statistics.median(run[path][0] for run in runs[name]),
                          runs[name][-1][path][1])
                   for path in PATHS}
            for name in names}


def _check_equal(stream: Stream, device: str) -> None:
    planners = _planners()
    expected = planners["refimpl"][0](stream, device)
    if planners["fastplan"][0](stream, device) != expected:
        raise AssertionError("fastplan and refimpl disagree on a benchmark stream")


def runs_for(num_items: int, repeats: int) -> int:
    """Runs per measurement for a stream of ``num_items``: ``repeats``, at most 3 from 100k
    items on, and up to five times as many for a stream under 10k items (a 1k-item pass of
    fastplan lasts about a millisecond: a median of three such runs moves with every timer
    tick or neighbour on a shared machine)."""
    if num_items >= 100_000:
        return max(1, min(repeats, 3))
    return repeats * max(1, min(5, 10_000 // max(num_items, 1)))


class Progress:
    """Where ``run`` reports its progress: one line per stream built and per measurement
    (``progress_on`` picks a ``rich`` display on a terminal)."""

    def __init__(self, write: Callable[[str], None] = lambda line: None):
        self.write = write

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def begin(self, streams: int) -> None:
        """``run`` will measure ``streams`` streams (workloads times sizes)."""

    def stream(self, workload: str, size: int, ops: int, runs: int, with_refimpl: bool) -> None:
        """A stream was built: ``ops`` items for the ``size`` asked; ``runs`` runs follow."""
        planners = "refimpl and fastplan" if with_refimpl else "fastplan only"
        self.write(f"{workload}: size {size} → {ops} ops; {runs} runs of {planners}")

    def ran(self) -> None:
        """One planner's run of every path is done."""

    def measured(self, line: str) -> None:
        """The stream's results, in one line."""
        self.write(line)


class _RichProgress(Progress):
    """``Progress`` as a ``rich`` display on ``console``: the streams done, and the runs of
    the stream being measured; the result lines print above it. It is refreshed by hand,
    between runs: no display thread runs beside the timed planner."""

    def __init__(self, console: Console) -> None:
        super().__init__(console.print)
        self.display = Display(TextColumn("{task.description}"), BarColumn(),
                               MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                               auto_refresh=False)
        self.streams = self.runs = None

    def __enter__(self) -> Progress:
        self.display.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.display.stop()

    def begin(self, streams: int) -> None:
        self.streams = self.display.add_task("streams", total=streams)
        self.display.refresh()

    def stream(self, workload: str, size: int, ops: int, runs: int, with_refimpl: bool) -> None:
        if self.runs is not None:
            self.display.remove_task(self.runs)
        planners = "refimpl and fastplan" if with_refimpl else "fastplan"
        self.runs = self.display.add_task(f"{workload} {size} → {ops} ops, runs of {planners}",
                                          total=runs * (2 if with_refimpl else 1))
        self.display.refresh()

    def ran(self) -> None:
        self.display.advance(self.runs)
        self.display.refresh()

    def measured(self, line: str) -> None:
        self.display.console.print(line, highlight=False)
        self.display.advance(self.streams)
        self.display.refresh()


def progress_on(stream: TextIO) -> Progress:
    """The progress display for ``stream``: ``rich``'s on a terminal, plain lines otherwise."""
    if stream.isatty():
        return _RichProgress(Console(file=stream))
    return Progress(lambda line: print(line, file=stream, flush=True))


def run(workloads: Sequence[str], sizes: Sequence[int], device: str, repeats: int,
        ref_budget: float = float("inf"), progress: Progress | None = None) -> list[Row]:
    """Measure every workload at every size. refimpl is skipped at a size where its last
    measured per-op time predicts more than ``ref_budget`` seconds for one run of every path;
    the plans of both are checked equal first (when refimpl runs)."""
    progress = progress if progress is not None else Progress()
    progress.begin(len(workloads) * len(sizes))
    rows = []
    for workload in workloads:
        ref_per_op = 0.0
        for size in sizes:
            stream = build(workload, size)
            n = len(stream.items)
            with_refimpl = ref_per_op * n <= ref_budget
            reps = runs_for(n, repeats)
            progress.stream(workload, size, n, reps, with_refimpl)
            if with_refimpl:
                _check_equal(stream, device)
            found = measure(stream, device, reps, with_refimpl, progress.ran)
            if with_refimpl:
                ref_per_op = sum(found["refimpl"][p][0] for p in PATHS) / n
            for path in PATHS:
                fast = found["fastplan"][path]
                ref = found["refimpl"][path][0] / n * 1e6 if with_refimpl else None
                rows.append(Row(workload, n, path, ref, fast[0] / n * 1e6, fast[1], size))
            progress.measured("  ".join(f"{workload} {n} {r.path}: {r.refimpl_us or 0:.1f}/"
                                        f"{r.fastplan_us:.2f}" for r in rows[-len(PATHS):]))
    return rows


def table(rows: Sequence[Row]) -> str:
    """The results as a Markdown table."""
    lines = ["| workload | ops | path | refimpl µs/op | fastplan µs/op | ratio | searches |",
             "|---|---:|---|---:|---:|---:|---:|"]
    for row in rows:
        ref = "—" if row.refimpl_us is None else f"{row.refimpl_us:.1f}"
        ratio = "—" if row.ratio is None else f"{row.ratio:.0f}×"
        searches = "" if row.path in ("plan", "launch") else str(row.explorations)
        lines.append(f"| {row.workload} | {row.ops} | {PATHS[row.path]} | {ref} | "
                     f"{row.fastplan_us:.2f} | {ratio} | {searches} |")
    return "\n".join(lines)


def sizes_header(rows: Sequence[Row]) -> list[str]:
    """One line per workload: each size asked and the stream length it gave."""
    found: dict[str, dict[int | None, int]] = {}
    for row in rows:
        found.setdefault(row.workload, {})[row.size] = row.ops
    return [f"{workload}: " + ", ".join(f"size {size} → {ops} ops" for size, ops in sizes.items())
            + f" (whole iterations, {ITERATIONS[workload]}, until the stream has the size)"
            for workload, sizes in found.items()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``fuselab bench planner`` (and of ``bench/planner.py``)."""
    parser.add_argument("--workload", action="append", choices=list(WORKLOADS),
                        help="workload to run (repeatable; default: all)")
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES),
                        help="comma-separated stream lengths (default 1000,10000,100000)")
    parser.add_argument("--device", default="metal", help="device profile (default metal)")
    parser.add_argument("--repeats", type=int, default=5,
                        help="runs per measurement, median reported (100k ops: at most 3; "
                             "under 10k ops: up to five times as many)")
    parser.add_argument("--ref-budget", type=float, default=float("inf"),
                        help="skip refimpl at a size predicted to take longer (seconds, for "
                             "one run of every path); default: never skip")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--front-door", action="store_true",
                        help="also time load + validate, record, plan and to JSON, refimpl's "
                             "and fastplan's (fuselab.front_door), and the 20 000-op chains")
    parser.add_argument("--front-door-only", action="store_true",
                        help="only the front-door table")
    parser.add_argument("--chains", type=int, default=20_000,
                        help="ops of the front door's chains stream (default 20000)")


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def interpreter_build() -> str:
    """Where this interpreter's C API lives: a shared ``libpython`` (its path) or the
    executable itself, as the dynamic loader reports for ``Py_IncRef`` (``dladdr``).

    Printed beside every benchmark because the build moves the ratios: refimpl's interpreted
    loop runs faster when ``libpython`` is linked into the executable, fastplan's calls into
    the C API do not (docs/benchmarks.md). "unknown" where the loader cannot say (no
    ``dladdr``)."""
    try:
        libc = ctypes.CDLL(None)
        info = _DlInfo()
        address = ctypes.cast(ctypes.pythonapi.Py_IncRef, ctypes.c_void_p)
        if not libc.dladdr(address, ctypes.byref(info)) or not info.dli_fname:
            return "unknown"
    except (AttributeError, OSError):
        return "unknown"
    where = info.dli_fname.decode(errors="replace")
    if "libpython" in where.rsplit("/", 1)[-1]:
        return f"shared libpython ({where})"
    return "libpython linked into the executable"


def main(args: argparse.Namespace) -> int:
    """Run the benchmark and print the table (or JSON)."""
    sizes = [int(s) for s in args.sizes.split(",") if s]
    workloads = args.workload or list(WORKLOADS)
    front = getattr(args, "front_door", False) or getattr(args, "front_door_only", False)
    rows, front_rows = [], []
    with progress_on(sys.stderr) as progress:
        if not getattr(args, "front_door_only", False):
            rows = run(workloads, sizes, args.device, args.repeats, args.ref_budget, progress)
    if front:
        from fuselab.front_door import front_table, measure_front_door

        streams = [(w, size) for w in workloads for size in sizes] + [("chains", args.chains)]
        front_rows = measure_front_door(streams, args.device, args.repeats,
                                        lambda line: print(line, file=sys.stderr, flush=True))
    if args.json:
        print(json.dumps([dataclasses.asdict(r) | {"ratio": r.ratio} for r in rows]
                         + [dataclasses.asdict(r) | {"ratio": r.ratio} for r in front_rows],
                         indent=1))
        return 0
    build = "compiled" if fastplan.COMPILED else "NOT compiled (refimpl's planner)"
    print(f"python {platform.python_version()} ({interpreter_build()}), {platform.machine()}, "
          f"device {args.device}, "
          f"fastplan {build}; µs of planning-thread CPU time per op (stream item), median of "
          f"{args.repeats} runs (100k ops: at most 3; under 10k ops: up to 5x as many)")
    if rows:
        for line in sizes_header(rows):
            print(line)
        print(table(rows))
    if front_rows:
        print("\nfront door: µs of CPU time per op (stream item), median of "
              f"{args.repeats} runs; total = load + validate, plan, to JSON")
        print(front_table(front_rows))
    return 0
