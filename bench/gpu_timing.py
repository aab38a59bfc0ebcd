"""GPU-side timing: a run's dispatches recorded, then replayed many times in one command buffer
and timed on the device; and first-call (cold) timing of a new expression.

burn counterpart: none (burn-bench times through the backend's ``sync``; cubecl's
``TimingMethod::Device`` reads timestamp queries like ``time_dispatches`` here).

It serves the benchmarks (``bench/elementwise.py``), not the library: ``gpu`` only offers the
hook it records through (``Runtime.observers``) and the binding it replays (``Runtime.prepare``).

Why not time ``GpuExecutor.run`` with a clock: the executor submits every dispatch in its own
command buffer and the only wait wgpu-py 0.32 offers is a readback (``queue.read_buffer``,
about 0.3 ms round trip on the H200; ``on_submitted_work_done_sync`` raises), so a wall clock
measures Python and the driver, not the kernel. Instead:

* ``recording(runtime)`` collects the ``gpu.runtime.server.Dispatched`` of every dispatch a run
  submits (the run itself executes normally: its results stay correct);
* ``time_dispatches(device, dispatches)`` encodes ``reps`` compute passes in ONE command
  buffer, each pass ``iterations`` times the whole sequence (``passes="one"``) or every
  dispatch in a pass of its own (``passes="each"``, how the executor submits), with pass
  timestamps (``timestamp-query``) at the start and end of each rep; a rep's time divided by
  ``iterations`` is one iteration. Without the feature it falls back to a wall clock around
  each rep's submission and a 4-byte ``read_buffer`` wait (``method="wall"``, which includes
  that round trip). Timestamps are nanoseconds (wgpu normalises Vulkan ticks on resolve); the
  command buffer's wall time is kept beside them as a check;
* ``prepared(runtime, source, buffers, workgroups)`` compiles and binds a kernel without
  submitting it (hand-written comparison kernels), ``with_workgroup_size(runtime, d, size)``
  re-binds an element-wise dispatch at another ``WG_SIZE`` (its guard is the position count
  in its metadata, so a larger grid is safe; not for kernels that use their workgroup count);
* ``first_run(record, device)`` times a new expression from recording its stream to its first
  result on the device: recording, planning (fastplan's compiled planner when built, else
  refimpl's), launch planning, WGSL emission (a fresh kernel cache), pipeline creation and
  the run, with the pipelines it compiled and the tier that ran each block; ``tiers`` sets
  ``FUSELAB_TIERS`` for the call (``gpu.runtime.tiers``).
"""

from __future__ import annotations

import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

from gpu.runtime.device import GpuDevice
from gpu.runtime.server import Dispatched, Runtime

__all__ = ["DeviceTiming", "FirstRun", "first_run", "has_timestamps", "planned", "prepared",
           "recording", "tiers_env", "time_dispatches", "wait", "wall_seconds",
           "with_workgroup_size"]

_QUERY_LIMIT = 4096  # wgpu's QUERY_SET_MAX_QUERIES
_RESOLVE_ALIGN = 256  # QUERY_RESOLVE_BUFFER_ALIGNMENT


@dataclass(frozen=True, slots=True)
class DeviceTiming:
    """Seconds per iteration of each timed rep, and how they were taken."""

    method: str  # "timestamp" (pass timestamps) or "wall" (clock around submit + wait)
    passes: str  # "one": a rep is one pass; "each": one pass per dispatch
    iterations: int  # iterations per rep
    dispatches: int  # dispatches per iteration
    reps: tuple[float, ...]  # seconds per iteration, one per rep
    wall_s: float  # wall time of the timed submission(s), for checking the timestamps

    @property
    def median_s(self) -> float:
        return statistics.median(self.reps)

    @property
    def median_us(self) -> float:
        return self.median_s * 1e6

    @property
    def min_us(self) -> float:
        return min(self.reps) * 1e6

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "passes": self.passes, "iterations": self.iterations,
                "dispatches_per_iteration": self.dispatches, "timed_reps": len(self.reps),
                "median_us": self.median_us, "min_us": self.min_us,
                "max_us": max(self.reps) * 1e6, "wall_s": self.wall_s,
                "reps_us": [r * 1e6 for r in self.reps]}


# --- recording ----------------------------------------------------------------------------------


@contextmanager
def recording(runtime: Runtime) -> Iterator[list[Dispatched]]:
    """Collect every dispatch ``runtime`` submits inside the block, in order."""
    seen: list[Dispatched] = []
    runtime.observers.append(seen.append)
    try:
        yield seen
    finally:
        runtime.observers.remove(seen.append)


