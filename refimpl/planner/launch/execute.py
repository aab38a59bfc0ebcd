"""The one walk over a plan's executed steps: which path each step takes, decided once.

burn counterpart: ``OperationQueue::execute`` (burn-fusion) walking the execution strategy,
with each optimization's ``execute`` (``burn-cubecl-fusion/src/optim/{elemwise,matmul,reduce,
reduce_broadcasted,nhwc_relayout}/optimization.rs``); notes §1 step 4–6, §8.

A ``Walk`` runs executed steps against one ``Backend``; ``execute_<fuser>`` holds burn's
decisions for each fuser (fused kernel or fallback, launch errors, ``autotune`` off) and the
backend says what running a launch means:

* ``LayoutBackend`` (here): launch planning only, no values. ``plan()`` fills each
  ``PlanStep``'s ``aliases`` and its blocks' ``width`` with it (``launch_plan_stream``);
* ``refimpl.interpreter.Interpreter``: numpy values through the kernel emulation (the oracle);
* ``gpu.runtime.executor.GpuExecutor``: WGSL kernels on a WebGPU device;
* ``gpu.runtime.executor.WgslListing``: every kernel the GPU would launch, emitted, none run.

Steps:

* unfused: each op through ``Backend.run_op``;
* ``ElementWise``: its trace, one block (``Backend.run_block``);
* ``Matmul``: the fused kernel when the backend has one (``fused_matmul``), burn's launch
  accepts it (``matmul_refused``) and the backend does (``matmul_refusal``: its form chosen,
  autotune's fallback refused), else the fallback: the matmul unfused, then the tail;
* ``Reduce``: likewise with ``fused_reduce``; the fallback runs the read trace, the
  reduction unfused, the write trace;
* ``ReduceBroadcasted``: the full trace as one kernel when the backend runs it
  (``broadcasted_refusal``: burn only does with autotune), else its per-block
  optimizations in order (burn without ``autotune``);
* ``NHWCRelayout``: the trace, then the module op unfused;
* a custom fuser's optimization: its ops one by one.

A step whose block covers no position while an output has elements (``UncoveredOutputs``)
runs op by op from the memory state before it; the records of launch planning keep burn's.

A backend decides (``matmul_refusal``, ``reduce_refusal``, ``broadcasted_refusal``) before the
walk commits the step: the fused launch is planned on a fork of memory that nothing has run
on yet, so an autotuner times its candidates on the step's inputs as they are (burn tunes in
``execute`` before the winner runs on the real context).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Protocol, Sequence

from refimpl.ir import OperationIr
from refimpl.planner.engine.trace import FuseTrace, Input
from refimpl.planner.launch.handles import Memory
from refimpl.planner.launch.launch import (
    ConcreteLayout, FusedContext, Launch, LaunchError, LaunchPlan, context_of, plan_launch,
)
from refimpl.planner.launch.layout import MatrixBatchLayout, matrix_batch_layout
from refimpl.planner.stream.plan import PlanBlock, PlanStep
from refimpl.stream import Stream

__all__ = ["StepRecord", "Backend", "StepRun", "Walk", "LayoutBackend", "FUSERS",
           "UncoveredOutputs", "check_covered", "matmul_refused", "launch_plan_stream",
           "matmul_fallback", "reduce_fallback", "broadcasted_fallback"]


class UncoveredOutputs(LaunchError):
    """A block whose reference shape is empty writes an output that holds elements.

    burn's ``output_is_compatible`` grows a size-1 reference dim to any other, a zero-size
    one included, and a size-1 dim of a later op broadcasts onto it: the block then has no
    position, and its size-1 outputs are never written. No kernel of that plan can compute
    them, so the walk (``refimpl.planner.launch.execute``) runs such a step's ops one by one
    instead (values only: the plan, its widths and aliases stay burn's)."""


def check_covered(n_pos: int, output_shapes: Sequence[tuple[int, ...]]) -> None:
    """Raise ``UncoveredOutputs`` when no position runs but an output has elements."""
    if n_pos == 0 and any(0 not in shape for shape in output_shapes):
        raise UncoveredOutputs("the block's reference shape is empty but an output is not "
                               "(burn grew a size-1 reference dim to a zero-size one)")


@dataclass(frozen=True, slots=True)
class StepRecord:
    """What one step launched: ``main`` (the optimization's main trace, whose blocks the plan
    reports), every launch that ran, and the path taken (``"fused"``, ``"fallback"``,
    ``"unfused"``)."""

    step: PlanStep
    path: str
    main: LaunchPlan | None = None
    launches: tuple[LaunchPlan, ...] = ()

    def aliases(self) -> tuple[tuple[int, int], ...]:
        return tuple(sorted(pair for launch in self.launches for pair in launch.aliases))


class Backend(Protocol):
    """What a walk runs on. ``memory`` holds the handles launch planning reads and writes."""

    memory: Memory
    fused_matmul: bool  # runs burn's fused matmul kernel (else its fallback)
    fused_reduce: bool  # runs burn's fused reduce kernel (else its fallback)

    def run_block(self, run: StepRun, trace: FuseTrace, launch: Launch) -> None:
        """Run an element-wise trace's one block over ``launch``'s bindings."""

    def matmul_refusal(self, run: StepRun, opt: Any, launch: Launch) -> str | None:
        """Why the backend runs this fused matmul launch through its fallback instead
        (autotune chose the fallback); ``None`` runs it fused, in the form the backend chose
        (asked before the step commits: nothing of it has run)."""

    def run_matmul(self, run: StepRun, opt: Any, launch: Launch) -> None:
        """The fused matmul kernel (with ``fused_matmul``, when ``matmul_refusal`` gave
        ``None``)."""

    def run_reduce(self, run: StepRun, opt: Any, launch: Launch,
                   ops: Sequence[OperationIr]) -> None:
        """The fused reduce kernel, read block then write block (with ``fused_reduce``)."""

    def reduce_refusal(self, run: StepRun, opt: Any, launch: Launch,
                       ops: Sequence[OperationIr]) -> str | None:
        """Why the backend runs this fused reduce launch through its fallback instead (its
        kernel cannot run it, or autotune chose the fallback); ``None`` runs it fused."""

    def broadcasted_refusal(self, run: StepRun, opt: Any, launch: Launch) -> str | None:
        """Likewise for a ReduceBroadcasted step's full trace (burn runs it only with
        autotune: a backend without it refuses, and the per-block fallbacks run)."""

    def run_reduce_broadcasted(self, run: StepRun, opt: Any, launch: Launch) -> None:
        """The full trace as one kernel (when ``broadcasted_refusal`` gave ``None``)."""

    def run_op(self, op: OperationIr) -> None:
        """One op as its own kernel (or none: views, drops)."""


class StepRun:
    """One fused step being executed: its context, its global ops, what it launched.
    ``planner`` plans each launch (``plan_launch`` unless the walk was given another)."""

    def __init__(self, backend: Backend, device: Any, context: FusedContext,
                 ops: list[OperationIr], planner: Callable[..., Launch] | None = None) -> None:
        self.backend, self.device, self.context, self.ops = backend, device, context, ops
        self.planner = planner or plan_launch
        self.path, self.main = "fused", None
        self.launches: list[LaunchPlan] = []

    @property
    def memory(self) -> Memory:
        return self.backend.memory

    def launch(self, trace: FuseTrace, memory: Memory | None = None,
               operands: tuple[int, int] | None = None) -> Launch:
        return self.planner(trace, self.context, memory or self.memory, self.device, operands)

    def commit(self, launch: Launch) -> None:
        self.launches.append(launch.plan)

    def run_trace(self, trace: FuseTrace) -> Launch:
        """Launch-plan an element-wise trace and run its block."""
        launch = self.launch(trace)
        self.commit(launch)
        if not launch.plan.skipped:
            self.backend.run_block(self, trace, launch)
        return launch

    def unfused(self, op: OperationIr) -> None:
        self.backend.run_op(op)

    def dry_run(self, trace: FuseTrace) -> LaunchPlan | None:
        try:
            return self.launch(trace, self.memory.fork()).plan
        except LaunchError:
            return None


# --- the fusers' paths ----------------------------------------------------------------------


def execute_elementwise(run: StepRun, opt: Any) -> None:
    run.main = run.run_trace(opt.trace).plan


def matmul_refused(launch: Launch, lhs: int, rhs: int) -> bool:
    """The fused matmul's launch errors (burn ``matmul_fused``): a highly permuted operand,
    or an output vector size of 1 while an operand is vectorized."""
    plan = launch.plan
    sizes = [plan.inputs[pos].vector_size for pos in (lhs, rhs)]
    if any(matrix_batch_layout(plan.inputs[pos].strides) is MatrixBatchLayout.HighlyPermuted
           for pos in (lhs, rhs)):
        return True
    layout = plan.configs[0].ref_layout if plan.configs else None
    out = 1
    if isinstance(layout, ConcreteLayout):
        bound = plan.inputs if isinstance(layout.arg, Input) else plan.outputs
        out = bound[layout.arg.pos].vector_size
    return out == 1 and any(size > 1 for size in sizes)


def matmul_fallback(run: StepRun, opt: Any) -> None:
    """``fused_matmul_fallback``: the matmul alone, then the tail as one kernel (also what
    autotune times against the fused forms)."""
    run.path = "fallback"
    run.unfused(run.ops[0])
    run.run_trace(opt.trace_fallback)


def execute_matmul(run: StepRun, opt: Any) -> None:
    if not run.backend.fused_matmul:
        matmul_fallback(run, opt)
        return
    fork = run.memory.fork()
    try:
        launch = run.launch(opt.trace, fork, (opt.matmul.op.lhs.id, opt.matmul.op.rhs.id))
    except LaunchError:
        launch = None
    run.main = None if launch is None else launch.plan
    if launch is None or (not launch.plan.skipped and (
            matmul_refused(launch, opt.matmul.lhs.pos, opt.matmul.rhs.pos) or
            run.backend.matmul_refusal(run, opt, launch) is not None)):
        matmul_fallback(run, opt)
        return
    run.memory.adopt(fork)
    run.commit(launch)
    if not launch.plan.skipped:
        run.backend.run_matmul(run, opt, launch)


def _reduce_fused(run: StepRun, opt: Any, ops: list[OperationIr]) -> bool:
    fork = run.memory.fork()
    try:
        launch = run.launch(opt.trace, fork)
    except LaunchError:
        return False
    if not launch.plan.skipped and \
            run.backend.reduce_refusal(run, opt, launch, ops) is not None:
        return False
    run.memory.adopt(fork)
    run.commit(launch)
    run.main = run.main or launch.plan
    if not launch.plan.skipped:
        run.backend.run_reduce(run, opt, launch, ops)
    return True


def _reduce_ops(run: StepRun, opt: Any, ops: list[OperationIr]) -> None:
    if run.backend.fused_reduce and _reduce_fused(run, opt, ops):
        return
    run.path = "fallback"
    if run.backend.fused_reduce:  # the plan reports the fused launch burn tried
        run.main = run.main or run.dry_run(opt.trace)
    reduce_fallback(run, opt, ops)


def reduce_fallback(run: StepRun, opt: Any, ops: Sequence[OperationIr]) -> None:
    """``ReduceOptimization``'s fallback: the read trace, the reduction unfused, the write
    trace (also what autotune times against the fused kernel)."""
    run.run_trace(opt.trace_read_fallback)
    run.unfused(ops[opt.num_ops_read])
    run.run_trace(opt.trace_write_fallback)


def execute_reduce(run: StepRun, opt: Any) -> None:
    _reduce_ops(run, opt, run.ops)


def _broadcasted_fused(run: StepRun, opt: Any) -> bool:
    """The full trace as one launch, when the backend runs it (``broadcasted_refusal``)."""
    fork = run.memory.fork()
    try:
        launch = run.launch(opt.main_trace(), fork)
    except LaunchError:
        return False
    if launch.plan.skipped or run.backend.broadcasted_refusal(run, opt, launch) is not None:
        return False
    run.memory.adopt(fork)
    run.commit(launch)
    run.main = launch.plan
    run.backend.run_reduce_broadcasted(run, opt, launch)
    return True


def execute_reduce_broadcasted(run: StepRun, opt: Any) -> None:
    if run.backend.fused_reduce and _broadcasted_fused(run, opt):
        return
    if run.backend.fused_reduce:
        run.main = run.dry_run(opt.main_trace())
    broadcasted_fallback(run, opt)


def broadcasted_fallback(run: StepRun, opt: Any) -> None:
    """``ReduceBroadcastedOptimization``'s fallback: its per-block optimizations in order."""
    start = 0
    for block in opt.fallbacks:
        ops = run.ops[start:start + block.len()]
        if block.name == "Reduce":
            main = run.main
            _reduce_ops(run, block, ops)
            run.main = main
        else:
            run.run_trace(block.trace)
        start += block.len()
    run.path = "fallback"


def execute_nhwc_relayout(run: StepRun, opt: Any) -> None:
    run.main = run.run_trace(opt.trace).plan
    run.unfused(run.ops[-1])


def execute_opaque(run: StepRun, opt: Any) -> None:
    """A custom fuser's optimization: its kernel is unknown, so its ops run one by one
    (same values, no launch to report)."""
    run.path = "unfused"
    for op in run.ops:
        run.unfused(op)


FUSERS: Mapping[str, Callable[[StepRun, Any], None]] = {
    "ElementWise": execute_elementwise,
    "Matmul": execute_matmul,
    "Reduce": execute_reduce,
    "ReduceBroadcasted": execute_reduce_broadcasted,
    "NHWCRelayout": execute_nhwc_relayout,
}


# --- the walk ---------------------------------------------------------------------------------


class Walk:
    """Executed steps run one by one on ``backend`` for the device profile ``device``.
    ``planner`` replaces ``plan_launch`` for every launch (same signature): the fuzzer's
    ``launch`` check wraps it to hold each launch against fastplan's launch planner."""

    def __init__(self, stream: Stream, backend: Backend, device: Any,
                 planner: Callable[..., Launch] | None = None) -> None:
        self.stream, self.backend, self.device = stream, backend, device
        self.planner = planner

    def execute(self, item: Any) -> StepRecord:
        """Run one executed step (``refimpl.planner.stream.queue.ExecutedStep``)."""
        step, backend = item.step, self.backend
        ops = [self.stream.items[i] for i in step.ops]
        if not step.fused:
            for op in ops:
                backend.run_op(op)
            return StepRecord(step, "unfused")
        context = context_of(item.segment, item.tensors_global2relative,
                             item.shapes_relative2global, item.scalars)
        run = StepRun(backend, self.device, context, ops, self.planner)
        before = backend.memory.fork()
        try:
            FUSERS.get(step.fuser, execute_opaque)(run, item.optimization)
        except UncoveredOutputs:  # no kernel of this plan writes them: op by op
            backend.memory.adopt(before)
            run.path = "unfused"
            for op in ops:
                backend.run_op(op)
        return StepRecord(step, run.path, run.main, tuple(run.launches))


class LayoutBackend:
    """Launch planning alone: layouts and buffer identities, no values, burn's decisions."""

    fused_matmul = True
    fused_reduce = True

    def __init__(self, stream: Stream) -> None:
        self.memory = Memory(with_values=False)
        self.memory.load_inputs(stream)

    def run_block(self, run: StepRun, trace: FuseTrace, launch: Launch) -> None:
        return

    def matmul_refusal(self, run: StepRun, opt: Any, launch: Launch) -> str | None:
        return None

    def run_matmul(self, run: StepRun, opt: Any, launch: Launch) -> None:
        return

    def run_reduce(self, run: StepRun, opt: Any, launch: Launch,
                   ops: Sequence[OperationIr]) -> None:
        return

    def reduce_refusal(self, run: StepRun, opt: Any, launch: Launch,
                       ops: Sequence[OperationIr]) -> str | None:
        return None

    def broadcasted_refusal(self, run: StepRun, opt: Any, launch: Launch) -> str | None:
        return "burn without autotune runs the per-block fallbacks"

    def run_reduce_broadcasted(self, run: StepRun, opt: Any, launch: Launch) -> None:
        return

    def run_op(self, op: OperationIr) -> None:
        self.memory.run_unfused(op)


def launch_plan_stream(stream: Stream, executed: Sequence[Any],
                       device: Any) -> tuple[PlanStep, ...]:
    """The executed steps' ``PlanStep``s with ``aliases`` and block ``width``s filled in."""
    walk = Walk(stream, LayoutBackend(stream), device)
    return tuple(_filled(walk.execute(item)) for item in executed)


def _filled(record: StepRecord) -> PlanStep:
    step = record.step
    if not step.fused:
        return step
    widths = record.main.widths() if record.main is not None else ()
    blocks = tuple(PlanBlock(block.ops, widths[i] if i < len(widths) else None)
                   for i, block in enumerate(step.blocks))
    return replace(step, aliases=record.aliases(), blocks=blocks)
