"""The front door's benchmark: a stream's whole way in and out, refimpl's path and fastplan's.

burn counterpart: none (burn's streams are built in memory; this times what fuselab puts in
front of the planner: reading a JSON stream, recording one with the lazy frontend, writing the
plan).

Per stream (``fuselab.workloads``' at each size, and ``chains``: eight element-wise chains of
scalar ops on [64, 64], a sync every 500 ops), µs of CPU time per op (per stream item, syncs
and drops included), median of the runs:

* ``load + validate`` — ``stream_from_json`` on the stream's canonical bytes, validating
  (refimpl: ``refimpl.stream``; fastplan: ``fastplan.ingest.stream``);
* ``record`` — the lazy frontend recording the stream (record only), the workload's own
  Python included (refimpl: ``refimpl.frontend.Session``; fastplan: ``fastplan.frontend``'s,
  refimpl's with its recording path compiled);
* ``plan`` — ``plan(stream, device)`` (refimpl's, fastplan's);
* ``to JSON`` — ``plan_to_json`` of the plan (one writer, both sides);
* ``total`` — load + validate, plan and to JSON: what ``fuselab plan`` does once it has
  started (``record`` is the other way in, and is left out);
* ``incremental`` — a runtime's second iteration through ``IncrementalPlanner.add`` (the
  stream's next iteration, every tensor id moved, after a first one filled the plan cache):
  the per-op cost of the incremental API in its steady state (not in ``total``).

``fuselab bench planner --front-door`` prints this table after the planner's.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import fastplan
import fastplan.frontend
import refimpl.planner as ref_planner
import refimpl.stream as ref_stream
from fuselab.workloads import WORKLOADS, shifted
from refimpl.frontend import Session
from refimpl.planner import plan_to_json
from refimpl.planner.stream.incremental import IncrementalPlanner as RefIncremental
from refimpl.stream import Stream, stream_to_json

__all__ = ["STAGES", "FrontRow", "chains", "measure_front_door", "front_table"]

STAGES = ("load + validate", "record", "plan", "to JSON", "total", "incremental")


@dataclass(frozen=True)
class FrontRow:
    """One stage of one stream: µs of CPU time per op, refimpl's and fastplan's."""

    stream: str
    ops: int
    stage: str
    refimpl_us: float
    fastplan_us: float

    @property
    def ratio(self) -> float:
        return self.refimpl_us / self.fastplan_us if self.fastplan_us else float("inf")


def chains(session: Session, budget: int, rng: random.Random, *, count: int = 8,
           sync_every: int = 500) -> None:
    """``count`` chains of ``x + 1.0`` on [64, 64], all read back every ``sync_every`` ops,
    until ``budget`` ops are recorded (drops not counted)."""
    xs = [session.random((64, 64), seed=i) for i in range(count)]
    ops = 0
    while ops < budget:
        for i in range(count):
            xs[i] = xs[i] + 1.0
            ops += 1
            if ops % sync_every == 0:
                session.sync(*xs)


_RECORDERS = dict(WORKLOADS, chains=chains)


def _recorded(name: str, size: int, session_cls: type = Session) -> tuple[Stream, float]:
    """The stream ``name`` records at ``size`` on a ``session_cls``, and the CPU seconds
    recording took."""
    session = session_cls(executor=None)
    start = time.thread_time()
    _RECORDERS[name](session, size, random.Random(0))
    took = time.thread_time() - start
    return session.close(), took


def _timed(call: Callable[[], object]) -> tuple[float, object]:
    gc.collect()
    start = time.thread_time()
    result = call()
    gc.collect(0)
    return time.thread_time() - start, result


def _stages(data: bytes, device: str, read: Callable, plan: Callable) -> dict[str, float]:
    load, stream = _timed(lambda: read(data))
    planned, result = _timed(lambda: plan(stream, device))
    written, _ = _timed(lambda: plan_to_json(result))
    return {"load + validate": load, "plan": planned, "to JSON": written,
            "total": load + planned + written}


def _incremental(planner_cls: type, stream: Stream, nxt: Stream, device: str) -> float:
    """CPU seconds of feeding ``nxt`` item by item to a planner that planned ``stream``."""
    planner = planner_cls(device)
    for item in stream.items:
        planner.add(item)
    planner.end_iteration()

    def feed() -> None:
        for item in nxt.items:
            planner.add(item)
        planner.end_iteration()

    return _timed(feed)[0]


def measure_front_door(streams: Sequence[tuple[str, int]], device: str, repeats: int,
                       progress: Callable[[str], None] = lambda line: None) -> list[FrontRow]:
    """Every stage for every ``(name, size)`` (a workload of ``fuselab.workloads`` or
    ``"chains"``); refimpl and fastplan take turns, one run each per repeat."""
    sides = {"refimpl": (ref_stream.stream_from_json, ref_planner.plan),
             "fastplan": (fastplan.stream_from_json, fastplan.plan)}
    incremental = {"refimpl": RefIncremental,
                   "fastplan": fastplan.planner_module("stream.incremental").IncrementalPlanner}
    sessions = {"refimpl": Session, "fastplan": fastplan.frontend.Session}
    rows = []
    for name, size in streams:
        stream, _ = _recorded(name, size)
        data = stream_to_json(stream).encode()
        n = len(stream.items)
        nxt = shifted(stream, 10 * (max(stream.inputs, default=0) + n + 1))
        if fastplan.plan(stream, device) != ref_planner.plan(stream, device):
            raise AssertionError(f"fastplan and refimpl disagree on {name} {size}")
        if _recorded(name, size, sessions["fastplan"])[0] != stream:
            raise AssertionError(f"fastplan's frontend records another {name} {size}")
        progress(f"front door: {name} {size} → {n} ops, {repeats} runs")
        runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
        for _ in range(repeats):
            for side, (read, plan) in sides.items():
                runs[side].append(_stages(data, device, read, plan))
                runs[side][-1]["incremental"] = _incremental(incremental[side], stream, nxt,
                                                             device)
                gc.collect()
                runs[side][-1]["record"] = _recorded(name, size, sessions[side])[1]
        for stage in STAGES:
            ref, fast = (statistics.median(run[stage] for run in runs[side]) for side in sides)
            rows.append(FrontRow(name, n, stage, ref / n * 1e6, fast / n * 1e6))
    return rows


def front_table(rows: Sequence[FrontRow]) -> str:
    """The front-door rows as a Markdown table."""
    lines = ["| stream | ops | stage | refimpl µs/op | fastplan µs/op | ratio |",
             "|---|---:|---|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row.stream} | {row.ops} | {row.stage} | {row.refimpl_us:.2f} | "
                     f"{row.fastplan_us:.2f} | {row.ratio:.0f}× |")
    return "\n".join(lines)
