"""Fused element-wise kernels on the adapter found, against torch eager / torch.compile / copy.

    python bench/elementwise.py [--quick] [--out DIR] [--reps 20] [--iterations 10] [--no-torch]

Three workloads: ``(a*b + c).exp()`` on 4096² f32 (3 inputs, 1 output), a GELU-like chain
``0.5*x*(1 + tanh(0.7978845608*(x + 0.044715*x*x*x)))`` on [32, 512, 2048] f32 = 33.5 M
elements (1 input, 1 output) and a 20-op chain (five times ``tanh(y*0.75 + 0.5) + 1.25``:
its values stay away from 0, where a relative error means nothing) on 4096², all recorded
with the lazy frontend. Rows:

* fuselab fused: the planner's plan run by ``GpuExecutor`` on the specialised kernel (tier 1,
  one emitted kernel); fuselab tier 0: the same plan on the generic tier-0 kernel
  (``gpu.runtime.tiers``); fuselab unfused: every op its own kernel (``run_unfused``). Their
  dispatches are recorded from a real run and replayed ``--iterations`` times inside one
  compute pass, timed by pass timestamps (``bench.gpu_timing``); the same dispatches one pass
  each, tier 0 at 1, 2, 4 and 8 positions per invocation and with the indexed register file
  (``TIER0_VARIANTS``, not with ``--quick``), the emitted
  kernel at other workgroup sizes, two edits of its source and hand-written vec4 kernels (the
  same work, a copy) are diagnostic rows in the JSON;
* torch eager, torch.compile (default mode), torch copy (``x.clone()``: the roofline): CUDA
  events around ``--iterations`` back-to-back calls. Skipped with a note without torch/CUDA.

Median of ``--reps`` timed reps (≥ 20), per iteration. GB/s = bytes the fused kernel moves
(inputs read once + outputs written once, 4 bytes each) / median time, for every row but the
copies, whose GB/s is their own read + write. First call: fuselab = a new expression from
recording through its first result on the device (planning, launch planning, WGSL emission,
pipeline creation, run; inputs already on the device, nothing read back); torch.compile = its
first call on a new function after one unrelated compile (that one is reported too). The
fuselab first run is measured twice, on a new expression each time the specialised pipeline
is concerned: ``FUSELAB_TIERS=specialised-only`` first (the specialised kernel compiled before
the run), then both tiers (tier 0 runs, tier 1 compiles behind it); the tier-0 kernels are
compiled ahead, once per device, and that time is reported (``tier0_warm_ms``). Then the time
until tier 1 takes over (request to a compiled pipeline), and tier 0's steady state against
tier 1's. Also: the pipelines a new shape of a known config compiles (must be 0). Full results
go to ``DIR/elementwise.json`` (``elementwise.partial.json`` after each workload); a short table
is printed last. ``--quick`` uses small shapes (for lavapipe and tests).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from refimpl.data import logical_values  # noqa: E402
from refimpl.frontend import Session  # noqa: E402
from refimpl.interpreter import executed_steps  # noqa: E402
from torch_rows import max_errors, torch_available, torch_side, torch_warmup  # noqa: E402

GELU_C = (0.7978845608, 0.044715)
# Diagnostic tier-0 kernels: (positions per invocation, register file).
TIER0_VARIANTS = ((1, "switch"), (2, "switch"), (4, "switch"), (8, "switch"), (1, "array"),
                  (2, "array"), (4, "array"))

HAND_HEADER = """override WG_SIZE: u32 = 256u;
@group(0) @binding(0) var<storage, read> in0: array<vec4<f32>>;
{more}
@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
    let i = gid.x;
    if (i >= arrayLength(&out)) {{
        return;
    }}
    {body}
}}
"""
HAND = {
    "mul_add_exp": (3, "out[i] = exp(in0[i] * in1[i] + in2[i]);"),
    "gelu": (1, "let x = in0[i];\n    out[i] = 0.5 * x * (1.0 + tanh(0.7978845608 * "
                "(x + 0.044715 * (x * x * x))));"),
    "chain20": (1, "var y = in0[i];\n    for (var k = 0; k < 5; k++) {\n"
                   "        y = tanh(y * 0.75 + 0.5) + 1.25;\n    }\n    out[i] = y;"),
    "copy": (1, "out[i] = in0[i];"),
}


def hand_source(name: str) -> str:
    """A hand-written vec4 kernel: no metadata, 1-D grid, ``arrayLength`` guard."""
    n_in, body = HAND[name]
    more = [f"@group(0) @binding({k}) var<storage, read> in{k}: array<vec4<f32>>;"
            for k in range(1, n_in)]
    more.append(f"@group(0) @binding({n_in}) var<storage, read_write> out: array<vec4<f32>>;")
    return HAND_HEADER.format(more="\n".join(more), body=body)


# --- the expressions --------------------------------------------------------------------------


def mul_add_exp(shape: tuple[int, ...]):
    s = Session(executor=None)
    a, b, c = (s.random(shape, seed=k) for k in range(3))
    s.sync((a * b + c).exp())
    return s.close()


def gelu(shape: tuple[int, ...]):
    s = Session(executor=None)
    x = s.random(shape, seed=0)
    s.sync(0.5 * x * (1.0 + (GELU_C[0] * (x + GELU_C[1] * (x * x * x))).tanh()))
    return s.close()


def chain20(shape: tuple[int, ...]):
    s = Session(executor=None)
    y = s.random(shape, seed=0)
    for _ in range(5):
        y = (y * 0.75 + 0.5).tanh() + 1.25
    s.sync(y)
    return s.close()


def warmup_expression():
    """An expression unlike both workloads: it compiles nothing they use."""
    s = Session(executor=None)
    x = s.random((2, 3), seed=0)
    s.sync((x - 1.0).sin())
    return s.close()


def numpy_ref(name: str, xs: list[np.ndarray]) -> np.ndarray:
    if name == "mul_add_exp":
        return np.exp(xs[0] * xs[1] + xs[2])
    if name == "chain20":
        y = xs[0]
        for _ in range(5):
            y = np.tanh(y * np.float32(0.75) + np.float32(0.5)) + np.float32(1.25)
        return y
    x = xs[0]
    return 0.5 * x * (1.0 + np.tanh(GELU_C[0] * (x + GELU_C[1] * (x * x * x))))


def torch_fn(name: str) -> Callable:
    import torch

    if name == "mul_add_exp":
        return lambda a, b, c: (a * b + c).exp()
    if name == "chain20":
        def chain(y):
            for _ in range(5):
                y = torch.tanh(y * 0.75 + 0.5) + 1.25
            return y
        return chain
    return lambda x: 0.5 * x * (1.0 + torch.tanh(GELU_C[0] * (x + GELU_C[1] * (x * x * x))))


WORKLOADS = {  # name: (builder, full shape, quick shape, new shapes of the same config)
    "mul_add_exp": (mul_add_exp, (4096, 4096), (256, 256), ((2048, 4096), (3, 20))),
    "gelu": (gelu, (32, 512, 2048), (4, 64, 128), ((16, 512, 2048), (2, 3, 8))),
    "chain20": (chain20, (4096, 4096), (256, 256), ((2048, 4096), (3, 20))),
}


# --- fuselab ----------------------------------------------------------------------------------


def _source_edits(source: str, grid: tuple[int, int, int], info: np.ndarray) -> dict[str, str]:
    """Diagnostic edits of an emitted kernel: a 1-D index (when the grid is 1-D); its
    run-time scalar/literal words inlined as constants."""
    edits = {}
    if grid[1:] == (1, 1):
        edits["emitted, 1-D index"] = source.replace(
            "(wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * WG_SIZE + lid",
            "wid.x * WG_SIZE + lid")

    def constant(match: re.Match) -> str:
        value = float(info[int(match.group(1))].view(np.float32))
        return repr(value) if np.isfinite(value) else match.group(0)
    inlined = re.sub(r"bitcast<f32>\(info\[(\d+)u?\]\)", constant, source)
    if inlined != source:
        edits["emitted, scalars inlined as constants"] = inlined
    return edits


def fuselab_side(name: str, shape: tuple, new_shapes: tuple, args: argparse.Namespace,
                 device: Any) -> dict[str, Any]:
    from bench.gpu_timing import (first_run, prepared, recording, tiers_env, time_dispatches,
                                  with_workgroup_size)
    from gpu.runtime.executor import KERNEL_CACHE, GpuExecutor
    from gpu.runtime.tiers import tiers_for

    build = WORKLOADS[name][0]
    rt = device.runtime
    stream = build(shape)
    values = {tid: logical_values(spec, tid) for tid, spec in sorted(stream.inputs.items())}
    uploaded = {tid: rt.upload_buffer(v.reshape(-1), stream.inputs[tid].dtype)
                for tid, v in values.items()}
    out: dict[str, Any] = {"shape": list(shape)}
    out["first_run_specialised"] = first_run(lambda: build(shape), device, uploaded,
                                             tiers="specialised-only").to_dict()
    tiers = tiers_for(device)
    before = set(tiers.compiled_after) | set(tiers._tier1)
    out["first_run"] = first_run(lambda: build(shape), device, uploaded, tiers="both").to_dict()
    out["second_run"] = first_run(lambda: build(shape), device, uploaded,
                                  tiers="both").to_dict()
    tiers.wait_tier1()
    requested = [k for k in tiers._tier1 if k not in before]
    out["tier1_takeover_ms"] = [tiers.compiled_after[k] * 1e3 for k in requested]
    out["after_takeover_run"] = first_run(lambda: build(shape), device, uploaded,
                                          tiers="both").to_dict()
    out["first_run_unfused"] = first_run(lambda: build(shape), device, uploaded,
                                         fused=False).to_dict()

    profile, executed = executed_steps(stream, device.profile())
    want = numpy_ref(name, list(values.values()))
    runs = {}
    for mode, tier in (("fused", "specialised-only"), ("tier 0", "tier0-only"),
                       ("unfused", None)):
        with recording(rt) as seen, tiers_env(tier):
            executor = GpuExecutor(stream, device, profile, KERNEL_CACHE, uploaded)
            got = executor.run(executed) if mode != "unfused" else executor.run_unfused()
        runs[mode] = list(seen)
        out[f"{mode.replace(' ', '')}_errors_vs_numpy"] = max_errors(got[max(got)], want)
        if mode == "tier 0":
            out["tier0_tiers"] = [t for r in executor.records for t in r.tiers]
        if mode == "fused":
            out["config_ids"] = [c for r in executor.records for c in r.config_ids()]
            out["fused_wgsl"] = [k.source for r in executor.records for k in r.kernels]

    timing = dict(iterations=args.iterations, reps=args.reps)
    rows = {}
    for mode, seen in runs.items():
        rows[f"fuselab {mode}"] = time_dispatches(device, seen, **timing).to_dict()
        if mode == "tier 0":
            continue
        rows[f"fuselab {mode}, one pass per dispatch"] = time_dispatches(
            device, seen, passes="each", **timing).to_dict()
    if not args.quick:  # diagnostic: tier 0 at other positions per invocation, other files
        kept = tiers.unroll, tiers.registers
        for unroll, registers in TIER0_VARIANTS:
            if (unroll, registers) == kept:
                continue
            tiers.unroll, tiers.registers = unroll, registers
            with recording(rt) as seen, tiers_env("tier0-only"):
                GpuExecutor(stream, device, profile, KERNEL_CACHE, uploaded).run(executed)
            rows[f"fuselab tier 0, {unroll} positions per invocation, {registers} registers"] = \
                time_dispatches(device, list(seen), **timing).to_dict()
        tiers.unroll, tiers.registers = kept
    kernel = runs["fused"][0]
    for size in (64, 128, 256, 512, 1024):
        if size <= device.max_workgroup_size and size != kernel.workgroup_size:
            rows[f"fuselab fused, WG_SIZE {size}"] = time_dispatches(
                device, [with_workgroup_size(rt, kernel, size)], **timing).to_dict()
    info = np.frombuffer(device.queue.read_buffer(kernel.buffers[-1]), np.uint32)
    for label, source in _source_edits(kernel.source, kernel.grid, info).items():
        edited = prepared(rt, source, kernel.buffers, kernel.workgroups, kernel.workgroup_size)
        rows[label] = time_dispatches(device, [edited], **timing).to_dict()
    numel = int(np.prod(shape))
    out_buf = rt.empty((numel,), stream.inputs[0].dtype).buffer
    groups = -(-numel // 4 // 256)
    if groups <= int(device.limits["max-compute-workgroups-per-dimension"]):
        ins = [uploaded[t] for t in values]
        hand = prepared(rt, hand_source(name), [*ins, out_buf], groups, 256)
        rows["hand-written WGSL vec4, same work"] = time_dispatches(device, [hand],
                                                                    **timing).to_dict()
        copy = prepared(rt, hand_source("copy"), [ins[0], out_buf], groups, 256)
        rows["hand-written WGSL vec4 copy"] = time_dispatches(device, [copy],
                                                              **timing).to_dict()
    out["rows"] = rows
    out["host_run"] = _host_runs(stream, device, profile, executed, uploaded, args.reps)
    out["new_shapes"] = [_new_shape(build, s, device, out["config_ids"]) for s in new_shapes]
    return out


def _host_runs(stream, device, profile, executed, uploaded, reps: int) -> dict[str, float]:
    """Wall clock of a whole ``GpuExecutor`` run (launch planning, submits, a 4-byte wait)."""
    from gpu.runtime.executor import GpuExecutor

    spans = []
    for _ in range(reps + 1):
        started = time.perf_counter()
        GpuExecutor(stream, device, profile, uploaded=uploaded).run(executed, read=False)
        spans.append(time.perf_counter() - started)
    return {"median_ms": float(np.median(spans[1:]) * 1e3), "reps": reps,
            "what": "GpuExecutor(...).run(executed, read=False), plan precomputed"}


def _new_shape(build: Callable, shape: tuple, device: Any, known: list[str]) -> dict[str, Any]:
    from gpu.runtime.executor import KERNEL_CACHE, GpuExecutor

    stream = build(shape)
    profile, executed = executed_steps(stream, device.profile())
    compiled, misses = device.runtime.compiled, KERNEL_CACHE.misses
    executor = GpuExecutor(stream, device, profile)
    executor.run(executed)
    ids = [c for r in executor.records for c in r.config_ids()]
    return {"shape": list(shape), "config_ids": ids, "same_config": ids == known,
            "pipelines_compiled": device.runtime.compiled - compiled,
            "kernels_emitted": KERNEL_CACHE.misses - misses}


# --- where a first run's time goes (--profile) ----------------------------------------------


def profile_costs(device: Any, shape: tuple, out: Path) -> dict[str, Any]:
    """Wall costs of the parts of a first run (buffer creation, a new pipeline) and a cProfile
    of a new expression's ``first_run`` and of one cached run, written to ``profile.txt``."""
    import cProfile
    import io
    import pstats

    import wgpu

    from bench.gpu_timing import first_run, wall_seconds
    from gpu.runtime.executor import GpuExecutor

    rt, costs = device.runtime, {}
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    for mib in (1, 64, 128):
        seconds, _ = wall_seconds(lambda: device.wgpu_device.create_buffer(size=mib << 20,
                                                                           usage=usage))
        costs[f"create_buffer_{mib}MiB_ms"] = seconds * 1e3
    source = hand_source("copy").replace("out[i] = in0[i];", "out[i] = in0[i] * in0[i];")
    costs["new_pipeline_ms"] = wall_seconds(lambda: rt.pipeline_for(source))[0] * 1e3

    def expression():
        s = Session(executor=None)
        a, b, c = (s.random(shape, seed=k) for k in range(3))
        s.sync((a - b).sin() * c)
        return s.close()
    stream = expression()
    uploaded = {tid: rt.upload_buffer(logical_values(spec, tid).reshape(-1), spec.dtype)
                for tid, spec in sorted(stream.inputs.items())}
    text = io.StringIO()
    for label, call in (("first run of a new expression", lambda: first_run(
            expression, device, uploaded).to_dict()), ("a cached run", lambda: GpuExecutor(
                stream, device, uploaded=uploaded).run(executed_steps(stream, device.profile())[1],
                                                       read=False))):
        profiler = cProfile.Profile()
        profiler.enable()
        result = call()
        profiler.disable()
        costs[label] = result or {}
        text.write(f"=== {label}: {result}\n")
        stats = pstats.Stats(profiler, stream=text)
        stats.sort_stats("cumulative").print_stats(40)
        stats.sort_stats("tottime").print_stats(20)
    (out / "profile.txt").write_text(text.getvalue())
    return costs


