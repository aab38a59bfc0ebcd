"""The GPU's part of ``fuselab demo``: an executor checked against the oracle, and a section.

burn counterpart: none (the demo is the seed page run live; SPEC §7). ``fuselab.demo`` lists
them in its tables:

* the ``gpu`` executor: every stream of the demo planned and run on the adapter found,
  compared with the eager oracle within the chained WGSL accuracy bounds of ``gpu.check.agreement``;
* a section running the seed's ``(a*b + c).exp()`` on that adapter: its WGSL, 1 fused
  dispatch against 3 unfused, a new shape compiling no pipeline, and fused vs unfused timings
  on 1024²; then the first run of a new expression with and without tier 0
  (``gpu.runtime.tiers``); then the seed's matmul and reduce steps, each one fused kernel
  where burn's fallback launches two or three, with their times (burn's defaults, no
  autotune).

Without an adapter (or without wgpu) the executor and the section say so and are skipped.
"""

from __future__ import annotations

import functools
import statistics
import time
from typing import Any, Mapping

import numpy as np

from refimpl.devices import profile_named
from refimpl.planner import executed_steps
from refimpl.interpreter import Interpreter
from refimpl.seed import matmul_add_exp, mul_add_exp, mul_sum_dim_exp
from refimpl.stream import Stream
from gpu.check.agreement import compare
from gpu.errors import NoAdapterError
from gpu.runtime.device import default_device, request_device
from gpu.runtime.executor import GpuExecutor, run_planned
from gpu.runtime.autotune import AUTOTUNE_ENV
from gpu.runtime.tiers import tiers_for, use_tiers

__all__ = ["run_on_adapter", "within_bounds", "time_stream", "gpu_section"]

TIMING_SHAPE = (1024, 1024)
FUSED_N = 256  # the matmul and reduce steps' [n, n] inputs
TIMING_RUNS = 5
FIRST_RUN_SHAPE = (64, 64)


@functools.cache
def _device() -> Any:
    """The default device, or None without an adapter (probed once)."""
    try:
        return default_device()
    except NoAdapterError:
        return None


def run_on_adapter(stream: Stream, device_name: str) -> Mapping[int, np.ndarray] | None:
    """The demo's ``gpu`` executor: ``stream`` planned for ``device_name`` and run on the
    adapter found, or None without one."""
    device = _device()
    if device is None:
        return None
    return run_planned(stream, device, profile_named(device_name))


def within_bounds(stream: Stream, expected: Mapping[int, np.ndarray],
                  got: Mapping[int, np.ndarray]) -> tuple[bool, str]:
    """The ``gpu`` executor against the oracle: within the chained WGSL accuracy bounds."""
    agreement = compare(stream, expected, got)
    return agreement.ok, agreement.summary().splitlines()[0]


def time_stream(stream: Stream, device: Any, runs: int = TIMING_RUNS) -> dict[str, tuple]:
    """Median milliseconds of ``runs`` executions, fused and unfused, and the dispatches of
    one run. Inputs are uploaded once (``stream`` must not write them in place); each run
    dispatches and waits, reading nothing back; a first run per mode compiles."""
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


def _new_expression(op: str) -> Stream:
    """``op(a*b + c)`` on ``FIRST_RUN_SHAPE``: a block no earlier part of the demo compiled."""
    from refimpl.frontend import Session

    s = Session(executor=None)
    a, b, c = (s.random(FIRST_RUN_SHAPE, seed=k) for k in range(3))
    s.sync(getattr(a * b + c, op)())
    return s.close()


def first_run_ms(stream: Stream, device: Any, mode: str) -> tuple[float, tuple[str, ...]]:
    """Milliseconds from planning ``stream`` to its first result on ``device`` (waited for,
    not read back) under ``FUSELAB_TIERS=mode``, and the tier of each block."""
    with use_tiers(mode):
        started = time.perf_counter()
        profile, executed = executed_steps(stream, device.profile())
        executor = GpuExecutor(stream, device, profile)
        executor.run(executed, read=False)
        spent = (time.perf_counter() - started) * 1e3
    return spent, tuple(t for r in executor.records for t in r.tiers)


