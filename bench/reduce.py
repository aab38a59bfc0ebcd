"""Fused reduce and ReduceBroadcasted on the adapter found, against their fallback, torch eager
and torch.compile, with autotune's choice and cost.

    python bench/reduce.py [--quick] [--out DIR] [--reps 20] [--iterations 10] [--no-torch]

Workloads (recorded with the lazy frontend; shapes from burn-bench):

* ``sum a=k``: ``tanh((x + 5).sum_dim(k)) * 3`` and ``argmin a=k``:
  ``argmin(tanh(log(x + 5)) * 3, k)`` on [32, 512, 4096] f32, k = 0, 1, 2; the planner
  leaves a reduction that ends the stream unfused (an element-wise step, then the standalone
  reduction), so ``argmin+1 a=k`` adds one write op (``+ 1``) to run the fused kernel;
* ``softmax``: burn's form (max_dim, sub, exp, sum_dim, div over the last axis) of
  ``x * 0.125`` (attention's scaled scores: a reduction as a block's first op closes burn's
  fuser, so an unscaled input never reaches ReduceBroadcasted) on [4, 4096, 4096] and
  [2, 6144, 6144]; ``layer norm`` of ``x + r`` (a residual, the same reason) on
  [4, 4096, 4096].

Rows: ``fuselab <routine>`` for each fused routine (``unit``, ``cube``, ``plane`` where the
device has subgroups; ReduceBroadcasted has no plane form, so its plane row is its fallback
with plane reductions) and ``fuselab fallback`` (the routine forced with ``FUSELAB_REDUCE_ROUTINE``), each run once through
``GpuExecutor`` with its dispatches recorded and replayed ``--iterations`` times in one
compute pass, timed by pass timestamps (``bench.gpu_timing``); ``fuselab autotune``: the
candidate autotune picked in a fresh cache (its tuning time per key, and its time over the
best row's: winner-vs-best); torch eager / torch.compile / torch copy (``bench.torch_rows``,
CUDA events; skipped with a note without torch and CUDA); a hand-written WGSL vec4 copy.
GB/s = bytes / median, bytes = the input read once (reductions: the target's roofline
convention) or the inputs read once + the output written once (softmax, layer norm); the copy
roofline is a copy's own read + write. Median of ``--reps`` reps (≥ 20). Results go to
``DIR/reduce.json``, one PNG per table (``DIR/reduce_reductions.png``,
``DIR/reduce_broadcasted.png``, matplotlib: ``pip install fuselab[bench]``), and a short
table is printed. ``--quick`` uses small shapes (lavapipe, tests).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from refimpl.data import logical_values  # noqa: E402
from refimpl.frontend import Session  # noqa: E402
from refimpl.interpreter import executed_steps  # noqa: E402
from elementwise import hand_source  # noqa: E402
from torch_rows import max_errors, torch_available, torch_side, torch_warmup  # noqa: E402

FULL_REDUCE, QUICK_REDUCE = (32, 512, 4096), (4, 64, 256)
ROUTINES = ("unit", "cube", "plane", "fallback")  # plane: where the device has subgroups
BROADCASTED = (  # (kind, full shape, quick shape)
    ("softmax", (4, 4096, 4096), (2, 64, 256)),
    ("softmax", (2, 6144, 6144), (2, 96, 96)),
    ("layer_norm", (4, 4096, 4096), (2, 64, 256)),
)


# --- the expressions --------------------------------------------------------------------------


def reduce_stream(kind: str, axis: int, shape: tuple) -> Any:
    s = Session(executor=None)
    x = s.random(shape, seed=0)
    if kind == "sum":
        s.sync((x + 5).sum_dim(axis).tanh() * 3)
    elif kind == "argmin":
        s.sync(((x + 5).log().tanh() * 3).argmin(axis))
    else:  # "argmin+1": a write op after it, so the planner fuses the reduction
        s.sync(((x + 5).log().tanh() * 3).argmin(axis) + 1)
    return s.close()


def broadcasted_stream(kind: str, shape: tuple) -> Any:
    s = Session(executor=None)
    x = s.random(shape, seed=0)
    last = len(shape) - 1
    if kind == "softmax":
        z = x * 0.125
        e = (z - z.max_dim(last)).exp()
        s.sync(e / e.sum_dim(last))
    else:
        z = x + s.random(shape, seed=1)
        d = z - z.mean_dim(last)
        s.sync(d / ((d * d).mean_dim(last) + 1e-5).sqrt())
    return s.close()


def numpy_ref(kind: str, axis: int, xs: list[np.ndarray]) -> np.ndarray:
    x = xs[0].astype(np.float64)
    if kind == "sum":
        return (np.tanh((x + 5).sum(axis, keepdims=True)) * 3).astype(np.float32)
    if kind.startswith("argmin"):
        found = np.argmin(np.tanh(np.log(x + 5)) * 3, axis=axis, keepdims=True)
        return (found + (1 if kind == "argmin+1" else 0)).astype(np.int32)
    if kind == "softmax":
        z = x * 0.125
        e = np.exp(z - z.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)).astype(np.float32)
    z = x + xs[1]
    d = z - z.mean(-1, keepdims=True)
    return (d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5)).astype(np.float32)


def torch_fn(kind: str, axis: int) -> Callable:
    import torch

    if kind == "sum":
        return lambda x: torch.tanh((x + 5).sum(axis, keepdim=True)) * 3
    if kind.startswith("argmin"):
        extra = 1 if kind == "argmin+1" else 0
        return lambda x: torch.argmin(torch.tanh(torch.log(x + 5)) * 3, dim=axis,
                                      keepdim=True) + extra
    if kind == "softmax":
        def softmax(x):
            z = x * 0.125
            e = (z - z.amax(-1, keepdim=True)).exp()
            return e / e.sum(-1, keepdim=True)
        return softmax

    def layer_norm(x, r):
        z = x + r
        d = z - z.mean(-1, keepdim=True)
        return d / ((d * d).mean(-1, keepdim=True) + 1e-5).sqrt()
    return layer_norm


# --- fuselab ----------------------------------------------------------------------------------


def _recorded(stream: Any, device: Any, uploaded: dict, routine: str | None) -> tuple:
    """One ``GpuExecutor`` run with ``FUSELAB_REDUCE_ROUTINE=routine`` (``None``: autotune):
    its dispatches, paths, result and routines."""
    from bench.gpu_timing import recording
    from gpu.runtime.executor import GpuExecutor

    old = os.environ.pop("FUSELAB_REDUCE_ROUTINE", None)
    if routine is not None:
        os.environ["FUSELAB_REDUCE_ROUTINE"] = routine
    try:
        profile, executed = executed_steps(stream, device.profile())
        with recording(device.runtime) as seen:
            executor = GpuExecutor(stream, device, profile, uploaded=uploaded)
            got = executor.run(executed)
    finally:
        os.environ.pop("FUSELAB_REDUCE_ROUTINE", None)
        if old is not None:
            os.environ["FUSELAB_REDUCE_ROUTINE"] = old
    paths = [r.path for r in executor.records]
    routines = [getattr(k, "spec", None) and k.spec.routine for r in executor.records
                for k in r.kernels if hasattr(k, "spec")]
    return list(seen), paths, got[max(got)], routines


def fuselab_side(stream: Any, want: np.ndarray, device: Any, args: argparse.Namespace
                 ) -> dict[str, Any]:
    from bench.gpu_timing import time_dispatches
    from gpu.runtime import autotune

    rt = device.runtime
    values = {tid: logical_values(spec, tid) for tid, spec in sorted(stream.inputs.items())}

    def fresh() -> dict:  # a run may write in place into a consumed input: upload anew
        return {tid: rt.upload_buffer(v.reshape(-1), stream.inputs[tid].dtype)
                for tid, v in values.items()}
    uploaded = fresh()
    timing = dict(iterations=args.iterations, reps=args.reps)
    out: dict[str, Any] = {"rows": {}, "paths": {}, "errors_vs_numpy": {}}
    for routine in ROUTINES:
        if routine == "plane" and "subgroup" not in device.features:
            continue
        seen, paths, got, _ = _recorded(stream, device, fresh(), routine)
        out["paths"][routine] = paths
        out["errors_vs_numpy"][routine] = max_errors(got, want)
        out["rows"][f"fuselab {routine}"] = dict(
            time_dispatches(device, seen, **timing).to_dict(), dispatches=len(seen))
    tuner = autotune.Tuner()  # a fresh cache: this run tunes
    saved = autotune.TUNER, os.environ.get("FUSELAB_CACHE_DIR")
    import gpu.runtime.autotune_reduce as reduce_tuning

    with tempfile.TemporaryDirectory(prefix="fuselab-autotune-") as cache:
        os.environ["FUSELAB_CACHE_DIR"] = cache
        autotune.TUNER = reduce_tuning.TUNER = tuner
        try:
            seen, paths, _, _ = _recorded(stream, device, fresh(), None)
        finally:
            autotune.TUNER = reduce_tuning.TUNER = saved[0]
            if saved[1] is None:
                os.environ.pop("FUSELAB_CACHE_DIR", None)
            else:
                os.environ["FUSELAB_CACHE_DIR"] = saved[1]
    decisions = [{"fuser": fuser, "key": json.loads(key), "winner": winner}
                 for (_, fuser, key), winner in tuner.memory.items()]
    outer = [d for d in decisions if d["fuser"] == "ReduceBroadcasted"] or decisions
    out["autotune"] = {"winner": outer[0]["winner"] if outer else "no fused step",
                       "decisions": decisions, "tuning_s_per_key": dict(tuner.tuning_seconds),
                       "keys_tuned": tuner.tuning_runs, "paths": paths}
    out["rows"]["fuselab autotune"] = dict(time_dispatches(device, seen, **timing).to_dict(),
                                           dispatches=len(seen))
    best = min(out["rows"][f"fuselab {r}"]["median_us"] for r in ROUTINES
               if f"fuselab {r}" in out["rows"])
    out["autotune"]["winner_over_best"] = out["rows"]["fuselab autotune"]["median_us"] / best
    numel = int(np.prod(stream.inputs[min(stream.inputs)].shape))
    copy_out = rt.empty((numel,), stream.inputs[min(stream.inputs)].dtype).buffer
    groups = -(-numel // 4 // 256)
    if groups <= device.properties.max_workgroups_per_dimension and numel % 4 == 0:
        copy = rt.prepare(hand_source("copy"), [uploaded[min(uploaded)], copy_out], groups,
                          workgroup_size=256)
        out["rows"]["WGSL vec4 copy"] = time_dispatches(device, [copy], **timing).to_dict()
    return out


# --- tables ---------------------------------------------------------------------------------


def table_rows(name: str, result: dict[str, Any], nbytes: int, copy_bytes: int
               ) -> list[dict[str, Any]]:
    rows = []
    tables = [result["fuselab"]["rows"], (result.get("torch") or {}).get("rows", {})]
    for table in tables:
        for label, row in table.items():
            if "CUDA graph" in label:
                continue
            moved = copy_bytes if "copy" in label else nbytes
            rows.append({"workload": name, "row": label, "median_us": row["median_us"],
                         "GB_s": moved / row["median_us"] / 1e3})
    roofline = max((r["GB_s"] for r in rows if "copy" in r["row"]), default=None)
    for row in rows:
        row["of_copy_roofline"] = None if roofline is None else row["GB_s"] / roofline
    return rows


def targets(name: str, result: dict[str, Any], rows: list[dict]) -> dict[str, Any]:
    by = {r["row"]: r for r in rows}
    fused = min((by[f"fuselab {r}"] for r in ROUTINES[:-1] if f"fuselab {r}" in by),
                key=lambda r: r["median_us"])
    entry = {"best_fused_us": fused["median_us"],
             "fused_of_copy_roofline": fused["of_copy_roofline"],
             "fallback_over_fused": by["fuselab fallback"]["median_us"] / fused["median_us"],
             "autotune_winner": result["fuselab"]["autotune"]["winner"],
             "autotune_winner_over_best": result["fuselab"]["autotune"]["winner_over_best"],
             "fused_dispatches": result["fuselab"]["rows"]["fuselab unit"]["dispatches"]}
    if "torch.compile" in by:
        entry["fused_over_compile"] = fused["median_us"] / by["torch.compile"]["median_us"]
    return entry


def plot(rows: list[dict], title: str, path: Path) -> str | None:
    """A bar per row (GB/s), grouped by workload, the copy roofline dashed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install fuselab[bench])"
    names = list(dict.fromkeys(r["workload"] for r in rows))
    labels = list(dict.fromkeys(r["row"] for r in rows if "copy" not in r["row"]))
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(names)), 4.5))
    width = 0.8 / max(len(labels), 1)
    for k, label in enumerate(labels):
        xs, ys = [], []
        for i, name in enumerate(names):
            found = [r for r in rows if r["workload"] == name and r["row"] == label]
            if found:
                xs.append(i + k * width)
                ys.append(found[0]["GB_s"])
        ax.bar(xs, ys, width, label=label)
    for i, name in enumerate(names):
        copies = [r["GB_s"] for r in rows if r["workload"] == name and "copy" in r["row"]]
        if copies:
            ax.hlines(max(copies), i - 0.1, i + 0.9, colors="k", linestyles="dashed")
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], names, rotation=20,
                  ha="right")
    ax.set_ylabel("GB/s (dashed: copy roofline)")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def print_table(results: dict[str, Any]) -> None:
    print(f"\nadapter: {results['adapter']}  ({results['date']})")
    if results.get("torch_note"):
        print(f"torch: {results['torch_note']}")
    print(f"{'workload':24} {'row':22} {'median µs':>11} {'GB/s':>8} {'of copy':>8}")
    for row in results["table"]:
        share = "" if row["of_copy_roofline"] is None else f"{row['of_copy_roofline']:.2f}"
        print(f"{row['workload']:24} {row['row']:22} {row['median_us']:11.1f} "
              f"{row['GB_s']:8.1f} {share:>8}")
    for name, t in results["targets"].items():
        parts = [f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in t.items()]
        print(f"targets {name}: " + ", ".join(parts))