# --- report -----------------------------------------------------------------------------------


def summarise(name: str, result: dict[str, Any]) -> list[dict[str, Any]]:
    """The table's rows for one workload."""
    fl, th = result["fuselab"], result.get("torch") or {}
    fused_bytes, copy_bytes = result["bytes_fused"], result["bytes_copy"]
    rows = []
    picks = [("fuselab fused", fl["rows"], fl["first_run_specialised"]["ms"]),
             ("fuselab tier 0", fl["rows"], fl["first_run"]["ms"]),
             ("fuselab unfused", fl["rows"], fl["first_run_unfused"]["ms"]),
             ("torch eager", th.get("rows", {}), 1e3 * th.get("eager_first_call_s", np.nan)),
             ("torch.compile", th.get("rows", {}), 1e3 * th.get("compile_first_call_s", np.nan)),
             ("torch eager, CUDA graph", th.get("rows", {}), None),
             ("torch.compile, CUDA graph", th.get("rows", {}), None),
             ("torch copy", th.get("rows", {}), None),
             ("torch copy, CUDA graph", th.get("rows", {}), None),
             ("hand-written WGSL vec4, same work", fl["rows"], None),
             ("hand-written WGSL vec4 copy", fl["rows"], None)]
    for label, table, first_ms in picks:
        if label not in table:
            continue
        us = table[label]["median_us"]
        nbytes = copy_bytes if "copy" in label else fused_bytes
        rows.append({"workload": name, "row": label, "median_us": us,
                     "GB_s": nbytes / us / 1e3, "first_call_ms": first_ms})
    return rows


