"""The GPU's part of the ``fuselab`` command line and demo, registered as a plugin.

burn counterpart: none (burn has no CLI); SPEC §7. ``register`` is published under the
entry-point group ``fuselab.cli`` (pyproject.toml), so refimpl never imports this package:

* ``fuselab run STREAM.json --backend gpu``: plan for the adapter's profile and run every
  step on it (``FUSELAB_ADAPTER`` picks the adapter), after checking that every tensor fits
  one of the device's buffers; ``--check`` judges it by the ``gpu`` tolerance;
* ``fuselab compare --tolerance gpu``: ``gpu.agreement.judge`` (the chained WGSL accuracy
  bounds with ``--stream``, else the loosest single-op allowance);
* ``fuselab wgsl STREAM.json [--device PROFILE|adapter] [--json]``: every fused kernel the GPU
  executor would launch, with its ``config_id`` and WGSL (no adapter needed unless
  ``--device adapter``);
* the demo: the ``gpu`` executor (compared with the eager oracle within the chained WGSL
  accuracy bounds of ``gpu.agreement``) and a section running the seed's
  ``(a*b + c).exp()`` on the adapter found: its WGSL, 1 fused dispatch against 3 unfused, a
  new shape compiling no pipeline, and fused vs unfused timings on 1024².
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from typing import Any, Mapping

import numpy as np

from refimpl.stream import Stream

__all__ = ["register", "gpu_section", "time_stream", "kernel_listing", "wgsl_text",
           "check_buffers"]

TIMING_SHAPE = (1024, 1024)
TIMING_RUNS = 5


# --- run --backend gpu ------------------------------------------------------------------------


def _run_backend(stream: Stream, args: argparse.Namespace) -> Mapping[int, np.ndarray]:
    from refimpl.cli import tracked
    from refimpl.interpreter import executed_steps
    from gpu.device import default_device
    from gpu.executor import GpuExecutor

    device = default_device()
    check_buffers(stream, device)
    profile, executed = executed_steps(stream, device.profile())
    return GpuExecutor(stream, device, profile).run(tracked(args, executed, "gpu: steps"))


def check_buffers(stream: Stream, device: Any) -> None:
    """Raise ``GpuLimitError`` at the first tensor (input or op output) larger than the
    device's largest buffer, before anything is allocated."""
    from refimpl.footprint import allocations, size_text
    from gpu.errors import GpuLimitError

    cap = device.max_buffer_bytes
    for alloc in allocations(stream):
        count = alloc.nbytes // alloc.dtype.numpy.itemsize
        nbytes = count * alloc.dtype.storage_bytes
        if nbytes > cap:
            raise GpuLimitError(f"{alloc.where()}: {list(alloc.shape)} {alloc.dtype.value} "
                                f"needs a buffer of {size_text(nbytes)}; {device.name} binds "
                                f"at most {size_text(cap)} per buffer")


def _judge(expected: Mapping[int, np.ndarray], actual: Mapping[int, np.ndarray],
           stream: Stream | None) -> Mapping[int, tuple[bool, str]]:
    from gpu.agreement import judge

    return judge(expected, actual, stream)


def _tolerance_help() -> str:
    from gpu.tolerance import LOOSEST_SINGLE_OP as loosest

    return (f"WGSL's accuracy: with --stream, each element within the bound gpu.agreement "
            f"carries along the ops that made it (NaN/inf and unbounded elements are counted, "
            f"not failed); without --stream, within {loosest.ulp:g} ULP or "
            f"{loosest.abs:.3g} absolute (f16: {loosest.abs_f16:.3g}), the loosest single-op "
            f"allowance, which does not grow along a fused chain: a chain of inexact ops, a "
            f"reduction or a matmul may exceed it")


# --- wgsl -------------------------------------------------------------------------------------


