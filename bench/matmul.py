"""The fused matmul on the adapter found, against its fallback, the matmul alone and torch.

    python bench/matmul.py [--quick] [--out DIR] [--reps 20] [--iterations N] [--no-torch]
                           [--json]

Workload: ``gelu(relu(a @ b) + bias)`` in f32, recorded with the lazy frontend as burn writes
it (relu = ``mask_fill(x <= 0, 0)``, gelu = ``x·(erf(x/√2) + 1)/2``), a and b [batch, n, n],
bias [1, 1, n], for (batch, n) ∈ {(2, 4096), (16, 2048), (32, 1024), (256, 256)}
(``--quick``: small shapes for lavapipe). TFLOP/s = 2·batch·n³ / median time. Rows:

* **fuselab fused, <form>**: the planned stream run by ``GpuExecutor`` with its fused matmul
  forced to each candidate of ``gpu.runtime.fused_matmul.CANDIDATES`` (one kernel); **fuselab
  fused** is the best of them (what an autotuner picks), **fused, default** the form a run
  without autotune launches;
* **fuselab fallback**: the walk's fallback (the standalone matmul kernel, then the tail as
  one element-wise kernel: ``fused_matmul`` off);
* **fuselab matmul alone**: ``(a @ b) * 1.0`` with the best form of the fused row, the
  epilogue a single multiply: the matmul's own cost, against which the epilogue's is read;
* **torch f32 matmul** (``torch.backends.cuda.matmul.allow_tf32 = False``: CUDA-core FP32,
  the bar WGSL can reach without tensor cores), **torch eager** and **torch.compile** of the
  whole expression (``bench/torch_rows.py``'s CUDA-event timing); skipped without torch/CUDA.

fuselab rows are device time: the run's dispatches recorded and replayed ``--iterations``
times in one compute pass, ``--reps`` timed reps (``bench/gpu_timing.py``); the slow forms
(``simple``, ``gemv``) and the fallback are replayed once per rep on shapes past 512. Targets
per shape, reported met or not: fused ≥ 50 % of torch's f32 matmul throughput, the epilogue
≤ 5 % over the matmul alone, fused faster than the fallback. Results go to
``DIR/matmul.json`` (``--json`` also prints it) and, with matplotlib, ``DIR/matmul.png``;
a table is printed last.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from refimpl.data import logical_values  # noqa: E402
from refimpl.frontend import Session  # noqa: E402
from refimpl.interpreter import executed_steps  # noqa: E402
from torch_rows import max_errors, torch_available  # noqa: E402

SHAPES = ((2, 4096), (16, 2048), (32, 1024), (256, 256))
QUICK_SHAPES = ((2, 64), (4, 48), (8, 32), (16, 16))
SQRT_2 = 1.4142135623730951
SLOW = ("simple", "gemv", "fallback")  # replayed once per rep past SLOW_FROM
SLOW_FROM = 512
CHECK_ROWS = 64  # rows of batch 0 checked against numpy


def expression(shape: tuple[int, int], epilogue: bool = True):
    """``gelu(relu(a @ b) + bias)`` (or ``(a @ b) * 1.0``) as a stream."""
    batch, n = shape
    s = Session(executor=None)
    a, b = s.random((batch, n, n), seed=1), s.random((batch, n, n), seed=2)
    if epilogue:
        bias = s.random((1, 1, n), seed=3)
        y = a @ b
        y = y.mask_fill(y <= 0.0, 0.0) + bias
        s.sync(((y / SQRT_2).erf() + 1.0) * y * 0.5)
    else:
        s.sync((a @ b) * 1.0)
    return s.close()


def numpy_ref(xs: list[np.ndarray], rows: int = CHECK_ROWS) -> np.ndarray:
    """The expression in float64 for the first ``rows`` rows of batch 0."""
    from math import erf

    a, b, bias = (x.astype(np.float64) for x in xs)
    y = np.maximum(a[0, :rows] @ b[0], 0.0) + bias[0]
    return (np.vectorize(erf)(y / SQRT_2) + 1.0) * y * 0.5


def torch_expression(a, b, bias):
    import torch

    y = torch.relu(a @ b) + bias
    return torch.nn.functional.gelu(y)


# --- fuselab ---------------------------------------------------------------------------------


def _recorded(stream, device, uploaded, form: str | None, fused: bool = True):
    """The dispatches one run submits and its synced outputs."""
    from bench.gpu_timing import recording
    from gpu.runtime.executor import GpuExecutor

    profile, executed = executed_steps(stream, device.profile())
    with recording(device.runtime) as seen:
        executor = GpuExecutor(stream, device, profile, uploaded=uploaded)
        executor.matmul_form = form
        if not fused:
            executor.fused_matmul = False
        got = executor.run(executed)
    kernels = [k.source.splitlines()[0] for r in executor.records for k in r.kernels]
    return list(seen), got, kernels


def fuselab_side(shape: tuple[int, int], args: argparse.Namespace, device: Any) -> dict:
    from bench.gpu_timing import time_dispatches
    from gpu.runtime.fused_matmul import CANDIDATES, DEFAULT_FORM

    rt = device.runtime
    stream = expression(shape)
    values = {tid: logical_values(spec, tid) for tid, spec in sorted(stream.inputs.items())}
    uploaded = {tid: rt.upload_buffer(v.reshape(-1), stream.inputs[tid].dtype)
                for tid, v in values.items()}
    want = numpy_ref(list(values.values()))
    slow = shape[1] > SLOW_FROM
    rows, out = {}, {"kernels": {}, "errors_vs_numpy": {}}

    def timed(label: str, dispatches: list, name: str) -> None:
        iterations = 1 if slow and name in SLOW else args.iterations
        reps = min(args.reps, 5) if slow and name in SLOW else args.reps
        rows[label] = time_dispatches(device, dispatches, iterations=iterations,
                                      reps=reps).to_dict()

    for form in CANDIDATES:  # a forced "fallback" is the walk's: the row below
        seen, got, kernels = _recorded(stream, device, uploaded, form)
        out["kernels"][form] = kernels
        out["errors_vs_numpy"][form] = max_errors(got[max(got)][0, :CHECK_ROWS], want)
        timed(f"fuselab fused, {form}", seen, form)
    seen, got, kernels = _recorded(stream, device, uploaded, None, fused=False)
    out["kernels"]["walk fallback"] = kernels
    out["errors_vs_numpy"]["fallback"] = max_errors(got[max(got)][0, :CHECK_ROWS], want)
    timed("fuselab fallback", seen, "fallback")
    best = min(CANDIDATES, key=lambda f: rows[f"fuselab fused, {f}"]["median_us"])
    rows["fuselab fused"] = dict(rows[f"fuselab fused, {best}"], form=best)
    rows["fuselab fused, default"] = dict(rows[f"fuselab fused, {DEFAULT_FORM}"],
                                          form=DEFAULT_FORM)
    rows["fuselab fused, autotuned"], out["autotune"] = _autotuned(
        stream, device, uploaded, lambda seen, form: timed("autotuned", seen, form), rows)
    alone = expression(shape, epilogue=False)
    alone_up = {tid: uploaded[tid] for tid in alone.inputs}
    seen, _, kernels = _recorded(alone, device, alone_up, best)
    out["kernels"]["matmul alone"] = kernels
    timed("fuselab matmul alone", seen, best)
    rows["fuselab matmul alone"]["form"] = best
    out["rows"] = rows
    return out


def _autotuned(stream, device, uploaded, timed, rows) -> tuple[dict, dict]:
    """The form autotune picks with an empty cache (its tuning time), then timed."""
    import os
    import tempfile

    from gpu.runtime.autotune import AUTOTUNE_ENV, CACHE_DIR_ENV, TUNER

    saved = {k: os.environ.get(k) for k in (AUTOTUNE_ENV, CACHE_DIR_ENV)}
    with tempfile.TemporaryDirectory() as cache:
        os.environ[CACHE_DIR_ENV], os.environ[AUTOTUNE_ENV] = cache, "on"
        TUNER.memory.clear()
        try:
            started = time.perf_counter()
            _recorded(stream, device, uploaded, None)
            tuning_s = time.perf_counter() - started
            seen, _, kernels = _recorded(stream, device, uploaded, None)
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
            TUNER.memory.clear()
    form = next((k.split(":")[1].split(",")[0].strip() for k in kernels if "matmul_fuse" in k),
                "fallback")
    timed(seen, form)
    row = dict(rows.pop("autotuned"), form=form)
    return row, {"form": form, "first_run_with_tuning_s": tuning_s, "kernels": kernels}


# --- torch -----------------------------------------------------------------------------------


def torch_rows(shape: tuple[int, int], args: argparse.Namespace) -> dict:
    import torch
    from torch_rows import cuda_time

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    stream = expression(shape)
    xs = [torch.from_numpy(logical_values(spec, tid)).cuda()
          for tid, spec in sorted(stream.inputs.items())]
    compiled = torch.compile(torch_expression)
    compiled(*xs)
    timing = dict(iterations=args.iterations, reps=args.reps)
    return {"allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "rows": {"torch f32 matmul": cuda_time(lambda: xs[0] @ xs[1], **timing),
                     "torch eager": cuda_time(lambda: torch_expression(*xs), **timing),
                     "torch.compile": cuda_time(lambda: compiled(*xs), **timing)}}


# --- the table -------------------------------------------------------------------------------

ROWS = ("fuselab fused", "fuselab fused, autotuned", "fuselab fused, default", "fuselab fallback", "fuselab matmul alone",
        "torch f32 matmul", "torch eager", "torch.compile")


def summarise(shape: tuple[int, int], result: dict) -> tuple[list[dict], dict]:
    batch, n = shape
    flop = 2.0 * batch * n ** 3
    table = {**result["fuselab"]["rows"], **(result.get("torch") or {}).get("rows", {})}
    rows = []
    for label in ROWS + tuple(k for k in table if k.startswith("fuselab fused, ")
                              and k not in ROWS):
        if label in table:
            us = table[label]["median_us"]
            rows.append({"shape": f"{batch}x{n}", "row": label, "median_us": us,
                         "TFLOP_s": flop / us / 1e6, "form": table[label].get("form")})
    fused = table["fuselab fused"]["median_us"]
    alone = table["fuselab matmul alone"]["median_us"]
    target = {"epilogue_over_matmul": fused / alone - 1.0,
              "epilogue_ok": fused / alone - 1.0 <= 0.05,
              "fused_over_fallback": fused / table["fuselab fallback"]["median_us"],
              "fused_faster_than_fallback": fused < table["fuselab fallback"]["median_us"],
              "autotuned_over_best": table["fuselab fused, autotuned"]["median_us"] / fused - 1,
              "autotune_ok": table["fuselab fused, autotuned"]["median_us"] <= 1.05 * fused,
              "tuning_s": result["fuselab"]["autotune"]["first_run_with_tuning_s"]}
    if "torch f32 matmul" in table:
        share = table["torch f32 matmul"]["median_us"] / fused
        target.update(share_of_torch_f32=share, share_ok=share >= 0.5)
    return rows, target


def plot(results: dict, path: Path) -> str | None:
    """A grouped bar chart of TFLOP/s per shape (None when matplotlib is missing)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no PNG"
    shapes = list(results["shapes"])
    labels = [r for r in ROWS if r != "fuselab fused, default" and any(
        row["row"] == r for row in results["table"])]
    fig, ax = plt.subplots(figsize=(max(6, 2.2 * len(shapes)), 4))
    width = 0.8 / max(len(labels), 1)
    for i, label in enumerate(labels):
        heights = [next((r["TFLOP_s"] for r in results["table"]
                         if r["shape"] == s and r["row"] == label), 0.0) for s in shapes]
        ax.bar(np.arange(len(shapes)) + i * width, heights, width, label=label)
    ax.set_xticks(np.arange(len(shapes)) + width * (len(labels) - 1) / 2, shapes)
    ax.set_xlabel("batch x n (m = n = k)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"gelu(relu(a @ b) + bias), f32 — {results['adapter']['name']}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def print_table(results: dict) -> None:
    print(f"\nadapter: {results['adapter']['summary']}  ({results['date']})")
    if results.get("torch_note"):
        print(f"torch: {results['torch_note']}")
    print(f"{'shape':10} {'row':28} {'form':8} {'median µs':>11} {'TFLOP/s':>8}")
    for row in results["table"]:
        print(f"{row['shape']:10} {row['row']:28} {row['form'] or '':8} "
              f"{row['median_us']:11.1f} {row['TFLOP_s']:8.2f}")
    for shape, t in results["targets"].items():
        parts = [f"epilogue +{100 * t['epilogue_over_matmul']:.1f}% "
                 f"({'met' if t['epilogue_ok'] else 'NOT met'}, ≤ 5%)",
                 f"fused/fallback {t['fused_over_fallback']:.3f} "
                 f"({'met' if t['fused_faster_than_fallback'] else 'NOT met'})"]
        parts.append(f"autotune +{100 * t['autotuned_over_best']:.1f}% over the best "
                     f"({'met' if t['autotune_ok'] else 'NOT met'}, ≤ 5%; first run with "
                     f"tuning {t['tuning_s']:.2f} s)")
        if "share_of_torch_f32" in t:
            parts.append(f"{100 * t['share_of_torch_f32']:.0f}% of torch f32 "
                         f"({'met' if t['share_ok'] else 'NOT met'}, ≥ 50%)")
        print(f"targets {shape}: " + ", ".join(parts))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small shapes (lavapipe)")
    parser.add_argument("--out", default="bench-out", help="folder for matmul.json/.png")
    parser.add_argument("--reps", type=int, default=20, help="timed reps (median)")
    parser.add_argument("--iterations", type=int, default=None,
                        help="iterations per timed rep (default 10, --quick 2)")
    parser.add_argument("--no-torch", action="store_true", help="skip the torch rows")
    parser.add_argument("--json", action="store_true", help="also print the JSON")
    args = parser.parse_args(argv)
    if args.iterations is None:
        args.iterations = 2 if args.quick else 10

    from gpu.runtime.device import default_device

    device = default_device()
    note = "skipped (--no-torch)" if args.no_torch else torch_available()
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "quick": args.quick,
        "command": " ".join(["python", "bench/matmul.py", *(argv or sys.argv[1:])]),
        "adapter": {"summary": device.summary(), **device.info()},
        "torch_note": note, "shapes": {}, "table": [], "targets": {},
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for shape in QUICK_SHAPES if args.quick else SHAPES:
        key = f"{shape[0]}x{shape[1]}"
        result = {"fuselab": fuselab_side(shape, args, device)}
        if note is None:
            result["torch"] = torch_rows(shape, args)
        rows, target = summarise(shape, result)
        results["shapes"][key] = result
        results["table"] += rows
        results["targets"][key] = target
        # after each shape, so that a run cut short still leaves what it measured
        (out / "matmul.json").write_text(json.dumps(results, indent=1, default=str))
        print(f"measured {key}", flush=True)
    results["png_note"] = plot(results, out / "matmul.png")
    text = json.dumps(results, indent=1, default=str)
    (out / "matmul.json").write_text(text)
    if args.json:
        print(text)
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