def tiers_part(report: Any, device: Any) -> None:
    """The first run of a new expression with and without tier 0, on a device of its own
    (nothing compiled on it yet)."""
    device = request_device(adapter_name=device.name)
    tiers = tiers_for(device)
    warm_ms = tiers.warm(families=(("core", "math"),), widths=(4,)) * 1e3
    spec_ms, spec_tiers = first_run_ms(_new_expression("tanh"), device, "specialised-only")
    zero_ms, zero_tiers = first_run_ms(_new_expression("sin"), device, "both")
    tiers.wait_tier1()
    ready_ms = max(tiers.compiled_after.values(), default=0.0) * 1e3
    report.say(f"  first run of a new expression, {FIRST_RUN_SHAPE[0]}x{FIRST_RUN_SHAPE[1]} "
               f"(tier-0 kernel compiled once per device, ahead: {warm_ms:.1f} ms):")
    report.say(f"    specialised kernel compiled first: {spec_ms:.1f} ms; tier 0 at once: "
               f"{zero_ms:.1f} ms (tier 1 compiled behind it in {ready_ms:.1f} ms)")
    again_ms, again_tiers = first_run_ms(_new_expression("sin"), device, "both")
    report.check("tier 0 runs the first call, tier 1 the next once compiled",
                 (spec_tiers, zero_tiers, again_tiers) ==
                 (("tier 1",), ("tier 0",), ("tier 1",)))


def gpu_section(report: Any) -> None:
    """The seed's ``(a*b + c).exp()`` on the adapter found (SPEC §4)."""
    report.section("The kernels on this machine: (a * b + c).exp() as WGSL, fused vs unfused")
    device = _device()
    if device is None:
        report.say("    [skip] no WebGPU adapter (apt-get install mesa-vulkan-drivers "
                   "libvulkan1 for lavapipe)")
        return
    report.say(f"  adapter: {device.summary()}")
    with use_tiers("specialised-only"):
        _kernels_part(report, device)
    tiers_part(report, device)
    fused_steps_part(report, device)


def _step_paths(stream: Stream, device: Any, fallback: bool) -> tuple[float, int, Any]:
    """Median ms of ``TIMING_RUNS`` runs after a first, the dispatches of one run, and the
    values of the last, with the fused matmul/reduce kernels (or burn's fallbacks)."""
    profile, executed = executed_steps(stream, device.profile())
    times, executor, got = [], None, None
    for _ in range(TIMING_RUNS + 1):
        executor = GpuExecutor(stream, device, profile)
        executor.fused_matmul = executor.fused_reduce = not fallback
        started = time.perf_counter()
        got = executor.run(executed)
        times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times[1:]), sum(r.dispatches for r in executor.records), got


def fused_steps_part(report: Any, device: Any) -> None:
    """The seed's Matmul and Reduce steps: one fused kernel against burn's fallback."""
    import os

    report.say(f"  the fused matmul and reduce kernels ([{FUSED_N}, {FUSED_N}] f32, median of "
               f"{TIMING_RUNS} runs with read-back, burn's defaults):")
    saved = os.environ.get(AUTOTUNE_ENV)
    os.environ[AUTOTUNE_ENV] = "off"
    try:
        for name, stream, fallback_n in (
                ("(a @ b + c).exp()", matmul_add_exp(FUSED_N), 2),
                ("(a * b).sum_dim(1).exp()", mul_sum_dim_exp(FUSED_N), 3)):
            profile, executed = executed_steps(stream, device.profile())
            expected = Interpreter(stream, profile).run(executed)
            fused_ms, fused_n, got = _step_paths(stream, device, fallback=False)
            back_ms, back_n, back = _step_paths(stream, device, fallback=True)
            report.say(f"    {name}: fused {fused_ms:.2f} ms ({fused_n} dispatch), fallback "
                       f"{back_ms:.2f} ms ({back_n} dispatches)")
            report.check(f"{name}: one kernel, where the fallback launches {fallback_n}",
                         (fused_n, back_n) == (1, fallback_n))
            report.check(f"{name}: fused and fallback agree with the interpreter",
                         compare(stream, expected, got).ok and compare(stream, expected,
                                                                        back).ok)
    finally:
        if saved is None:
            os.environ.pop(AUTOTUNE_ENV, None)
        else:
            os.environ[AUTOTUNE_ENV] = saved


def _kernels_part(report: Any, device: Any) -> None:
    """The seed's fused kernel, its dispatches and timings (the specialised kernel)."""
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