def _wgsl_arguments(parser: argparse.ArgumentParser) -> None:
    from refimpl.devices import PRESETS

    parser.add_argument("stream", metavar="STREAM.json", help="a version-1 stream file")
    parser.add_argument("--device", default="metal", choices=[*PRESETS, "adapter"],
                        help="device profile to plan for (default metal, as `fuselab plan`); "
                             "'adapter' plans for the WebGPU adapter found")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object: every kernel's step, config id and source")


def _profile(name: str) -> Any:
    from refimpl.devices import profile_named

    if name == "adapter":
        from gpu.device import default_device

        return default_device().profile()
    return profile_named(name)


def kernel_listing(stream: Stream, profile: Any) -> list[dict]:
    """Every fused kernel the GPU executor launches for ``stream`` planned on ``profile``:
    step index, plan ops, fuser, ``config_id``, width and WGSL source (no device needed)."""
    from refimpl.interpreter import executed_steps
    from refimpl.planner.launch import config_id
    from gpu.executor import WgslListing

    profile, executed = executed_steps(stream, profile)
    listing = WgslListing(stream, profile)
    listing.run(executed)
    return [{"step": index, "ops": list(listing.records[index].step.ops),
             "fuser": listing.records[index].step.fuser,
             "config_id": config_id(kernel.config), "width": kernel.config.width,
             "source": kernel.source} for index, kernel in listing.emitted]


def wgsl_text(kernels: list[dict]) -> str:
    """``fuselab wgsl``'s text: a header comment per kernel, each distinct source once."""
    lines, seen = [], set()
    for entry in kernels:
        lines.append(f"// step {entry['step']}: {entry['fuser']} ops {entry['ops']}, kernel "
                     f"{entry['config_id']}, width {entry['width']}")
        if entry["source"] in seen:
            lines.append("// (the same source as above)\n")
            continue
        seen.add(entry["source"])
        lines.append(entry["source"])
    if not kernels:
        lines.append("// no fused kernel: every op runs unfused")
    return "\n".join(lines) + "\n"


def _wgsl(args: argparse.Namespace) -> int:
    import sys

    from refimpl.stream import load_stream

    stream = load_stream(args.stream)
    profile = _profile(args.device)
    kernels = kernel_listing(stream, profile)
    if args.json:
        print(json.dumps({"device": profile.name, "kernels": kernels}, sort_keys=True))
    else:
        sys.stdout.write(wgsl_text(kernels))
    return 0


# --- the demo ---------------------------------------------------------------------------------


@functools.cache
def _device() -> Any:
    """The default device, or None without an adapter (probed once)."""
    from gpu.device import default_device
    from gpu.errors import NoAdapterError

    try:
        return default_device()
    except NoAdapterError:
        return None


def _demo_executor(stream: Stream, device_name: str) -> Mapping[int, np.ndarray] | None:
    from refimpl.devices import profile_named
    from gpu.executor import run_planned

    device = _device()
    if device is None:
        return None
    return run_planned(stream, device, profile_named(device_name))


def _demo_compare(stream: Stream, expected: Mapping[int, np.ndarray],
                  got: Mapping[int, np.ndarray]) -> tuple[bool, str]:
    from gpu.agreement import compare

    agreement = compare(stream, expected, got)
    return agreement.ok, agreement.summary().splitlines()[0]


def time_stream(stream: Stream, device: Any, runs: int = TIMING_RUNS) -> dict[str, tuple]:
    """Median milliseconds of ``runs`` executions, fused and unfused, and the dispatches of
    one run. Inputs are uploaded once (``stream`` must not write them in place); each run
    dispatches and waits, reading nothing back; a first run per mode compiles."""
    from refimpl.interpreter import executed_steps
    from gpu.executor import GpuExecutor

    profile, executed = executed_steps(stream, device.profile())
    first = GpuExecutor(stream, device, profile)
    uploaded = {tid: first.buffers[first.memory.handles[tid].buffer] for tid in stream.inputs}
    result = {}
    for mode in ("fused", "unfused"):
        times, dispatches = [], 0
        for _ in range(runs + 1):
            executor = GpuExecutor(stream, device, profile, uploaded=uploaded)
            started = time.perf_counter()
            if mode == "fused":
                executor.run(executed, read=False)
            else:
                executor.run_unfused(read=False)
            times.append((time.perf_counter() - started) * 1e3)
            dispatches = sum(r.dispatches for r in executor.records)
        result[mode] = (statistics.median(times[1:]), dispatches)
    return result


