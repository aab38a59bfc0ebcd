"""``GpuExecutor``: a planned stream run on a WebGPU device, kernel by kernel, as burn would.

burn counterpart: ``OperationQueue::execute`` (burn-fusion) with each optimization's
``execute`` on cubecl-wgpu: ``optim/elemwise/optimization.rs`` (``ElemwiseRunner``: one
``elemwise_fuse`` launch), and the fallback paths of ``optim/matmul/optimization.rs``
(``fused_matmul_fallback``: the matmul alone, then the tail as one element-wise kernel),
``optim/reduce/optimization.rs`` (read trace, unfused reduce, write trace),
``optim/reduce_broadcasted`` (its per-block optimizations) and ``optim/nhwc_relayout``.

It is a backend of the one walk (``refimpl.planner.launch.execute.Walk``), as the interpreter is,
with a simulated ``Memory`` (``with_values=False``: layouts and buffer identities only) and the
same launch planning, so both make the same decisions; where the interpreter computes values
on numpy, this one dispatches kernels on the buffers ``Memory`` names:

* unfused steps: each op through ``gpu.runtime.unfused`` (its own kernel), except the metadata ops
  burn-cubecl never launches (swap_dims, permute, expand, a reshape or an aligned slice
  that keep the buffer: ``refimpl.planner.launch.handles.unfused_view``); ``Init`` uploads, ``Drop``
  releases;
* fused steps: each element-wise trace on the tier ``gpu.runtime.tiers`` picks: the generic
  tier-0 kernel at once, or the kernel ``gpu.codegen.emit`` prints for its ``FuseBlockConfig``
  (``gpu.runtime.fused_launch``: the kernel cache ``KERNEL_CACHE`` keyed by ``config_id`` and
  the binding signature, never by shape; the metadata words); an in-place output is the
  input's own buffer; fused outputs come from the device's ``gpu.runtime.pool``;
* Matmul: the fused matmul kernel (``gpu.runtime.fused_matmul``: the form ``matmul_form``
  names, else autotune's pick, ``gpu.runtime.autotune_matmul``, or burn's default with
  autotune off, chosen before the walk commits the step; ``fallback`` sends the step to the
  walk's fallback; a form the device cannot run falls back in ``fused_matmul``);
* Reduce, ReduceBroadcasted: the fused reduce kernel or the one-launch ReduceBroadcasted kernel
  (``gpu.runtime.reduce_runner``: routine forced, autotuned or burn's default), or the
  fallback when it refuses the launch;
* NHWCRelayout: the trace, then the module op (its standalone kernel,
  ``gpu.codegen.module_ops``).

A synced tensor is snapshotted when its producing step ends: its snapshot reads the tensor's
own buffer, which is *pinned* (kept from the pool) until the run ends; only a later step that
touches the buffer (reads or writes a tensor in it, so may write it in place) first copies it
away. The snapshots are read back once at the end; ``run(read=False)`` waits and drops them. ``records`` counts dispatches and compilations per step and names
the tier of each block.
``WgslListing`` is the same walk's listing backend: every kernel emitted, none run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from refimpl.data import contiguous_strides, logical_values, strided_buffer
from refimpl.fused_kernel import FUSE_TYPE_DTYPE
from refimpl.ir import OperationIr, Sync
from refimpl.ops import OpKind
from refimpl.planner import executed_steps
from refimpl.planner.engine.trace import FuseTrace
from refimpl.planner.launch.execute import StepRecord, StepRun, Walk
from refimpl.planner.launch.handles import Handle, Memory, unfused_view
from refimpl.planner.launch.launch import Launch, LaunchPlan, config_id
from refimpl.planner.stream.plan import PlanStep
from refimpl.semantics import scalar_value
from refimpl.stream import Stream
from gpu.codegen.emit import FusedKernel
from gpu.codegen.render import scalar_word
from gpu.errors import UnsupportedOpError
from gpu.runtime.autotune import autotune_enabled
from gpu.runtime.autotune_matmul import choose_matmul_form
from gpu.runtime.autotune_reduce import FALLBACK
from gpu.runtime.buffers import STORAGE_NUMPY, DeviceTensor
from gpu.runtime.device import GpuDevice, default_device
from gpu.runtime.fused_launch import KERNEL_CACHE, KernelCache, launch_words, signature_of
from gpu.runtime.fused_matmul import MATMUL_KERNELS, default_kernel, run_fused_matmul
from gpu.runtime.pool import pool_for
from gpu.runtime.reduce_launch import REDUCE_KERNEL_CACHE, reduce_spec
from gpu.runtime.reduce_runner import ReduceRunner, listing_refusal
from gpu.runtime.tiers import tiers_for
from gpu.runtime.unfused import execute as execute_op, launch as launch_kernel

__all__ = ["KernelCache", "KERNEL_CACHE", "GpuStepRecord", "GpuExecutor", "WgslListing",
           "run_planned", "run_unfused", "signature_of", "launch_words", "scalar_words"]


# --- records ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GpuStepRecord:
    """What one step ran: the path (``"fused"``, ``"fallback"``, ``"unfused"``), its launch
    plans, the fused kernels it dispatched and how many dispatches and compilations it cost."""

    step: PlanStep | None
    path: str
    launches: tuple[LaunchPlan, ...]
    kernels: tuple[FusedKernel, ...]
    dispatches: int
    compiled: int
    tiers: tuple[str, ...] = ()  # per block run: "tier 0" or "tier 1"

    def config_ids(self) -> tuple[str, ...]:
        return tuple(config_id(kernel.config) for kernel in self.kernels)

    def aliases(self) -> tuple[tuple[int, int], ...]:
        return tuple(sorted(pair for launch in self.launches for pair in launch.aliases))


# --- the executor -------------------------------------------------------------------------------


class GpuExecutor:
    """Runs executed steps of one stream on one device (buffers named by a ``Memory``)."""

    def __init__(self, stream: Stream, device: GpuDevice | None = None, profile: Any = None,
                 kernels: KernelCache = KERNEL_CACHE,
                 uploaded: Mapping[int, Any] | None = None) -> None:
        self.stream = stream
        self.kernels = kernels
        self._attach(device, profile)
        self.memory = Memory(with_values=False)
        self.memory.load_inputs(stream)
        self.buffers: dict[int, Any] = {}
        for tensor_id in sorted(stream.inputs):
            handle = self.memory.handles.get(tensor_id)
            if handle is not None:
                given = None if uploaded is None else uploaded.get(tensor_id)
                self.buffers[handle.buffer] = given if given is not None else \
                    self._upload(tensor_id, handle)
        self.wanted = {tid for item in stream.items if isinstance(item, Sync)
                       for tid in item.tensors}
        self.snapshots: dict[int, DeviceTensor] = {}
        self._pinned: dict[int, list[int]] = {}  # Memory buffer → snapshots reading it
        self.records: list[GpuStepRecord] = []
        self.walk = Walk(stream, self, self.profile)
        self.reducer = ReduceRunner(self)
        self._matmul_forms: dict[int, str] = {}  # by id(launch): the form matmul_refusal chose
        self._kernels: list[FusedKernel] = []
        self._tiers: list[str] = []
        self._capture(sorted(stream.inputs))

    def _attach(self, device: GpuDevice | None, profile: Any) -> None:
        self.device = device if device is not None else default_device()
        self.profile = profile if profile is not None else self.device.profile()
        self.rt = self.device.runtime
        self.pool = pool_for(self.rt)
        self._check_dtypes()

    def _check_dtypes(self) -> None:
        for tensor_id, spec in sorted(self.stream.inputs.items()):
            self.device.check_dtype(spec.dtype, f"input {tensor_id}")
        for index, item in enumerate(self.stream.items):
            if isinstance(item, OperationIr):
                for tensor in item.nodes():
                    self.device.check_dtype(tensor.dtype, f"op {index} ({item.name}) tensor "
                                                          f"{tensor.id}")

    def _upload(self, tensor_id: int, handle: Handle) -> Any:
        """An input's buffer laid out with its strides (sentinels in the gaps)."""
        spec = self.stream.inputs[tensor_id]
        values = logical_values(spec, tensor_id)
        dense = spec.strides is None or tuple(spec.strides) == contiguous_strides(spec.shape)
        flat = values.reshape(-1) if dense else strided_buffer(values, spec.strides)
        return self.rt.upload_buffer(flat, spec.dtype, f"input {tensor_id}")

    # --- driving ----------------------------------------------------------------------------

    def run(self, executed: Sequence[Any], read: bool = True) -> dict[int, np.ndarray]:
        """Execute every step; the synced tensors by id (``read=False``: wait, read nothing)."""
        for item in executed:
            self.execute(item)
        return self._done(read)

    def run_unfused(self, read: bool = True) -> dict[int, np.ndarray]:
        """Every op of the stream as its own kernel, in stream order (fusion off)."""
        for item in self.stream.items:
            if isinstance(item, OperationIr):
                self._step([item], lambda: self._unfused_step(item))
        return self._done(read)

    def _done(self, read: bool) -> dict[int, np.ndarray]:
        """The results (or a wait); then the pooled buffers go back to the pool (every synced
        tensor is a snapshot by now) and the tier-1 compiles the run asked for start."""
        found = self.results() if read else self._finish()
        if not read:
            self.snapshots.clear()
        self._pinned.clear()
        for key in [k for k, b in self.buffers.items() if self.pool.owns(b)]:
            self.pool.give(self.buffers.pop(key))
        tiers_for(self.device).start()  # the tier-1 compiles this run asked for
        return found

    def _unfused_step(self, op: OperationIr) -> StepRecord:
        self.run_op(op)
        return StepRecord(None, "unfused")

    def execute(self, item: Any) -> None:
        """Run one executed step (``refimpl.planner.stream.queue.ExecutedStep``)."""
        ops = [self.stream.items[i] for i in item.step.ops]
        self._step(ops, lambda: self.walk.execute(item))

    def _counters(self) -> tuple[int, int]:
        return self.rt.dispatched, self.rt.compiled

    def _step(self, ops: list, body: Any) -> None:
        self._unpin(ops)
        dispatched, compiled = self._counters()
        self._kernels, self._tiers = [], []
        record = body()
        after = self._counters()
        self.records.append(GpuStepRecord(
            record.step, record.path, record.launches, tuple(self._kernels),
            after[0] - dispatched, after[1] - compiled, tuple(self._tiers)))
        self._capture([t.id for op in ops for t in op.outputs()])
        self._release()

    def results(self) -> dict[int, np.ndarray]:
        """Read back every synced tensor captured so far."""
        missing = sorted(self.wanted - set(self.snapshots))
        if missing:
            raise UnsupportedOpError(f"synced tensors {missing} were never materialised")
        return {tid: self.rt.download(tensor) for tid, tensor in sorted(self.snapshots.items())}

    def _finish(self) -> dict[int, np.ndarray]:
        self.rt.finish()
        return {}

    # --- buffers ----------------------------------------------------------------------------

    def buffer(self, handle: Handle) -> Any:
        """The GPU buffer behind a ``Memory`` buffer (created on first use)."""
        found = self.buffers.get(handle.buffer)
        if found is None:
            self.rt.properties.check_dtype(handle.dtype, "fused output")
            nbytes = self.memory.sizes[handle.buffer] * STORAGE_NUMPY[handle.dtype].itemsize
            found = self.pool.take(nbytes, "fused output")
            self.buffers[handle.buffer] = found
        return found

    def device_tensor(self, handle: Handle) -> DeviceTensor:
        return DeviceTensor(self.buffer(handle), handle.dtype, handle.shape, handle.strides,
                            handle.offset)

    def _capture(self, ids: Sequence[int]) -> None:
        """Snapshot wanted tensors now: a view of their buffer, pinned until the run ends."""
        for tid in ids:
            handle = self.memory.handles.get(tid)
            if tid in self.wanted and handle is not None:
                self.snapshots[tid] = self.device_tensor(handle)
                self._pinned.setdefault(handle.buffer, []).append(tid)

    def _unpin(self, ops: list) -> None:
        """Copy the snapshots of every pinned buffer the ops touch (an in-place write could
        change it) onto buffers of their own."""
        for op in ops:
            for tensor in op.nodes():
                handle = self.memory.handles.get(tensor.id)
                if handle is not None and handle.buffer in self._pinned:
                    for tid in self._pinned.pop(handle.buffer):
                        self.snapshots[tid] = self.rt.copy(self.snapshots[tid])

    def _release(self) -> None:
        """Forget GPU buffers no live handle uses any more (pooled ones go back; pinned ones
        stay until the run ends)."""
        live = {h.buffer for h in self.memory.handles.values()} | set(self._pinned)
        for buffer in [b for b in self.buffers if b not in live]:
            self.pool.give(self.buffers.pop(buffer))

    def launch_block(self, kernel: FusedKernel, launch: Launch, scalars: Sequence[int]) -> None:
        """Dispatch an emitted block over its launch's buffers."""
        words, n_pos = launch_words(kernel, launch, scalars)
        buffers = [self.buffer((launch.input_handles if side == "in" else
                                launch.output_handles)[k]) for side, k in kernel.bindings]
        launch_kernel(self.rt, kernel.source, buffers, words, n_pos)

    # --- the walk's backend ---------------------------------------------------------------

    fused_matmul = True  # Matmul steps run the fused matmul kernel
    fused_reduce = True  # Reduce steps: gpu.runtime.reduce_runner (fused or fallback)
    # The fused matmul's form: a name (``"fallback"``: the walk's), None (autotuned, or
    # burn's default with ``FUSELAB_AUTOTUNE=off``), or a chooser called per launch before
    # the step commits, ``(executor, run, opt, launch, scalars) -> name`` (an autotuner
    # timing ``gpu.runtime.autotune_matmul.matmul_candidates``).
    matmul_form: Any = None
    matmul_kernels = MATMUL_KERNELS

    def run_block(self, run: StepRun, trace: FuseTrace, launch: Launch) -> None:
        """Run the block on the tier ``gpu.runtime.tiers`` picks."""
        self._tiers.append(tiers_for(self.device).run_block(self, launch,
                                                            scalar_words(run, trace)))

    def run_specialised(self, launch: Launch, scalars: Sequence[int]) -> None:
        """Emit (or find) the block's kernel and dispatch it over the launch's buffers."""
        kernel = emitted_kernel(self.kernels, launch)
        self.ran(kernel)
        self.launch_block(kernel, launch, scalars)

    def ran(self, kernel: FusedKernel) -> None:
        """Record a specialised kernel the current step dispatched."""
        self._kernels.append(kernel)

    def matmul_refusal(self, run: StepRun, opt: Any, launch: Launch) -> str | None:
        """The form ``launch`` runs, chosen (tuned) before the walk commits the step; the
        fallback is refused, so the walk runs its own."""
        form = self.matmul_form
        if form is None and autotune_enabled():
            form = choose_matmul_form
        if callable(form):
            form = form(self, run, opt, launch, scalar_words(run, opt.trace))
        if form == FALLBACK:
            return "the fallback was chosen"
        self._matmul_forms[id(launch)] = form
        return None

    def run_matmul(self, run: StepRun, opt: Any, launch: Launch) -> None:
        """The matmul and its epilogue as one kernel (or its fallback, see ``fused_matmul``)."""
        form = self._matmul_forms.pop(id(launch), None)
        self._kernels.append(run_fused_matmul(self, run, opt, launch,
                                              scalar_words(run, opt.trace), form))

    def reduce_refusal(self, run: StepRun, opt: Any, launch: Launch,
                       ops: Sequence[OperationIr]) -> str | None:
        return self.reducer.refusal(run, opt, launch, scalar_words(run, opt.trace), ops)

    def run_reduce(self, run: StepRun, opt: Any, launch: Launch,
                   ops: Sequence[OperationIr]) -> None:
        self.reducer.run(launch)

    def broadcasted_refusal(self, run: StepRun, opt: Any, launch: Launch) -> str | None:
        return self.reducer.broadcasted_refusal(run, opt, launch,
                                                scalar_words(run, opt.main_trace()))

    def run_reduce_broadcasted(self, run: StepRun, opt: Any, launch: Launch) -> None:
        self.reducer.run(launch)

    # --- unfused ops --------------------------------------------------------------------------

    def run_op(self, op: OperationIr) -> None:
        """One op as its own kernel (or none: metadata views, drops)."""
        kind = op.op.kind
        if kind is OpKind.DROP:
            self.memory.run_unfused(op)
            return
        if kind is OpKind.INIT:
            self.memory.run_unfused(op)
            handle = self.memory.handle(op.desc.out.id)
            self.buffers[handle.buffer] = self._upload(op.desc.out.id, handle)
            return
        handles = {t.id: self.memory.handle(t.id) for t in op.inputs()}
        inputs = [self.device_tensor(handles[t.id]) for t in op.inputs()]
        is_view = unfused_view(op, handles) is not None
        self.memory.run_unfused(op)
        if is_view:
            return
        handle = self.memory.handle(op.desc.out.id)
        result = execute_op(self.device, op, inputs)
        if result.strides != handle.strides or handle.offset:
            raise UnsupportedOpError(f"{op.name}: the kernel's output layout differs from "
                                     "burn-cubecl's")
        self.buffers[handle.buffer] = result.buffer