def prepared(runtime: Runtime, source: str, buffers: Sequence[Any], workgroups: int,
             workgroup_size: int | None = None) -> Dispatched:
    """``source`` compiled (cached) and bound to ``buffers``, not submitted."""
    size = workgroup_size if workgroup_size is not None else runtime.workgroup_size
    return runtime.prepare(source, buffers, workgroups, workgroup_size=size)


def with_workgroup_size(runtime: Runtime, dispatched: Dispatched, size: int) -> Dispatched:
    """An element-wise dispatch at ``WG_SIZE = size``, covering at least the same
    invocations (the kernel's own guard stops the extra ones)."""
    invocations = dispatched.workgroups * dispatched.workgroup_size
    return prepared(runtime, dispatched.source, dispatched.buffers, -(-invocations // size),
                    size)


# --- timing -------------------------------------------------------------------------------------


def has_timestamps(device: GpuDevice) -> bool:
    """True when ``device`` was created with the ``timestamp-query`` feature."""
    return "timestamp-query" in device.features


def wait(device: GpuDevice) -> None:
    """Block until submitted work is done (a 4-byte readback)."""
    device.runtime.finish()


def _encode(compute: Any, dispatched: Dispatched) -> None:
    compute.set_pipeline(dispatched.pipeline)
    compute.set_bind_group(0, dispatched.bind_group)
    compute.dispatch_workgroups(*dispatched.grid)


def _encode_rep(encoder: Any, dispatches: Sequence[Dispatched], iterations: int, passes: str,
                stamps: tuple[Any, int] | None) -> None:
    """One rep: ``iterations`` times the sequence, in one pass or one pass per dispatch; with
    ``stamps = (query_set, first index)`` the rep's first pass writes the start and its last
    pass the end."""
    sequence = [d for _ in range(iterations) for d in dispatches]
    groups = [sequence] if passes == "one" else [[d] for d in sequence]
    for k, group in enumerate(groups):
        writes = None
        if stamps is not None and k in (0, len(groups) - 1):
            query_set, first = stamps
            writes = {"query_set": query_set}
            if k == 0:
                writes["beginning_of_pass_write_index"] = first
            if k == len(groups) - 1:
                writes["end_of_pass_write_index"] = first + 1
        compute = encoder.begin_compute_pass(timestamp_writes=writes)
        for dispatched in group:
            _encode(compute, dispatched)
        compute.end()


def _submit_reps(device: GpuDevice, dispatches: Sequence[Dispatched], iterations: int,
                 reps: int, passes: str, query_set: Any = None) -> Any:
    encoder = device.wgpu_device.create_command_encoder()
    for rep in range(reps):
        stamps = None if query_set is None else (query_set, 2 * rep)
        _encode_rep(encoder, dispatches, iterations, passes, stamps)
    resolved = None
    if query_set is not None:
        import wgpu

        size = -(-2 * reps * 8 // _RESOLVE_ALIGN) * _RESOLVE_ALIGN
        resolved = device.wgpu_device.create_buffer(
            size=size, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
        encoder.resolve_query_set(query_set, 0, 2 * reps, resolved, 0)
    device.queue.submit([encoder.finish()])
    return resolved


def _timestamped(device: GpuDevice, dispatches: Sequence[Dispatched], iterations: int,
                 reps: int, passes: str) -> tuple[list[float], float]:
    import numpy as np

    query_set = device.wgpu_device.create_query_set(type="timestamp", count=2 * reps)
    started = time.perf_counter()
    resolved = _submit_reps(device, dispatches, iterations, reps, passes, query_set)
    raw = device.queue.read_buffer(resolved, 0, 2 * reps * 8)
    wall = time.perf_counter() - started
    ticks = np.frombuffer(raw, dtype=np.uint64).reshape(reps, 2).astype(np.int64)
    spans = (ticks[:, 1] - ticks[:, 0]) * 1e-9 / iterations
    return [float(s) for s in spans], wall


def _wall(device: GpuDevice, dispatches: Sequence[Dispatched], iterations: int, reps: int,
          passes: str) -> tuple[list[float], float]:
    spans, total = [], 0.0
    for _ in range(reps):
        started = time.perf_counter()
        _submit_reps(device, dispatches, iterations, 1, passes)
        wait(device)
        spent = time.perf_counter() - started
        total += spent
        spans.append(spent / iterations)
    return spans, total


def time_dispatches(device: GpuDevice, dispatches: Sequence[Dispatched], *,
                    iterations: int = 10, reps: int = 20, warmup: int = 2,
                    passes: str = "one", method: str = "auto") -> DeviceTiming:
    """Seconds per iteration of ``dispatches`` (one iteration = the whole sequence once),
    ``reps`` timed reps of ``iterations`` each after ``warmup`` untimed reps.

    ``method``: ``"timestamp"``, ``"wall"`` or ``"auto"`` (timestamps when the device has
    them); ``passes``: ``"one"`` or ``"each"`` (see the module docstring)."""
    if not dispatches or iterations < 1 or reps < 1:
        raise ValueError("time_dispatches needs dispatches, iterations >= 1 and reps >= 1")
    if passes not in ("one", "each"):
        raise ValueError(f"passes must be 'one' or 'each', not {passes!r}")
    if method == "auto":
        method = "timestamp" if has_timestamps(device) else "wall"
    if method == "timestamp" and (not has_timestamps(device) or 2 * reps > _QUERY_LIMIT):
        raise ValueError(f"timestamp timing needs the timestamp-query feature and at most "
                         f"{_QUERY_LIMIT // 2} reps")
    if warmup:
        _submit_reps(device, dispatches, iterations, warmup, passes)
        wait(device)
    measure = _timestamped if method == "timestamp" else _wall
    spans, wall = measure(device, dispatches, iterations, reps, passes)
    return DeviceTiming(method, passes, iterations, len(dispatches), tuple(spans), wall)


# --- first calls --------------------------------------------------------------------------------


def wall_seconds(fn: Callable[[], Any]) -> tuple[float, Any]:
    """``fn()`` timed by the wall clock: (seconds, its value)."""
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


@dataclass(frozen=True, slots=True)
class FirstRun:
    """A new expression's first run: total seconds, the phases, what it compiled."""

    seconds: float
    phases: Mapping[str, float] = field(default_factory=dict)
    compiled: int = 0  # pipelines created
    emitted: int = 0  # fused kernels emitted (kernel-cache misses)
    dispatches: int = 0
    tiers: tuple[str, ...] = ()  # the tier of each fused block run
    planner: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "ms": self.seconds * 1e3, "phases_ms":
                {k: v * 1e3 for k, v in self.phases.items()}, "pipelines_compiled":
                self.compiled, "kernels_emitted": self.emitted, "dispatches": self.dispatches,
                "tiers": list(self.tiers), "planner": self.planner}


def tiers_env(mode: str | None):
    """``FUSELAB_TIERS=mode`` inside a ``with`` block (``gpu.runtime.tiers.use_tiers``)."""
    from gpu.runtime.tiers import use_tiers

    return use_tiers(mode)


def planned(stream: Any, profile: Any) -> tuple[tuple, str]:
    """The executed steps of ``stream`` from fastplan's compiled planner when it is built
    (the same steps as refimpl's), else from refimpl's; and which planner made them."""
    import fastplan

    if not fastplan.COMPILED:
        from refimpl.interpreter import executed_steps

        return executed_steps(stream, profile)[1], "refimpl"
    from fastplan.fusers.registry import FusionRegistry
    from fastplan.stream.processor import StreamPlanner

    planner = StreamPlanner(FusionRegistry().fusers(profile))
    planner.run(stream)
    return tuple(planner.queue.executed), "fastplan"


def first_run(record: Callable[[], Any], device: GpuDevice,
              uploaded: Mapping[int, Any] | None = None, *, fused: bool = True,
              tiers: str | None = None) -> FirstRun:
    """Time ``record()`` (builds a new expression's ``Stream``) through its first result on
    ``device``: planning, launch planning, WGSL emission into a fresh kernel cache, pipeline
    creation, the dispatches, and a wait until they are done (nothing is read back).

    ``uploaded`` maps input tensor ids to buffers already on the device (what a framework's
    first call starts from); without it the inputs are uploaded inside the timed region.
    ``fused=False`` runs every op as its own kernel instead (no planning)."""
    with tiers_env(tiers):
        return _first_run(record, device, uploaded, fused)


def _first_run(record: Callable[[], Any], device: GpuDevice, uploaded: Mapping[int, Any] | None,
               fused: bool) -> FirstRun:
    from gpu.runtime.executor import GpuExecutor
    from gpu.runtime.fused_launch import KernelCache

    rt = device.runtime
    kernels = KernelCache()
    compiled, dispatched = rt.compiled, rt.dispatched
    phases: dict[str, float] = {}
    started = time.perf_counter()
    stream = record()
    mark = time.perf_counter()
    phases["record"] = mark - started
    planner = ""
    if fused:
        profile = device.profile()
        executed, planner = planned(stream, profile)
        phases["plan"] = time.perf_counter() - mark
        mark = time.perf_counter()
        executor = GpuExecutor(stream, device, profile, kernels, uploaded)
        executor.run(executed, read=False)
    else:
        executor = GpuExecutor(stream, device, None, kernels, uploaded)
        executor.run_unfused(read=False)
    end = time.perf_counter()
    phases["run"] = end - mark
    return FirstRun(end - started, phases, rt.compiled - compiled, kernels.misses,
                    rt.dispatched - dispatched,
                    tuple(t for r in executor.records for t in r.tiers), planner)
