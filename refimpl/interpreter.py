"""The interpreter: executes a planned stream on numpy, kernel by kernel, as burn would.

burn counterpart: ``OperationQueue::execute`` walking the execution strategy (burn-fusion) with
each optimization's ``execute`` (``optim/{elemwise,matmul,reduce,reduce_broadcasted,
nhwc_relayout}/optimization.rs``) on the cubecl side; notes §1 step 4–6, §8.

Every step of the plan runs against a simulated memory (``refimpl.handles.Memory``):

* unfused steps run each op as its own kernel (``NUMPY_IMPL`` values, burn-cubecl's output
  layouts: views share buffers);
* fused steps are launch-planned (``refimpl.planner.launch.plan_launch``) and their blocks run
  through the kernel emulation (``refimpl.fused_kernel``), reading and writing the real
  buffers: an in-place output really overwrites its input's buffer;
* ``ElementWise``: one block. ``Matmul``: the matmul (``NUMPY_IMPL``) fills the epilogue's
  local, then the block runs; a highly permuted operand, or an output vector size of 1 with
  wider operands, makes burn fall back: the matmul unfused, then the fallback trace.
  ``Reduce``: the read block computes the reduction's input per element, the reduction
  (``NUMPY_IMPL``) fills the write block's local, then the write block runs; a launch error
  falls back to read trace → unfused reduction → write trace. ``ReduceBroadcasted``: its
  per-block optimizations in order (burn without ``autotune`` runs only that path).
  ``NHWCRelayout``: the trace (its output written channels-last), then the module op unfused.

``with_values=False`` walks the same steps without values: launch planning only. That is how
``launch_plan_stream`` fills each ``PlanStep``'s ``aliases`` and its blocks' ``width``.
A synced tensor's value is captured when its producing step finishes (tensors never change
after that while they are held).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from refimpl.fused_kernel import UncoveredOutputs
from refimpl.handles import Memory
from refimpl.ir import OperationIr, Sync
from refimpl.planner.launch import (
    ConcreteLayout, FusedContext, Launch, LaunchError, LaunchPlan, context_of, plan_launch,
)
from refimpl.planner.layout import MatrixBatchLayout, matrix_batch_layout
from refimpl.planner.plan import PlanBlock, PlanStep
from refimpl.planner.trace import FuseTrace, Input
from refimpl.semantics import NUMPY_IMPL, scalar_value
from refimpl.stream import Stream

__all__ = [
    "StepRecord",
    "Interpreter",
    "executed_steps",
    "run_planned",
    "launch_plan_stream",
]


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


def executed_steps(stream: Stream, device: Any = "metal") -> tuple[Any, tuple]:
    """Plan ``stream``: the device profile and the executed steps with their contexts."""
    from refimpl.planner import StreamPlanner, resolve_device
    from refimpl.planner.registry import FusionRegistry

    profile = resolve_device(device)
    planner = StreamPlanner(FusionRegistry().fusers(profile))
    planner.run(stream)
    return profile, tuple(planner.queue.executed)


class Interpreter:
    """Runs executed steps against one ``Memory``."""

    def __init__(self, stream: Stream, device: Any, with_values: bool = True) -> None:
        self.stream, self.device = stream, device
        self.memory = Memory(with_values)
        self.memory.load_inputs(stream)
        self.wanted = {tid for item in stream.items if isinstance(item, Sync)
                       for tid in item.tensors}
        self.synced: dict[int, np.ndarray] = {}
        self.records: list[StepRecord] = []
        self._capture(sorted(stream.inputs))

    # --- driving ---------------------------------------------------------------------------

    def run(self, executed: Sequence[Any]) -> dict[int, np.ndarray]:
        """Execute every step; the synced tensors by id."""
        for item in executed:
            self.execute(item)
        missing = sorted(self.wanted - set(self.synced)) if self.memory.with_values else []
        if missing:
            raise LaunchError(f"synced tensors {missing} were never materialised")
        return dict(self.synced)

    def execute(self, item: Any) -> None:
        step = item.step
        ops = [self.stream.items[i] for i in step.ops]
        with np.errstate(all="ignore"):
            if not step.fused:
                for op in ops:
                    self.memory.run_unfused(op)
                self.records.append(StepRecord(step, "unfused"))
            else:
                context = context_of(item.segment, item.tensors_global2relative,
                                     item.shapes_relative2global, item.scalars)
                run, before = _Step(self, context, ops), self.memory.fork()
                try:
                    _FUSERS.get(step.fuser, _opaque)(run, item.optimization)
                except UncoveredOutputs:  # no kernel of this plan writes them: op by op
                    self.memory.adopt(before)
                    run.path = "unfused"
                    for op in ops:
                        self.memory.run_unfused(op)
                self.records.append(StepRecord(step, run.path, run.main, tuple(run.launches)))
        self._capture([t.id for op in ops for t in op.outputs()])

    def _capture(self, ids: Sequence[int]) -> None:
        if not self.memory.with_values:
            return
        for tid in ids:
            if tid in self.wanted and tid in self.memory.handles:
                self.synced[tid] = self.memory.value(tid)


class _Step:
    """One fused step being executed: its context, its global ops, what it launched."""

    def __init__(self, interp: Interpreter, context: FusedContext,
                 ops: list[OperationIr]) -> None:
        self.interp, self.context, self.ops = interp, context, ops
        self.memory, self.device = interp.memory, interp.device
        self.path, self.main = "fused", None
        self.launches: list[LaunchPlan] = []

    @property
    def with_values(self) -> bool:
        return self.memory.with_values

    def scalars(self, trace: FuseTrace) -> tuple[np.ndarray, ...]:
        from refimpl.fused_kernel import FUSE_TYPE_DTYPE

        values = []
        for ty, placeholder in trace.resources.scalars:
            value, dtype = self.context.scalars[placeholder]
            values.append(np.asarray(scalar_value(value, dtype)).astype(
                FUSE_TYPE_DTYPE[ty].numpy))
        return tuple(values)

    def launch(self, trace: FuseTrace, memory: Memory | None = None,
               operands: tuple[int, int] | None = None) -> Launch:
        launch = plan_launch(trace, self.context, memory or self.memory, self.device, operands)
        return launch

    def commit(self, launch: Launch) -> None:
        self.launches.append(launch.plan)

    def run_trace(self, trace: FuseTrace) -> Launch:
        """Launch an element-wise trace and run its block."""
        launch = self.launch(trace)
        self.commit(launch)
        if self.with_values and not launch.plan.skipped:
            from refimpl.fused_kernel import run_block

            run_block(launch.plan.configs[0], launch, self.memory, self.scalars(trace))
        return launch

    def unfused(self, op: OperationIr) -> None:
        self.memory.run_unfused(op)

    def dry_run(self, trace: FuseTrace) -> LaunchPlan | None:
        try:
            return self.launch(trace, self.memory.fork()).plan
        except LaunchError:
            return None


def _elementwise(run: _Step, opt: Any) -> None:
    run.main = run.run_trace(opt.trace).plan


def _matmul_refused(launch: Launch, lhs: int, rhs: int) -> bool:
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


def _matmul(run: _Step, opt: Any) -> None:
    fork = run.memory.fork()
    operands = (opt.matmul.op.lhs.id, opt.matmul.op.rhs.id)
    try:
        launch = run.launch(opt.trace, fork, operands)
    except LaunchError:
        launch = None
    run.main = None if launch is None else launch.plan
    lhs, rhs = opt.matmul.lhs.pos, opt.matmul.rhs.pos
    if launch is None or (not launch.plan.skipped and _matmul_refused(launch, lhs, rhs)):
        run.path = "fallback"
        run.unfused(run.ops[0])
        run.run_trace(opt.trace_fallback)
        return
    run.memory.adopt(fork)
    run.commit(launch)
    if run.with_values and not launch.plan.skipped:
        from refimpl.fused_kernel import run_block

        op = run.ops[0]
        env = {op.desc.lhs.id: run.memory.read(launch.input_handles[lhs]),
               op.desc.rhs.id: run.memory.read(launch.input_handles[rhs])}
        product = NUMPY_IMPL[op.name](op.desc, env)
        run_block(launch.plan.configs[0], launch, run.memory, run.scalars(opt.trace),
                  seeds={opt.matmul.out: product})


def _reduce_fused(run: _Step, opt: Any, ops: list[OperationIr]) -> bool:
    fork = run.memory.fork()
    try:
        launch = run.launch(opt.trace, fork)
    except LaunchError:
        return False
    run.memory.adopt(fork)
    run.commit(launch)
    run.main = run.main or launch.plan
    if not run.with_values or launch.plan.skipped:
        return True
    from refimpl.fused_kernel import run_block, shared_values

    scalars = run.scalars(opt.trace)
    read_config, write_config = launch.plan.configs
    shared = shared_values(run_block(read_config, launch, run.memory, scalars))
    op = ops[opt.num_ops_read]
    values = shared[opt.reduce.input.pos].reshape(op.desc.input.shape)
    reduced = NUMPY_IMPL[op.name](op.desc, {op.desc.input.id: values})
    run_block(write_config, launch, run.memory, scalars, seeds={opt.reduce.output: reduced},
              shared=shared)
    return True


def _reduce_ops(run: _Step, opt: Any, ops: list[OperationIr]) -> None:
    if _reduce_fused(run, opt, ops):
        return
    run.path = "fallback"
    run.main = run.main or run.dry_run(opt.trace)
    run.run_trace(opt.trace_read_fallback)
    run.unfused(ops[opt.num_ops_read])
    run.run_trace(opt.trace_write_fallback)


def _reduce(run: _Step, opt: Any) -> None:
    _reduce_ops(run, opt, run.ops)


def _reduce_broadcasted(run: _Step, opt: Any) -> None:
    run.main = run.dry_run(opt.main_trace())
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


def _nhwc_relayout(run: _Step, opt: Any) -> None:
    run.main = run.run_trace(opt.trace).plan
    run.unfused(run.ops[-1])


def _opaque(run: _Step, opt: Any) -> None:
    """A custom fuser's optimization: its kernel is unknown, so its ops run one by one
    (same values, no launch to report)."""
    run.path = "unfused"
    for op in run.ops:
        run.unfused(op)


_FUSERS: Mapping[str, Callable[[_Step, Any], None]] = {
    "ElementWise": _elementwise,
    "Matmul": _matmul,
    "Reduce": _reduce,
    "ReduceBroadcasted": _reduce_broadcasted,
    "NHWCRelayout": _nhwc_relayout,
}


# --- entry points -----------------------------------------------------------------------------


def run_planned(stream: Stream, device: Any = "metal") -> dict[int, np.ndarray]:
    """Plan ``stream`` with refimpl's planner and interpret it: the synced tensors by id."""
    profile, executed = executed_steps(stream, device)
    return Interpreter(stream, profile).run(executed)


def launch_plan_stream(stream: Stream, executed: Sequence[Any],
                       device: Any) -> tuple[PlanStep, ...]:
    """The executed steps' ``PlanStep``s with ``aliases`` and block ``width``s filled in."""
    interp = Interpreter(stream, device, with_values=False)
    interp.run(executed)
    return tuple(_filled(record) for record in interp.records)


def _filled(record: StepRecord) -> PlanStep:
    step = record.step
    if not step.fused:
        return step
    widths = record.main.widths() if record.main is not None else ()
    blocks = tuple(PlanBlock(block.ops, widths[i] if i < len(widths) else None)
                   for i, block in enumerate(step.blocks))
    return replace(step, aliases=record.aliases(), blocks=blocks)


def _interp_runner(stream: Stream, args: argparse.Namespace) -> dict[int, np.ndarray]:
    from refimpl.cli import tracked

    profile, executed = executed_steps(stream, getattr(args, "device", None) or "metal")
    return Interpreter(stream, profile).run(tracked(args, executed, "interp: steps"))


def _register() -> None:
    from refimpl.cli import BACKENDS, register_backend

    if "interp" not in BACKENDS:
        register_backend("interp", _interp_runner)


_register()