class WgslListing:
    """The walk's listing backend: plans every step and emits every fused kernel
    (``emitted``: ``(step index, kernel)``), with no device; dispatches and uploads nothing."""

    fused_matmul = True  # the kernels the GPU backend would launch without autotune:
    fused_reduce = True  # burn's default matmul form and the fused reduce's ``unit`` routine
    matmul_kernels = MATMUL_KERNELS

    def __init__(self, stream: Stream, profile: Any,
                 kernels: KernelCache | None = None) -> None:
        self.stream, self.profile = stream, profile
        self.kernels = kernels if kernels is not None else KernelCache()
        self.memory = Memory(with_values=False)
        self.memory.load_inputs(stream)
        self.walk = Walk(stream, self, profile)
        self.records: list[StepRecord] = []
        self.emitted: list[tuple[int, FusedKernel]] = []

    def run(self, executed: Sequence[Any]) -> dict[int, np.ndarray]:
        for item in executed:
            self.records.append(self.walk.execute(item))
        return {}

    def run_block(self, run: StepRun, trace: FuseTrace, launch: Launch) -> None:
        self.emitted.append((len(self.records), emitted_kernel(self.kernels, launch)))

    def matmul_refusal(self, run: StepRun, opt: Any, launch: Launch) -> str | None:
        return None

    def run_matmul(self, run: StepRun, opt: Any, launch: Launch) -> None:
        self.emitted.append((len(self.records), default_kernel(self.matmul_kernels, opt, launch)))

    def reduce_refusal(self, run: StepRun, opt: Any, launch: Launch,
                       ops: Sequence[OperationIr]) -> str | None:
        return listing_refusal(opt, launch)

    def broadcasted_refusal(self, run: StepRun, opt: Any, launch: Launch) -> str | None:
        return "without autotune: the per-block fallbacks"

    def run_reduce(self, run: StepRun, opt: Any, launch: Launch,
                   ops: Sequence[OperationIr]) -> None:
        self.emitted.append((len(self.records), REDUCE_KERNEL_CACHE.kernel(
            reduce_spec(opt, launch, "unit"))))

    def run_op(self, op: OperationIr) -> None:
        self.memory.run_unfused(op)