def targets(results: dict[str, Any]) -> dict[str, Any]:
    found = {}
    for name, result in results["workloads"].items():
        fl, th = result["fuselab"], result.get("torch")
        fused = fl["rows"]["fuselab fused"]["median_us"]
        entry = {"unfused_over_fused": fl["rows"]["fuselab unfused"]["median_us"] / fused,
                 "new_shape_pipelines": [s["pipelines_compiled"] for s in fl["new_shapes"]]}
        entry["unfused_over_fused_ok"] = entry["unfused_over_fused"] >= 1.9
        entry["tier0_over_tier1"] = fl["rows"]["fuselab tier 0"]["median_us"] / fused
        entry["tier0_within_2x"] = entry["tier0_over_tier1"] <= 2.0
        entry["first_run_ms"] = fl["first_run"]["ms"]
        entry["first_run_specialised_ms"] = fl["first_run_specialised"]["ms"]
        entry["first_run_tiers"] = fl["first_run"]["tiers"]
        entry["tier1_takeover_ms"] = fl["tier1_takeover_ms"]
        entry["new_shape_ok"] = all(s["same_config"] and s["pipelines_compiled"] == 0
                                    for s in fl["new_shapes"])
        if th:
            compiled = th["rows"]["torch.compile"]["median_us"]
            entry["fused_over_compile"] = fused / compiled
            entry["fused_le_compile"] = fused <= compiled
            graphed = th["rows"].get("torch.compile, CUDA graph")
            if graphed:
                entry["fused_over_compile_graph"] = fused / graphed["median_us"]
                entry["fused_le_compile_graph"] = fused <= graphed["median_us"]
            entry["compile_first_over_fuselab_first"] = (th["compile_first_call_s"] * 1e3
                                                         / fl["first_run"]["ms"])
            entry["first_call_ok"] = entry["compile_first_over_fuselab_first"] >= 200
            entry["compile_first_over_specialised_first"] = (
                th["compile_first_call_s"] * 1e3 / fl["first_run_specialised"]["ms"])
        found[name] = entry
    return found


