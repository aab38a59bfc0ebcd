"""Time the trace engine: refimpl's five fusers against fastplan's twins on one op stream.

    .venv/bin/python bench/engine.py [--ops 10000] [--runs 5] [--ref-runs 3] [--json]

The stream is recorded with the lazy frontend (``refimpl.frontend``): transformer-block-like
layers (layer norm, matmuls with epilogues, softmax, a tanh MLP, residual adds), a few
independent expressions, the drops the frontend records, a sync per layer, until it holds at
least ``--ops`` ops. It is made relative segment by segment (a sync starts a segment), as the
planner's queue does.

The fusers are driven the way the search drives one block (notes §9, without block merging or
the plan cache): every op goes to every fuser still open; once all are closed (or the stream
ends), the ready fuser with the best score above 0 is finished (ties: the earlier fuser), the
ops it covers are done, and the fusers are reset and fed the rest again; if none is ready, one
op runs unfused. "all five" is the five built-in fusers together (what the search runs); each
fuser alone is driven the same way. Times are the median of the runs (CPU time of the process),
in microseconds per op of the stream; "ratio" is refimpl / fastplan. The search, the plan
cache and launch planning are not included (bench/planner.py covers the planner).
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fastplan
from refimpl.frontend import Session
from refimpl.ir import OperationIr, Sync
from refimpl.planner.engine.fuser import FuserStatus
from refimpl.planner.stream.relative import OperationConverter, to_relative

FUSERS = (("fusers.elemwise", "ElementWiseFuser"), ("fusers.matmul", "MatmulFuser"),
          ("fusers.reduce", "ReduceFuser"), ("fusers.reduce_broadcasted", "ReduceBroadcastedFuser"),
          ("fusers.nhwc", "NHWCRelayoutFuser"))
MAX_BINDINGS = 28  # the "metal" profile


def _layer_norm(x):
    mean = x.mean_dim(1)
    centered = x - mean
    var = (centered * centered).mean_dim(1)
    return centered / (var + 1e-5).sqrt()


def _softmax(x):
    e = (x - x.max_dim(1)).exp()
    return e / e.sum_dim(1)


def _layer(x, wq, wo, w1, w2):
    """One transformer-like layer on ``x`` ([tokens, width])."""
    h = _layer_norm(x)
    scores = _softmax(h.matmul(wq) * 0.125)
    x = x + scores.matmul(wo)
    h = _layer_norm(x)
    up = h.matmul(w1)
    act = (up * 0.5) * ((up * 0.7978 + (up * up * up) * 0.0356).tanh() + 1.0)
    side = (x.abs() + 1.0).log().sum_dim(1)  # an independent expression
    return x + act.matmul(w2) + side


def record_stream(min_ops: int) -> list:
    """The stream's items (ops and syncs), recorded with the frontend."""
    session = Session(executor=None)
    tokens, width = 16, 32
    x = session.random((tokens, width), seed=0)
    weights = [session.random(shape, seed=k + 1) for k, shape in enumerate(
        ((width, width), (width, width), (width, 4 * width), (4 * width, width)))]
    while len(session.stream.ops) < min_ops:
        x = _layer(x, *weights)
        session.sync(x)
    return list(session.stream.items)


def relative_ops(items) -> list[OperationIr]:
    """The ops in relative form, one segment per sync (as the planner's queue converts)."""
    converter, ops = OperationConverter(), []
    for item in items:
        if isinstance(item, Sync):
            converter.clear()
        else:
            ops.append(to_relative(item, converter))
    return ops


def drive(fusers, ops) -> int:
    """Run ``ops`` through ``fusers`` block by block; the number of optimizations finished."""
    start, finished = 0, 0
    while start < len(ops):
        for fuser in fusers:
            fuser.reset()
        position, open_fusers = start, list(fusers)
        while position < len(ops) and open_fusers:
            for fuser in open_fusers:
                fuser.fuse(ops[position])
            open_fusers = [f for f in open_fusers if f.status() is not FuserStatus.Closed]
            position += 1
        best, best_score = None, 0
        for fuser in fusers:
            properties = fuser.properties()
            if properties.ready and properties.score > best_score:
                best, best_score = fuser, properties.score
        if best is None:
            start += 1  # runs unfused
        else:
            best.finish()
            finished += 1
            start += max(best.len(), 1)
    return finished


def time_runs(package: str, names, ops, runs: int) -> tuple[float, int]:
    """Median microseconds per op over ``runs`` runs, and the optimizations finished."""
    classes = [getattr(importlib.import_module(f"{package}.{module}"), name)
               for module, name in names]
    samples, finished = [], 0
    for _ in range(runs):
        fusers = [cls(MAX_BINDINGS) for cls in classes]
        # new op objects each run, as a planner sees them (nothing encoded by an earlier run)
        fresh = [OperationIr(op.op, op.desc) for op in ops]
        start = time.process_time()
        finished = drive(fusers, fresh)
        samples.append((time.process_time() - start) / len(ops) * 1e6)
    return statistics.median(samples), finished


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=10_000, help="stream length (ops)")
    parser.add_argument("--runs", type=int, default=5, help="fastplan runs (median)")
    parser.add_argument("--ref-runs", type=int, default=3, help="refimpl runs (median)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if not fastplan.COMPILED:
        print("fastplan is not compiled: run `make build` first", file=sys.stderr)
        return 1
    ops = relative_ops(record_stream(args.ops))
    rows = []
    configs = [((module, name),) for module, name in FUSERS] + [FUSERS]
    for names in configs:
        label = names[0][1] if len(names) == 1 else "all five"
        ref_us, ref_done = time_runs("refimpl.planner", names, ops, args.ref_runs)
        fast_us, fast_done = time_runs("fastplan", names, ops, args.runs)
        if ref_done != fast_done:
            print(f"{label}: refimpl finished {ref_done} optimizations, fastplan {fast_done}",
                  file=sys.stderr)
            return 1
        rows.append({"fusers": label, "ops": len(ops), "finished": fast_done,
                     "refimpl_us_per_op": round(ref_us, 3),
                     "fastplan_us_per_op": round(fast_us, 3),
                     "ratio": round(ref_us / fast_us, 1)})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{len(ops)} ops, median of {args.ref_runs} (refimpl) / {args.runs} (fastplan) runs, "
          f"max_bindings={MAX_BINDINGS}")
    print(f"{'fusers':<24}{'finished':>9}{'refimpl µs/op':>15}{'fastplan µs/op':>16}{'ratio':>8}")
    for row in rows:
        print(f"{row['fusers']:<24}{row['finished']:>9}{row['refimpl_us_per_op']:>15.2f}"
              f"{row['fastplan_us_per_op']:>16.3f}{row['ratio']:>8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
