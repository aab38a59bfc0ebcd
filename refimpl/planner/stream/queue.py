"""The lazy operation queue of one stream: pending ops, their relative form, their execution.

burn counterpart: ``crates/burn-fusion/src/stream/queue/{base,execution}.rs``
(``OperationQueue::add``, ``execute``, ``drain_queue``, ``reset_relative``) and the ``Segment``
of ``stream/multi.rs`` (register → lazy process; drain → sync process).

The queue holds each pending op three ways: global (real ids and shapes), its index in
``Stream.items``, and relative (``to_relative`` with the queue's ``OperationConverter``). It is
the ``StreamSegment`` the ``Processor`` drives. Executing a plan walks its strategy's leaves in
order: an ``Optimization`` leaf becomes a fused ``PlanStep`` (inputs/outputs mapped from
relative to global ids through the converter, as burn's ``Context`` does at launch), an
``Operations`` leaf an unfused one. The executed ops (always a leading run of the queue) are
drained and the rest re-relativised from scratch.

``refimpl.planner.stream.processor.StreamPlanner`` drives a queue through a whole ``Stream``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from refimpl.ir import OperationIr
from refimpl.planner.log import NO_LOG, FusionLog, LogLevel
from refimpl.planner.search.strategy import (
    BlockOptimization,
    Operations,
    Optimization,
    leaves,
    max_relative_shape_id,
)
from refimpl.planner.stream.cache import ExecutionPlanStore
from refimpl.planner.stream.plan import PlanBlock, PlanStep
from refimpl.planner.stream.relative import OperationConverter, to_relative

__all__ = ["OperationQueue", "ExecutedStep"]


@dataclass(frozen=True, slots=True)
class ExecutedStep:
    """A step together with what launching it needs (burn's ``Context`` at that moment): the
    fuser's optimization (``None`` for an unfused step), the segment's global ops, and the
    converter's maps (global id → relative id, relative shape id → dim, stashed scalars).
    Read by launch planning and the interpreter (``refimpl.planner.launch.launch``)."""

    step: PlanStep
    optimization: Any
    segment: tuple[OperationIr, ...]
    tensors_global2relative: Mapping[int, int]
    shapes_relative2global: Mapping[int, int]
    scalars: tuple[Any, ...]


class OperationQueue:
    """Pending ops of one stream (burn ``OperationQueue``); also the processor's segment
    (burn ``Segment``)."""

    def __init__(self, log: FusionLog = NO_LOG):
        self.global_ops: list[OperationIr] = []
        self.indices: list[int] = []  # position of each pending op in Stream.items
        self.relative: list[OperationIr] = []
        self.shapes_assigned: list[int] = []  # shape ids handed out once op i was relativised
        self.converter = OperationConverter()
        self.steps: list[PlanStep] = []  # every step executed so far
        self.executed: list[ExecutedStep] = []  # the same steps, with their context
        self.log = log

    # --- StreamSegment -----------------------------------------------------------------------

    def operations(self) -> Sequence[OperationIr]:
        return self.relative

    def execute(self, plan_id: int, store: ExecutionPlanStore) -> None:
        """Run the leading ops a stored plan covers. A plan naming a relative shape id this
        queue's covered ops never assigned runs its ops unfused in order (burn #5400)."""
        optimization = store.get(plan_id).optimization
        covered = len(optimization.ordering)
        assigned = self.shapes_assigned[covered - 1] if covered else 1
        needed = max_relative_shape_id(optimization.strategy)
        if needed is not None and needed >= assigned:
            ordering = tuple(range(covered))
            optimization = BlockOptimization(Operations(ordering), ordering)
        self._run(optimization)

    def execute_unfused(self, optimization: BlockOptimization) -> None:
        self._run(optimization)

    # --- queue -------------------------------------------------------------------------------

    def add(self, index: int, operation: OperationIr) -> None:
        """Queue one op (``index`` = its position in ``Stream.items``)."""
        self.global_ops.append(operation)
        self.indices.append(index)
        self.relative.append(to_relative(operation, self.converter))
        self.shapes_assigned.append(self.converter.num_relative_shapes())

    def forget_steps(self) -> None:
        """Drop the executed steps (``steps``, ``executed``); the pending ops stay.

        A long-lived planner calls it once its runtime has launch-planned the steps it was
        given: the queue then holds its pending ops only, however many ops it planned."""
        self.steps = []
        self.executed = []

    def produces_pending(self, tensor_ids: Sequence[int]) -> bool:
        """Whether a pending op outputs any of the tensors (their handle doesn't exist yet)."""
        wanted = set(tensor_ids)
        for operation in self.global_ops:
            for tensor in operation.outputs():
                if tensor.id in wanted:
                    return True
        return False

    def _run(self, optimization: BlockOptimization) -> None:
        executed = 0
        for leaf in leaves(optimization.strategy):
            step = self._step(leaf)
            self.steps.append(step)
            self.executed.append(ExecutedStep(
                step, leaf.opt if isinstance(leaf, Optimization) else None,
                tuple(self.global_ops), dict(self.converter.tensors_global2relative),
                dict(self.converter.shapes_relative2global), tuple(self.converter.scalars)))
            if self.log.enabled(LogLevel.BASIC):
                self.log.write(f"[step] {step.kind} {step.fuser or ''} ops={list(step.ops)}")
            executed += leaf.opt.len() if isinstance(leaf, Optimization) else len(leaf.ordering)
        self._drain(executed)

    def _step(self, leaf: Optimization | Operations) -> PlanStep:
        ops = tuple(self.indices[pos] for pos in leaf.ordering)
        if isinstance(leaf, Operations):
            return PlanStep("unfused", ops)
        opt = leaf.opt
        return PlanStep(
            "fused",
            ops,
            fuser=opt.name,
            score=leaf.score,
            inputs=self._global_ids(opt.global_inputs()),
            outputs=self._global_ids(opt.global_outputs()),
            blocks=tuple(PlanBlock(tuple(names)) for names in opt.block_op_names()),
        )

    def _global_ids(self, relative_ids: Sequence[int]) -> tuple[int, ...]:
        return tuple(self.converter.tensors_relative2global[rid].id for rid in relative_ids)

    def _drain(self, count: int) -> None:
        """Forget the first ``count`` ops and re-relativise the rest (burn ``drain_queue`` +
        ``reset_relative``)."""
        del self.global_ops[:count]
        del self.indices[:count]
        self.relative = []
        self.shapes_assigned = []
        self.converter.clear()
        for operation in self.global_ops:
            self.relative.append(to_relative(operation, self.converter))
            self.shapes_assigned.append(self.converter.num_relative_shapes())
