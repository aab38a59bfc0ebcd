"""The GPU's part of the ``fuselab`` command line.

burn counterpart: none (burn has no CLI); SPEC §7. ``fuselab.cli`` lists these in its tables:

* ``fuselab run STREAM.json --backend gpu``: plan for the adapter's profile and run every
  step on it (``FUSELAB_ADAPTER`` picks the adapter), after checking that every tensor fits
  one of the device's buffers; ``--check`` judges it by the ``gpu`` tolerance;
* ``fuselab compare --tolerance gpu``: ``gpu.check.agreement.judge`` (the chained WGSL accuracy
  bounds with ``--stream``, else the loosest single-op allowance);
* ``fuselab wgsl STREAM.json [--device PROFILE|adapter] [--json]``: every fused kernel the GPU
  executor would launch, with its ``config_id`` and WGSL (no adapter needed unless
  ``--device adapter``).

gpu imports wgpu only when a device is requested (``gpu.runtime.device``): without wgpu or an
adapter, ``--backend gpu`` and ``--device adapter`` fail with one error line, and the rest works.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Mapping

import numpy as np

from refimpl.devices import PRESETS, profile_named
from refimpl.footprint import allocations, size_text
from refimpl.planner import executed_steps
from refimpl.planner.launch.launch import config_id
from refimpl.stream import Stream, load_stream
from gpu.check.tolerance import LOOSEST_SINGLE_OP
from gpu.errors import GpuLimitError
from gpu.runtime.device import default_device
from gpu.runtime.executor import GpuExecutor, WgslListing
from fuselab.run import tracked

__all__ = ["run_on_gpu", "check_buffers", "tolerance_help", "wgsl_arguments", "wgsl_command",
           "kernel_listing", "wgsl_text"]


# --- run --backend gpu ------------------------------------------------------------------------


def run_on_gpu(stream: Stream, args: argparse.Namespace) -> Mapping[int, np.ndarray]:
    """``--backend gpu``: the plan's steps on the default adapter."""
    device = default_device()
    check_buffers(stream, device)
    profile, executed = executed_steps(stream, device.profile())
    return GpuExecutor(stream, device, profile).run(tracked(args, executed, "gpu: steps"))


def check_buffers(stream: Stream, device: Any) -> None:
    """Raise ``GpuLimitError`` at the first tensor (input or op output) larger than the
    device's largest buffer, before anything is allocated."""
    cap = device.max_buffer_bytes
    for alloc in allocations(stream):
        count = alloc.nbytes // alloc.dtype.numpy.itemsize
        nbytes = count * alloc.dtype.storage_bytes
        if nbytes > cap:
            raise GpuLimitError(f"{alloc.where()}: {list(alloc.shape)} {alloc.dtype.value} "
                                f"needs a buffer of {size_text(nbytes)}; {device.name} binds "
                                f"at most {size_text(cap)} per buffer")


def tolerance_help() -> str:
    """What ``--tolerance gpu`` accepts, for ``fuselab compare --help``."""
    loosest = LOOSEST_SINGLE_OP
    return (f"WGSL's accuracy: with --stream, each element within the bound gpu.check.agreement "
            f"carries along the ops that made it (NaN/inf and unbounded elements are counted, "
            f"not failed); without --stream, within {loosest.ulp:g} ULP or "
            f"{loosest.abs:.3g} absolute (f16: {loosest.abs_f16:.3g}), the loosest single-op "
            f"allowance, which does not grow along a fused chain: a chain of inexact ops, a "
            f"reduction or a matmul may exceed it")


# --- wgsl -------------------------------------------------------------------------------------


def wgsl_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stream", metavar="STREAM.json", help="a version-1 stream file")
    parser.add_argument("--device", default="metal", choices=[*PRESETS, "adapter"],
                        help="device profile to plan for (default metal, as `fuselab plan`); "
                             "'adapter' plans for the WebGPU adapter found")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object: every kernel's step, config id and source")


def _profile(name: str) -> Any:
    if name == "adapter":
        return default_device().profile()
    return profile_named(name)


def kernel_listing(stream: Stream, profile: Any) -> list[dict]:
    """Every fused kernel the GPU executor launches for ``stream`` planned on ``profile``:
    step index, plan ops, fuser, ``config_id``, width and WGSL source (no device needed)."""
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


def wgsl_command(args: argparse.Namespace) -> int:
    stream = load_stream(args.stream)
    profile = _profile(args.device)
    kernels = kernel_listing(stream, profile)
    if args.json:
        print(json.dumps({"device": profile.name, "kernels": kernels}, sort_keys=True))
    else:
        sys.stdout.write(wgsl_text(kernels))
    return 0