def emitted_kernel(kernels: KernelCache, launch: Launch) -> FusedKernel:
    """The kernel of an element-wise launch's one block (emitted once per config and
    binding signature)."""
    if len(launch.plan.configs) != 1:
        raise UnsupportedOpError("a multi-block trace needs the fused reduce kernel")
    return kernels.kernel(launch.plan.configs[0], signature_of(launch))


def scalar_words(run: StepRun, trace: FuseTrace) -> list[int]:
    """The trace's scalars as the interpreter computes them, one word each."""
    words = []
    for ty, placeholder in trace.resources.scalars:
        value, dtype = run.context.scalars[placeholder]
        target = FUSE_TYPE_DTYPE[ty]
        words.append(scalar_word(np.asarray(scalar_value(value, dtype)).astype(
            target.numpy), target))
    return words


# --- entry points -------------------------------------------------------------------------------


def run_planned(stream: Stream, device: GpuDevice | None = None,
                profile: Any = None) -> dict[int, np.ndarray]:
    """Plan ``stream`` with refimpl's planner for ``profile`` (default: the device's own) and
    run it on ``device``: the synced tensors by id."""
    device = device if device is not None else default_device()
    profile, executed = executed_steps(stream, profile if profile is not None else
                                       device.profile())
    return GpuExecutor(stream, device, profile).run(executed)


def run_unfused(stream: Stream, device: GpuDevice | None = None) -> dict[int, np.ndarray]:
    """Run ``stream`` with fusion off: one kernel per op."""
    return GpuExecutor(stream, device).run_unfused()