# --- main -------------------------------------------------------------------------------------


def _workloads(quick: bool) -> list[tuple[str, str, int, Any, tuple]]:
    shape = QUICK_REDUCE if quick else FULL_REDUCE
    found = [(f"{kind} a={axis}", kind, axis, reduce_stream(kind, axis, shape), shape)
             for kind in ("sum", "argmin", "argmin+1") for axis in range(3)]
    for kind, full, small in BROADCASTED:
        size = small if quick else full
        found.append((f"{kind} {'x'.join(map(str, size))}", kind, len(size) - 1,
                      broadcasted_stream(kind, size), size))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small shapes (lavapipe)")
    parser.add_argument("--out", default="bench-out", help="folder for reduce.json and PNGs")
    parser.add_argument("--reps", type=int, default=20, help="timed reps (median; >= 20)")
    parser.add_argument("--iterations", type=int, default=None,
                        help="iterations per timed rep (default 10, --quick 2)")
    parser.add_argument("--no-torch", action="store_true", help="skip the torch rows")
    args = parser.parse_args(argv)
    if args.iterations is None:
        args.iterations = 2 if args.quick else 10
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-"))
    from gpu.runtime.device import default_device

    device = default_device()
    note = "skipped (--no-torch)" if args.no_torch else torch_available()
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "quick": args.quick,
        "command": " ".join(["python", "bench/reduce.py", *(argv or sys.argv[1:])]),
        "adapter": device.summary(), "device": device.info(), "torch_note": note,
        "bytes_note": "reductions: the input read once; softmax / layer norm: inputs read "
                      "once + output written once; copies: their read + write",
        "workloads": {}, "table": [], "targets": {}}
    if note is None:
        results["torch_warmup"] = torch_warmup()
    tables: dict[str, list] = {"reductions": [], "broadcasted": []}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, kind, axis, stream, shape in _workloads(args.quick):
        xs = [logical_values(spec, tid) for tid, spec in sorted(stream.inputs.items())]
        want = numpy_ref(kind, axis, xs)
        result = {"shape": list(shape), "fuselab": fuselab_side(stream, want, device, args)}
        if note is None:
            result["torch"] = torch_side(torch_fn(kind, axis), xs, want, args.iterations,
                                         args.reps)
        numel = int(np.prod(shape))
        reduction = kind not in ("softmax", "layer_norm")
        nbytes = 4 * numel * (1 if reduction else len(xs) + 1)
        rows = table_rows(name, result, nbytes, 8 * numel)
        results["workloads"][name] = result
        results["table"] += rows
        results["targets"][name] = targets(name, result, rows)
        tables["reductions" if reduction else "broadcasted"] += rows
        # after each workload, so that a run cut short still leaves what it measured
        (out / "reduce.json").write_text(json.dumps(results, indent=1, default=str))
        print(f"measured {name}", flush=True)
    results["plots"] = {}
    for table, rows in tables.items():
        path = out / f"reduce_{table}.png"
        problem = plot(rows, f"fuselab {table} on {device.name}", path)
        results["plots"][table] = problem or str(path)
    (out / "reduce.json").write_text(json.dumps(results, indent=1, default=str))
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
