"""The interpreter: a planned stream executed on numpy, kernel by kernel, as burn would.

burn counterpart: the cubecl side of each optimization's ``execute``
(``optim/{elemwise,matmul,reduce,reduce_broadcasted,nhwc_relayout}/optimization.rs``); the
walk that decides each step's path is ``refimpl.planner.launch.execute`` (notes §1 step 4–6,
§8).

``Interpreter`` is that walk's numpy backend, the oracle of every other backend. Every step
runs against a simulated memory (``refimpl.planner.launch.handles.Memory``):

* unfused ops run as their own kernel (``NUMPY_IMPL`` values, burn-cubecl's output layouts:
  views share buffers);
* fused blocks run through the kernel emulation (``refimpl.fused_kernel``), reading and
  writing the real buffers: an in-place output really overwrites its input's buffer;
* the fused matmul: the matmul (``NUMPY_IMPL``) fills the epilogue's local, then the block
  runs; the fused reduce: the read block computes the reduction's input per element, the
  reduction (``NUMPY_IMPL``) fills the write block's local, then the write block runs.

``with_values=False`` walks the same steps without values (the walk's layout backend).
A synced tensor's value is captured when its producing step finishes (tensors never change
after that while they are held).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from refimpl.fused_kernel import FUSE_TYPE_DTYPE, run_block, shared_values
from refimpl.ir import OperationIr, Sync
from refimpl.planner import executed_steps
from refimpl.planner.engine.trace import FuseTrace
from refimpl.planner.launch.execute import StepRecord, StepRun, Walk, launch_plan_stream
from refimpl.planner.launch.handles import Memory
from refimpl.planner.launch.launch import Launch, LaunchError
from refimpl.semantics import NUMPY_IMPL, scalar_value
from refimpl.stream import Stream

__all__ = [
    "StepRecord",
    "Interpreter",
    "executed_steps",
    "run_planned",
    "launch_plan_stream",
]


class Interpreter:
    """The walk's numpy backend: executed steps run against one ``Memory``."""

    fused_matmul = True
    fused_reduce = True

    def __init__(self, stream: Stream, device: Any, with_values: bool = True) -> None:
        self.stream, self.device = stream, device
        self.memory = Memory(with_values)
        self.memory.load_inputs(stream)
        self.wanted = {tid for item in stream.items if isinstance(item, Sync)
                       for tid in item.tensors}
        self.synced: dict[int, np.ndarray] = {}
        self.records: list[StepRecord] = []
        self.walk = Walk(stream, self, device)
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
        with np.errstate(all="ignore"):
            self.records.append(self.walk.execute(item))
        self._capture([t.id for i in item.step.ops for t in self.stream.items[i].outputs()])

    def _capture(self, ids: Sequence[int]) -> None:
        if not self.memory.with_values:
            return
        for tid in ids:
            if tid in self.wanted and tid in self.memory.handles:
                self.synced[tid] = self.memory.value(tid)

    # --- the backend ---------------------------------------------------------------------------

    def _scalars(self, run: StepRun, trace: FuseTrace) -> tuple[np.ndarray, ...]:
        values = []
        for ty, placeholder in trace.resources.scalars:
            value, dtype = run.context.scalars[placeholder]
            values.append(np.asarray(scalar_value(value, dtype)).astype(
                FUSE_TYPE_DTYPE[ty].numpy))
        return tuple(values)

    def run_block(self, run: StepRun, trace: FuseTrace, launch: Launch) -> None:
        if self.memory.with_values:
            run_block(launch.plan.configs[0], launch, self.memory, self._scalars(run, trace))

    def matmul_refusal(self, run: StepRun, opt: Any, launch: Launch) -> str | None:
        return None  # the oracle always emulates the fused kernel

    def run_matmul(self, run: StepRun, opt: Any, launch: Launch) -> None:
        if not self.memory.with_values:
            return
        op, (lhs, rhs) = run.ops[0], (opt.matmul.lhs.pos, opt.matmul.rhs.pos)
        env = {op.desc.lhs.id: self.memory.read(launch.input_handles[lhs]),
               op.desc.rhs.id: self.memory.read(launch.input_handles[rhs])}
        product = NUMPY_IMPL[op.name](op.desc, env)
        run_block(launch.plan.configs[0], launch, self.memory, self._scalars(run, opt.trace),
                  seeds={opt.matmul.out: product})

    def run_reduce(self, run: StepRun, opt: Any, launch: Launch,
                   ops: Sequence[OperationIr]) -> None:
        if not self.memory.with_values:
            return
        scalars = self._scalars(run, opt.trace)
        read_config, write_config = launch.plan.configs
        shared = shared_values(run_block(read_config, launch, self.memory, scalars))
        op = ops[opt.num_ops_read]
        values = shared[opt.reduce.input.pos].reshape(op.desc.input.shape)
        reduced = NUMPY_IMPL[op.name](op.desc, {op.desc.input.id: values})
        run_block(write_config, launch, self.memory, scalars,
                  seeds={opt.reduce.output: reduced}, shared=shared)

    def reduce_refusal(self, run: StepRun, opt: Any, launch: Launch,
                       ops: Sequence[OperationIr]) -> str | None:
        return None  # the oracle always emulates the fused kernel

    def broadcasted_refusal(self, run: StepRun, opt: Any, launch: Launch) -> str | None:
        return "the oracle runs burn's default: the per-block fallbacks"

    def run_reduce_broadcasted(self, run: StepRun, opt: Any, launch: Launch) -> None:
        raise LaunchError("the interpreter never runs a ReduceBroadcasted full trace")

    def run_op(self, op: OperationIr) -> None:
        self.memory.run_unfused(op)


# --- entry points -----------------------------------------------------------------------------


def run_planned(stream: Stream, device: Any = "metal") -> dict[int, np.ndarray]:
    """Plan ``stream`` with refimpl's planner and interpret it: the synced tensors by id."""
    profile, executed = executed_steps(stream, device)
    return Interpreter(stream, profile).run(executed)