def _save_partial(results: dict[str, Any], out: Path) -> None:
    """The workloads measured so far (a run cut short keeps them)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "elementwise.partial.json").write_text(json.dumps(results, indent=1, default=str))


def print_table(results: dict[str, Any]) -> None:
    print(f"\nadapter: {results['adapter']['summary']}  ({results['date']})")
    print(f"compiled ahead: tier-0 kernels {results['tier0_warm_ms']:.1f} ms, common "
          f"standalone kernels {results['unfused_warm_ms']:.1f} ms")
    if results.get("torch_note"):
        print(f"torch: {results['torch_note']}")
    print(f"{'workload':12} {'row':34} {'median µs':>10} {'GB/s':>8} {'first call ms':>14}")
    for row in results["table"]:
        first = "" if row["first_call_ms"] is None else f"{row['first_call_ms']:.1f}"
        print(f"{row['workload']:12} {row['row']:34} {row['median_us']:10.1f} "
              f"{row['GB_s']:8.0f} {first:>14}")
    for name, t in results["targets"].items():
        takeover = ", ".join(f"{ms:.1f}" for ms in t["tier1_takeover_ms"]) or "-"
        parts = [f"unfused/fused {t['unfused_over_fused']:.2f}",
                 f"tier0/tier1 {t['tier0_over_tier1']:.2f}",
                 f"first run {t['first_run_ms']:.2f} ms {t['first_run_tiers']} "
                 f"(specialised-only {t['first_run_specialised_ms']:.1f} ms)",
                 f"tier 1 takes over after {takeover} ms",
                 f"new-shape pipelines {t['new_shape_pipelines']}"]
        if "fused_over_compile_graph" in t:
            parts.append(f"fused/compile(graph) {t['fused_over_compile_graph']:.2f}")
        if "fused_over_compile" in t:
            parts += [f"fused/compile {t['fused_over_compile']:.2f}",
                      f"compile first/fuselab first {t['compile_first_over_fuselab_first']:.0f}x"]
        print(f"targets {name}: " + ", ".join(parts))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small shapes (lavapipe)")
    parser.add_argument("--out", default="bench-out", help="folder for elementwise.json")
    parser.add_argument("--reps", type=int, default=20, help="timed reps (median; >= 20)")
    parser.add_argument("--no-torch", action="store_true", help="skip the torch rows")
    parser.add_argument("--profile", action="store_true",
                        help="also profile a first run (DIR/profile.txt, 'costs' in the JSON)")
    parser.add_argument("--iterations", type=int, default=None,
                        help="iterations per timed rep (default 10, --quick 2)")
    args = parser.parse_args(argv)
    if args.iterations is None:
        args.iterations = 2 if args.quick else 10
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-"))

    from bench.gpu_timing import first_run
    from gpu.runtime.device import default_device

    from gpu.runtime.tiers import tiers_for
    from gpu.runtime.tiers_warm import warm_unfused

    device = default_device()
    tiers = tiers_for(device)
    tier0_warm_ms = tiers.warm() * 1e3  # the generic kernels, once per device, ahead
    unfused_warm_ms = warm_unfused(device) * 1e3  # the common standalone kernels
    warm = first_run(warmup_expression, device)
    tiers.wait_tier1()
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "quick": args.quick,
        "command": " ".join(["python", "bench/elementwise.py", *(argv or sys.argv[1:])]),
        "adapter": {"summary": device.summary(), **device.info(),
                    "driver": str(device.adapter.info.get("description", ""))},
        "warmup_first_run_ms": warm.seconds * 1e3, "workloads": {},
        "tier0_warm_ms": tier0_warm_ms, "unfused_warm_ms": unfused_warm_ms,
        "tier0_kernels_ms": {repr(k): v * 1e3 for k, v in tiers.tier0_compile_s.items()},
        "bytes_note": "GB/s = (inputs read + outputs written by the fused kernel) / median; "
                      "copies: their own read + write",
    }
    note = "skipped (--no-torch)" if args.no_torch else torch_available()
    results["torch_note"] = note
    if note is None:
        results["torch_warmup"] = torch_warmup()
    for name, (build, full, quick, new_shapes) in WORKLOADS.items():
        shape = quick if args.quick else full
        new = tuple(s for s in new_shapes if not args.quick or np.prod(s) < np.prod(quick))
        fl = fuselab_side(name, shape, new or ((1,) * (len(shape) - 1) + (8,),), args, device)
        stream = build(shape)
        numel = int(np.prod(shape))
        result = {"fuselab": fl, "bytes_fused": 4 * numel * (len(stream.inputs) + 1),
                  "bytes_copy": 8 * numel}
        if note is None:
            xs = [logical_values(spec, tid) for tid, spec in sorted(stream.inputs.items())]
            result["torch"] = torch_side(torch_fn(name), xs, numpy_ref(name, xs),
                                         args.iterations, args.reps)
        results["workloads"][name] = result
        _save_partial(results, Path(args.out))
        print(f"{name}: " + ", ".join(f"{row} {r['median_us']:.1f} us"
                                      for row, r in fl["rows"].items() if "tier 0" in row
                                      or row == "fuselab fused"), flush=True)
    results["table"] = [row for name, r in results["workloads"].items()
                        for row in summarise(name, r)]
    results["targets"] = targets(results)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.profile:
        try:
            results["costs"] = profile_costs(
                device, WORKLOADS["mul_add_exp"][2 if args.quick else 1], out)
        except Exception as exc:  # noqa: BLE001 - a diagnostic must not lose the results
            results["costs"] = {"error": f"{type(exc).__name__}: {exc}"}
    (out / "elementwise.json").write_text(json.dumps(results, indent=1, default=str))
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