def gpu_section(report: Any) -> None:
    """The seed's ``(a*b + c).exp()`` on the adapter found (SPEC §4)."""
    from refimpl.interpreter import executed_steps
    from refimpl.seed import mul_add_exp
    from gpu.executor import GpuExecutor

    report.section("The kernels on this machine: (a * b + c).exp() as WGSL, fused vs unfused")
    device = _device()
    if device is None:
        report.say("    [skip] no WebGPU adapter (apt-get install mesa-vulkan-drivers "
                   "libvulkan1 for lavapipe)")
        return
    report.say(f"  adapter: {device.summary()}")
    stream = mul_add_exp((4, 6))
    profile, executed = executed_steps(stream, device.profile())
    fused = GpuExecutor(stream, device, profile)
    a_buffer = fused.buffers[fused.memory.handles[0].buffer]
    fused.run(executed)
    record = fused.records[0]
    kernel = record.kernels[0]
    report.say(f"  the fused kernel (config {record.config_ids()[0]}), elemwise_fuse as WGSL:")
    for line in kernel.source.splitlines():
        report.say(f"      {line}")
    out = stream.syncs()[-1].tensors[0]
    report.check("one dispatch for the whole expression",
                 sum(r.dispatches for r in fused.records) == 1)
    report.check("written in place: the output's buffer is a's",
                 fused.buffers.get(fused.memory.handles[out].buffer) is a_buffer)
    unfused = GpuExecutor(stream, device, profile)
    unfused.run_unfused()
    report.check("fusion off: three dispatches (Mul, Add, Exp)",
                 sum(r.dispatches for r in unfused.records) == 3)
    before = device.runtime.compiled
    small = mul_add_exp((2, 2))
    small_profile, small_executed = executed_steps(small, device.profile())
    GpuExecutor(small, device, small_profile).run(small_executed)
    report.check("[2, 2]: the same kernel, no pipeline compiled",
                 device.runtime.compiled == before)
    timings = time_stream(mul_add_exp(TIMING_SHAPE, a_moved=False), device)
    (fused_ms, fused_n), (unfused_ms, unfused_n) = timings["fused"], timings["unfused"]
    report.say(f"  {TIMING_SHAPE[0]}x{TIMING_SHAPE[1]} f32, median of {TIMING_RUNS}: fused "
               f"{fused_ms:.2f} ms ({fused_n} dispatch), unfused {unfused_ms:.2f} ms "
               f"({unfused_n} dispatches): {unfused_ms / fused_ms:.2f}x")
    report.check("on 1024²: 1 dispatch fused, 3 unfused", (fused_n, unfused_n) == (1, 3))


# --- registration -----------------------------------------------------------------------------


def register() -> None:
    """The ``fuselab.cli`` entry point: the gpu tolerance and backend, ``wgsl``, the demo's
    executor and section (each once)."""
    from refimpl import demo
    from refimpl.cli import BACKENDS, COMMANDS, register_backend, register_command
    from refimpl.compare import TOLERANCES, register_tolerance

    if "gpu" not in TOLERANCES:
        register_tolerance("gpu", _tolerance_help(), _judge)
    if "gpu" not in BACKENDS:
        register_backend("gpu", _run_backend, tolerance="gpu")
    if "wgsl" not in COMMANDS:
        register_command("wgsl", "print the WGSL of every fused kernel of a stream",
                         _wgsl_arguments, _wgsl)
    if "gpu" not in demo.EXECUTORS:
        demo.register_executor("gpu", _demo_executor, _demo_compare)
        demo.register_section(gpu_section)
